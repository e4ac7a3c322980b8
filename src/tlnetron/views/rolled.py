"""The rolled view (``granularity="rolled"``): repeated passes merged.

One node per TorchLens Layer (rolled identity), named by the layer label (``log[name]``
returns the Layer). A layer's output edge is typed only when every pass agrees on shape and
dtype; otherwise it stays untyped and ``shape_variants`` / ``dtype_variants`` say what each
pass saw. Layers are ordered by their first pass; an edge from a layer that first ran at or
after its consumer is recurrent feedback: it is disclosed in the consumer's ``recurrence``
attribute and never drawn (a drawn feedback edge would be a cycle the checker rejects).
What a layer is (function, parameters, module path, source location) is its first pass's;
what its passes saw (shapes, dtypes, edges, time, FLOPs, bytes) comes from every kept pass,
so the reader may read repeated passes briefly (``read_trace(brief_repeats=True)``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from .._generated.vocab import Granularity, NodeAttr, NodeRole
from ..ir.drawing import PNode, Projection, PValue, loose_type, shape_text, tensor_type
from ..ir.facts import passes_facts, sum_facts
from ..ir.trace import ROLE_INPUT, ROLE_OP, ROLE_OUTPUT, OpIR, TraceIR
from ..options import ExportOptions
from ..progress import every_share
from ..read.buffers import apply_buffer_policy
from ..words.docs import UNTYPED_PASSES, recurrence_text, variants_text
from .nodes import op_node, op_value, root_ranks
from .structures import root_graph

__all__ = ["project_rolled"]


def _passes_by_layer(ops: tuple[OpIR, ...]) -> tuple[dict[str, str], dict[str, list[OpIR]], dict[str, int]]:
    """Op name -> its layer; layer -> its kept passes; layer -> position of its first pass."""
    layer_of: dict[str, str] = {}
    passes: dict[str, list[OpIR]] = {}
    first: dict[str, int] = {}
    for pos, op in enumerate(ops):
        layer_of[op.name] = op.layer
        if op.layer not in passes:
            passes[op.layer] = []
            first[op.layer] = pos
        passes[op.layer].append(op)
    return layer_of, passes, first


def _head(ir: TraceIR, layer: str, ops: list[OpIR]) -> OpIR:
    """What the layer is: its first pass's function, parameters, module path and source."""
    head = ops[0]
    if head.pass_index == 1 or head.role != ROLE_OP:
        return head
    # The buffer policy hid the first pass; repeats may have been read briefly.
    first_pass = next(op for op in ir.ops if op.layer == layer)
    return replace(
        head,
        function=first_pass.function,
        module_calls=first_pass.module_calls,
        module_path=first_pass.module_path,
        num_params=first_pass.num_params,
        params=first_pass.params,
        multi_output_index=first_pass.multi_output_index,
        location=first_pass.location,
    )


def _edges(
    layer: str, ops: list[OpIR], layer_of: dict[str, str], first: dict[str, int]
) -> tuple[dict[str, str], dict[str, list[int]]]:
    """Parent layers drawn (-> the port of the first edge), and feedback sources (-> passes)."""
    drawn: dict[str, str] = {}
    feedback: dict[str, list[int]] = {}
    for op in ops:
        for parent, port in zip(op.parents, op.ports):
            src = layer_of.get(parent, parent)
            if first.get(src, -1) < first[layer]:
                drawn.setdefault(src, port)
            else:
                feedback.setdefault(src, []).append(op.pass_index)
    return drawn, feedback


def _layer_node(
    head: OpIR, layer: str, ops: list[OpIR], drawn: dict[str, str], feedback: dict[str, list[int]]
) -> tuple[PNode, PValue]:
    """A layer of several passes (or of one renamed pass): one node, typed when its passes agree."""
    shapes: list[str] = []
    dtypes: list[str] = []
    agree = True
    for op in ops:
        if op.shape != head.shape or op.dtype != head.dtype:
            # Some pass differs from the first: compare what the sidebar would say.
            shapes = [shape_text(op.shape) for op in ops]
            dtypes = [str(op.dtype) for op in ops]
            agree = len(set(shapes)) == 1 and len(set(dtypes)) == 1
            break
    ty = tensor_type(head.shape, head.dtype) if agree else None
    loose = None if ty is not None else loose_type([op.shape for op in ops], [op.dtype for op in ops])
    value = PValue(layer, ty, loose=loose)
    merged = replace(head, name=layer, parents=tuple(drawn), ports=tuple(drawn.values()), num_passes=1)
    n = len(ops)
    node = op_node(merged, tuple(drawn), tuple(drawn.values()), facts=passes_facts(ops, n), passes=n)
    attrs = dict(node.attributes)
    if n > 1:
        attrs[NodeAttr.PASSES] = n
    if not agree:
        attrs.pop(NodeAttr.UNTYPED_OUTPUT, None)
        if len(set(shapes)) > 1:
            attrs[NodeAttr.SHAPE_VARIANTS] = variants_text(shapes)
        if len(set(dtypes)) > 1:
            attrs[NodeAttr.DTYPE_VARIANTS] = variants_text(dtypes)
        attrs[NodeAttr.UNTYPED_OUTPUT] = UNTYPED_PASSES
    if feedback:
        attrs[NodeAttr.RECURRENCE] = recurrence_text(feedback)
    role = node.role if node.role == NodeRole.BUFFER else (NodeRole.LAYER if n > 1 else NodeRole.OP)
    return replace(node, role=role, attributes=tuple(sorted(attrs.items()))), value


def project_rolled(
    ir: TraceIR, options: ExportOptions, progress: Callable[[int, int], None] | None = None
) -> Projection:
    """Project ``ir`` with one node per layer, after the buffer policy (``progress(layers, of)`` as it goes)."""
    show_buffers = options.show_buffers
    kept = apply_buffer_policy(ir.ops, show_buffers)
    layer_of, passes, first = _passes_by_layer(kept.ops)
    values: dict[str, PValue] = {}
    nodes: list[PNode] = []
    inputs: list[OpIR] = []
    outputs: list[OpIR] = []
    for layer, ops in every_share(passes.items(), len(passes), progress):
        head = _head(ir, layer, ops)
        if head.role == ROLE_INPUT:
            inputs.append(replace(head, name=layer))
            values[layer] = op_value(replace(head, name=layer))
        elif len(ops) == 1 and head.role != ROLE_OUTPUT and head.name == layer:
            # A single-pass layer is its one op: the op view's node, parents named by layer
            # (a single pass has no feedback, since every parent ran before it).
            value = values[layer] = op_value(head)
            nodes.append(
                op_node(head, tuple(layer_of.get(p, p) for p in head.parents), head.ports, typed=value.type is not None)
            )
        elif head.role == ROLE_OUTPUT:
            outputs.extend(replace(op, parents=tuple(layer_of.get(p, p) for p in op.parents)) for op in ops)
        else:
            drawn, feedback = _edges(layer, ops, layer_of, first)
            node, values[layer] = _layer_node(head, layer, ops, drawn, feedback)
            nodes.append(node)
    leaf = [n.facts for n in nodes if n.role in (NodeRole.OP, NodeRole.LAYER)]
    graph = root_graph(
        ir.model_class,
        nodes,
        {n.name: values[n.name] for n in nodes},
        inputs,
        outputs,
        {op.name: values[op.name] for op in inputs},
    )
    return Projection(
        granularity=Granularity.ROLLED,
        graph=graph,
        show_buffers=show_buffers,
        hidden_buffers=kept.hidden_buffers,
        hidden_ops=kept.hidden_ops,
        root_ranks=root_ranks(graph),
        totals=sum_facts(leaf, inclusive=False),  # sums values only: each layer's passes count is not read
    )

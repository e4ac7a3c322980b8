"""Stage 2, the rolled view (``granularity="rolled"``): repeated passes merged.

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

from ._generated.vocab import Granularity, NodeAttr, NodeRole
from .buffers import apply_buffer_policy
from .facts import passes_facts, sum_facts
from .ir import ROLE_INPUT, ROLE_OP, ROLE_OUTPUT, OpIR, TraceIR
from .nodes import op_node, op_value, root_ranks
from .options import ExportOptions
from .progress import every_share
from .structures import root_graph
from .projection import PNode, Projection, PValue, loose_type, shape_text, tensor_type

__all__ = ["project_rolled"]


def _runs(values: list[str]) -> str:
    """``passes 1-3: a; pass 4: b`` (consecutive passes with the same value grouped)."""
    parts: list[str] = []
    start = 0
    for i in range(1, len(values) + 1):
        if i == len(values) or values[i] != values[start]:
            span = f"pass {start + 1}" if i - start == 1 else f"passes {start + 1}-{i}"
            parts.append(f"{span}: {values[start]}")
            start = i
    return "; ".join(parts)


def _passes_text(passes: list[int]) -> str:
    if not passes:
        return ""
    out: list[str] = []
    start = prev = passes[0]
    for p in [*passes[1:], None]:
        if p is not None and p == prev + 1:
            prev = p
            continue
        out.append(str(start) if start == prev else f"{start}-{prev}")
        if p is not None:
            start = prev = p
    return ("pass " if len(passes) == 1 else "passes ") + ", ".join(out)


def project_rolled(ir: TraceIR, options: ExportOptions, progress: Callable[[int, int], None] | None = None) -> Projection:
    """Project ``ir`` with one node per layer, after the buffer policy (``progress(layers, of)`` as it goes)."""
    show_buffers = options.show_buffers
    kept = apply_buffer_policy(ir.ops, show_buffers)
    layer_of: dict[str, str] = {}
    passes: dict[str, list[OpIR]] = {}
    first: dict[str, int] = {}
    for pos, op in enumerate(kept.ops):
        layer_of[op.name] = op.layer
        if op.layer not in passes:
            passes[op.layer] = []
            first[op.layer] = pos
        passes[op.layer].append(op)

    values: dict[str, PValue] = {}
    nodes: list[PNode] = []
    inputs: list[OpIR] = []
    outputs: list[OpIR] = []
    for layer, ops in every_share(passes.items(), len(passes), progress):
        head = ops[0]
        if head.pass_index != 1 and head.role == ROLE_OP:
            # The buffer policy hid the first pass. What a layer is (function, parameters,
            # module path, source) is still its first pass's: repeats may be read briefly.
            first_pass = next(op for op in ir.ops if op.layer == layer)
            head = replace(
                head,
                function=first_pass.function,
                module_calls=first_pass.module_calls,
                module_path=first_pass.module_path,
                num_params=first_pass.num_params,
                params=first_pass.params,
                multi_output_index=first_pass.multi_output_index,
                location=first_pass.location,
            )
        if head.role == ROLE_INPUT:
            inputs.append(replace(head, name=layer))
            values[layer] = op_value(replace(head, name=layer))
            continue
        if len(ops) == 1 and head.role != ROLE_OUTPUT and head.name == layer:
            # A single-pass layer is its one op: the op view's node, parents named by layer
            # (a single pass has no feedback, since every parent ran before it).
            value = op_value(head)
            values[layer] = value
            parents = tuple(layer_of.get(p, p) for p in head.parents)
            nodes.append(op_node(head, parents, head.ports, typed=value.type is not None))
            continue
        drawn: dict[str, str] = {}
        feedback: dict[str, list[int]] = {}
        for op in ops:
            for parent, port in zip(op.parents, op.ports):
                src = layer_of.get(parent, parent)
                if first.get(src, -1) < first[layer]:
                    drawn.setdefault(src, port)
                else:
                    feedback.setdefault(src, []).append(op.pass_index)
        if head.role == ROLE_OUTPUT:
            for op in ops:
                outputs.append(replace(op, parents=tuple(layer_of.get(p, p) for p in op.parents)))
            continue
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
        values[layer] = PValue(layer, ty, loose=loose)
        merged = replace(head, name=layer, parents=tuple(drawn), ports=tuple(drawn.values()), num_passes=1)
        n = len(ops)
        facts = passes_facts(ops, n)
        node = op_node(merged, tuple(drawn), tuple(drawn.values()), facts=facts, passes=n)
        attrs = dict(node.attributes)
        if n > 1:
            attrs[NodeAttr.PASSES] = n
        if not agree:
            attrs.pop(NodeAttr.UNTYPED_OUTPUT, None)
            if len(set(shapes)) > 1:
                attrs[NodeAttr.SHAPE_VARIANTS] = _runs(shapes)
            if len(set(dtypes)) > 1:
                attrs[NodeAttr.DTYPE_VARIANTS] = _runs(dtypes)
            attrs[NodeAttr.UNTYPED_OUTPUT] = "passes disagree on shape or dtype (see shape_variants / dtype_variants)"
        if feedback:
            attrs[NodeAttr.RECURRENCE] = "; ".join(
                f"{src} feeds back ({_passes_text(sorted(set(ps)))})" for src, ps in feedback.items()
            ) + " (not drawn: a drawn feedback edge would be a cycle)"
        nodes.append(
            replace(
                node,
                role=node.role if node.role == NodeRole.BUFFER else (NodeRole.LAYER if n > 1 else NodeRole.OP),
                attributes=tuple(sorted(attrs.items())),
            )
        )
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

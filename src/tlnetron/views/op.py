"""The op view (``granularity="op"``): every leaf op flat.

Every kept op is one node named by its verbatim TorchLens label; graph inputs and outputs
are the model's inputs and outputs; every value is typed where a faithful ONNX type exists.
"""

from __future__ import annotations

from collections.abc import Callable

from .._generated.vocab import Granularity, NodeRole
from ..ir.drawing import PNode, Projection, PValue
from ..ir.facts import sum_facts
from ..ir.trace import ROLE_INPUT, ROLE_OUTPUT, TraceIR
from ..options import ExportOptions
from ..progress import every_share
from ..read.buffers import apply_buffer_policy
from .nodes import op_node, op_value, root_ranks
from .structures import root_graph

__all__ = ["project_op"]


def project_op(ir: TraceIR, options: ExportOptions, progress: Callable[[int, int], None] | None = None) -> Projection:
    """Project ``ir`` flat, one node per op, after the buffer policy (``progress(ops, of)`` as it goes)."""
    show_buffers = options.show_buffers
    kept = apply_buffer_policy(ir.ops, show_buffers)
    inputs = [op for op in kept.ops if op.role == ROLE_INPUT]
    outputs = [op for op in kept.ops if op.role == ROLE_OUTPUT]
    input_values = {op.name: op_value(op) for op in inputs}
    produced: dict[str, PValue] = {}
    nodes: list[PNode] = []
    for op in every_share(kept.ops, len(kept.ops), progress):
        if op.role in (ROLE_INPUT, ROLE_OUTPUT):
            continue
        value = op_value(op)
        produced[op.name] = value
        nodes.append(op_node(op, op.parents, op.ports, typed=value.type is not None))
    graph = root_graph(ir.model_class, nodes, produced, inputs, outputs, input_values)
    return Projection(
        granularity=Granularity.OP,
        graph=graph,
        show_buffers=show_buffers,
        hidden_buffers=kept.hidden_buffers,
        hidden_ops=kept.hidden_ops,
        root_ranks=root_ranks(graph),
        totals=sum_facts([n.facts for n in nodes if n.role == NodeRole.OP], inclusive=False),
    )

"""Diff facts from TorchLens' guarded differential (``baseline=``).

Netron has no diff view, so the facts ride the channels it renders: node metadataProps and
the companion. An op node whose op settled into a diff row carries that row
(``torchlens.diff.status``, ``max_abs_delta``, ``reference_label``, ``verdict``,
``detail``); a module-call or rolled node carries the row counts over its ops and the largest
delta among them. A node with no settled row carries nothing, never a zero. The model-level
``torchlens.baseline`` row holds the summary (``schema/baseline-summary.schema.json``).
"""

from __future__ import annotations

from dataclasses import replace

from .._generated.vocab import NodeRole
from ..ir.drawing import PFunction, PNode, Projection
from ..ir.facts import DiffFacts
from ..ir.trace import DiffIR, DiffRow, TraceIR

__all__ = ["apply_diff"]


def apply_diff(projection: Projection, ir: TraceIR, diff: DiffIR) -> Projection:
    """Attach diff facts to every node whose ops settled into a diff row."""
    by_op: dict[str, list[DiffRow]] = {}
    for row in diff.rows:
        if row.subject:
            by_op.setdefault(row.subject, []).append(row)
    layer_ops: dict[str, list[str]] = {}
    for op in ir.ops:
        layer_ops.setdefault(op.layer, []).append(op.name)
    functions = {f.overload: f for f in projection.functions}
    inside: dict[str, list[DiffRow]] = {}

    def rows_in(fn: PFunction) -> list[DiffRow]:
        if fn.overload in inside:
            return inside[fn.overload]
        found: list[DiffRow] = []
        for node in fn.body.nodes:
            if node.role == NodeRole.MODULE_CALL and node.overload in functions:
                found.extend(rows_in(functions[node.overload]))
            else:
                found.extend(by_op.get(node.name, []))
        inside[fn.overload] = found
        return found

    def facts_for(node: PNode) -> DiffFacts | None:
        if node.role == NodeRole.MODULE_CALL and node.overload in functions:
            rows = rows_in(functions[node.overload])
        elif node.role == NodeRole.LAYER:
            rows = [r for name in layer_ops.get(node.name, []) for r in by_op.get(name, [])]
        else:
            rows = by_op.get(node.name, [])
            if len(rows) == 1:
                return DiffFacts(rows=(rows[0],), inside=False)
        return DiffFacts(rows=tuple(rows), inside=True) if rows else None

    def patch(nodes: tuple[PNode, ...]) -> tuple[PNode, ...]:
        out = []
        for n in nodes:
            facts = facts_for(n)
            out.append(replace(n, diff=facts) if facts is not None else n)
        return tuple(out)

    graph = replace(projection.graph, nodes=patch(projection.graph.nodes))
    fns = tuple(replace(f, body=replace(f.body, nodes=patch(f.body.nodes))) for f in projection.functions)
    return replace(projection, graph=graph, functions=fns)

"""Stage 2c: diff facts from TorchLens' guarded differential (``baseline=``).

Netron has no diff view, so the facts ride the channels it renders: node metadataProps and
the companion. An op node whose op settled into a diff row carries that row
(``torchlens.diff.status``, ``max_abs_delta``, ``reference_label``, ``verdict``,
``detail``); a module-call or rolled node carries the row counts over its ops and the largest
delta among them. A node with no settled row carries nothing, never a zero. The model-level
``torchlens.baseline`` row holds the summary (``schema/baseline-summary.schema.json``).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ._generated.vocab import (
    DIFF_STATUS,
    BaselineKind,
    DiffStatus,
    ErrorCode,
    NodeRole,
)
from .errors import Opt, Placeholder, TlnetronError
from .facts import DiffFacts
from .ir import DiffIR, DiffRow, TraceIR
from .projection import PFunction, PNode, Projection

__all__ = ["apply_diff", "baseline_summary", "read_baseline"]


def read_baseline(subject: Any, baseline: Any) -> tuple[tuple[str, str | dict[str, Any]], DiffIR | None]:
    """Interpret ``baseline=``: a string identifier, or a reference Trace to diff against.

    Returns:
        The model metadata ``(baseline_kind, value)`` and the diff IR (None for a string).

    Raises:
        TlnetronError: ``invalid_baseline`` or ``baseline_refused``.
    """
    if isinstance(baseline, str):
        if not baseline.strip():
            raise TlnetronError(
                ErrorCode.INVALID_BASELINE,
                (Opt("baseline", baseline), " is an empty string."),
                where="baseline",
                remedy=(
                    "pass a run identifier such as ", Opt("baseline", "run-2026-11-29"),
                    ", or the reference run's trace: ", Opt("baseline", Placeholder("ref_log")), ".",
                ),
            )
        try:
            baseline.encode("utf-8")
        except UnicodeEncodeError:
            raise TlnetronError(
                ErrorCode.INVALID_BASELINE,
                (Opt("baseline", baseline), " is not valid Unicode text (it holds lone surrogates), so the artifact cannot record it."),
                where="baseline",
                remedy=("pass a run identifier of valid UTF-8 text, such as ", Opt("baseline", "run-2026-11-29"), "."),
            ) from None
        return (BaselineKind.IDENTIFIER, baseline), None
    from .reader import read_diff

    diff = read_diff(subject, baseline)
    return (BaselineKind.TRACE, baseline_summary(diff)), diff


def baseline_summary(diff: DiffIR) -> dict[str, Any]:
    """The decoded ``torchlens.baseline`` summary: direction, counts, removed labels."""
    counts = {status: 0 for status in DIFF_STATUS}
    for row in diff.rows:
        if row.status in counts:
            counts[row.status] += 1
    removed = sorted({row.reference for row in diff.rows if row.status == DiffStatus.REMOVED and row.reference})
    return {
        "direction": {"subject": f"the exported capture ({diff.subject_name})", "reference": f"the baseline capture ({diff.reference_name})"},
        "row_counts": counts,
        "removed_labels": removed,
        "source": diff.source,
    }


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

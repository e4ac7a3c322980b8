"""Stage 2c: diff facts from TorchLens' guarded differential (``baseline=``).

Netron has no diff view, so the facts ride the channels it renders: node metadataProps and
the companion. An op node whose op settled into a diff row carries that row
(``torchlens.diff.status``, ``max_abs_delta``, ``reference_label``, ``verdict``,
``detail``); a module-call or rolled node carries the row counts over its ops and the largest
delta among them. A node with no settled row carries nothing, never a zero. The model-level
``torchlens.baseline`` row holds the summary (``schema/baseline-summary.schema.json``).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from typing import Any

from ._generated.vocab import (
    DIFF_STATUS,
    BaselineKind,
    DiffStatus,
    ErrorCode,
    NodeMeta,
    NodeRole,
)
from .errors import Opt, Placeholder, TlnetronError
from .ir import DiffIR, DiffRow, TraceIR
from .nodes import one_line
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


def _delta_text(delta: float) -> str:
    return f"{delta:.6g}"


def _row_facts(row: DiffRow) -> tuple[tuple[str, str], ...]:
    out = [(NodeMeta.DIFF_STATUS, row.status)]
    if row.max_abs_delta is not None:
        out.append((NodeMeta.DIFF_MAX_ABS_DELTA, _delta_text(row.max_abs_delta)))
    if row.reference:
        out.append((NodeMeta.DIFF_REFERENCE_LABEL, one_line(row.reference)))
    if row.verdict:
        out.append((NodeMeta.DIFF_VERDICT, one_line(row.verdict)))
    if row.detail:
        out.append((NodeMeta.DIFF_DETAIL, row.detail[:2000]))
    return tuple(out)


def _aggregate(rows: list[DiffRow]) -> tuple[tuple[str, str], ...]:
    counts = Counter(r.status for r in rows)
    text = ", ".join(f"{s} {counts[s]}" for s in DIFF_STATUS if counts[s])
    out = [(NodeMeta.DIFF_ROW_COUNTS, f"{text} (over {len(rows)} op rows inside)")]
    deltas = [r.max_abs_delta for r in rows if r.max_abs_delta is not None]
    if deltas:
        out.append((NodeMeta.DIFF_MAX_ABS_DELTA, _delta_text(max(deltas)) + " (largest among the ops inside)"))
    return tuple(out)


def diff_words(facts: tuple[tuple[str, str], ...]) -> str:
    """A node's diff facts as one sentence of its description, which Netron shows at full
    width (the metadata rows' names are cut to ``torchlens.diff.ma…`` in the sidebar)."""
    f = dict(facts)
    if NodeMeta.DIFF_ROW_COUNTS in f:
        text = f"Diff against the baseline, over the ops inside: {f[NodeMeta.DIFF_ROW_COUNTS]}"
    else:
        text = f"Diff against the baseline: {f[NodeMeta.DIFF_STATUS]}"
        if NodeMeta.DIFF_REFERENCE_LABEL in f:
            text += f" (the baseline's {f[NodeMeta.DIFF_REFERENCE_LABEL]})"
    if NodeMeta.DIFF_MAX_ABS_DELTA in f:
        text += f"; largest absolute difference {f[NodeMeta.DIFF_MAX_ABS_DELTA]}"
    if NodeMeta.DIFF_VERDICT in f:
        text += f"; verdict: {f[NodeMeta.DIFF_VERDICT]}"
    return text + "."


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

    def facts_for(node: PNode) -> tuple[tuple[str, str], ...]:
        if node.role == NodeRole.MODULE_CALL and node.overload in functions:
            rows = rows_in(functions[node.overload])
            return _aggregate(rows) if rows else ()
        if node.role == NodeRole.LAYER:
            rows = [r for name in layer_ops.get(node.name, []) for r in by_op.get(name, [])]
            return _aggregate(rows) if rows else ()
        rows = by_op.get(node.name, [])
        if len(rows) == 1:
            return _row_facts(rows[0])
        return _aggregate(rows) if rows else ()

    def patch(nodes: tuple[PNode, ...]) -> tuple[PNode, ...]:
        out = []
        for n in nodes:
            facts = facts_for(n)
            out.append(replace(n, diff=facts, doc=f"{n.doc}\n{diff_words(facts)}") if facts else n)
        return tuple(out)

    graph = replace(projection.graph, nodes=patch(projection.graph.nodes))
    fns = tuple(replace(f, body=replace(f.body, nodes=patch(f.body.nodes))) for f in projection.functions)
    return replace(projection, graph=graph, functions=fns)

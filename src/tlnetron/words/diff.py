"""Words: a node's diff facts, as metadata rows, companion rows and one sentence of its description."""

from __future__ import annotations

from collections.abc import Mapping

from .._generated.vocab import (
    DIFF_STATUS,
    NodeMeta,
)
from ..ir.facts import DiffFacts
from ..ir.trace import DiffRow
from .text import one_line

__all__ = ["diff_rows", "diff_sentence"]


def _delta_text(delta: float) -> str:
    return f"{delta:.6g}"


def diff_rows(diff: DiffFacts) -> tuple[tuple[str, str], ...]:
    """A node's diff facts as its ``torchlens.diff.*`` metadata rows (and companion rows)."""
    if not diff.inside:
        return _row_rows(diff.rows[0])
    counts: dict[str, int] = {}
    for r in diff.rows:
        counts[r.status] = counts.get(r.status, 0) + 1
    text = ", ".join(f"{s} {counts[s]}" for s in DIFF_STATUS if counts.get(s))
    out = [(NodeMeta.DIFF_ROW_COUNTS, f"{text} (over {len(diff.rows)} op rows inside)")]
    deltas = [r.max_abs_delta for r in diff.rows if r.max_abs_delta is not None]
    if deltas:
        out.append((NodeMeta.DIFF_MAX_ABS_DELTA, _delta_text(max(deltas)) + " (largest among the ops inside)"))
    return tuple(out)


def _row_rows(row: DiffRow) -> tuple[tuple[str, str], ...]:
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


def diff_sentence(f: Mapping[str, str]) -> str:
    """A node's diff rows (:func:`diff_rows`) as one sentence of its description, which Netron
    shows at full width (the metadata rows' names are cut to ``torchlens.diff.ma…`` in the sidebar)."""
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

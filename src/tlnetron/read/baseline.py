"""A baseline run for ``baseline=``: a run identifier, or a reference trace read into
TorchLens' guarded differential (the rows ``views.diff`` attaches to the drawing) and the
model-level summary (``schema/baseline-summary.schema.json``)."""

from __future__ import annotations

from typing import Any

from .._generated.vocab import DIFF_STATUS, BaselineKind, DiffStatus, ErrorCode
from ..errors import Opt, Placeholder, TlnetronError
from ..ir.trace import DiffIR
from .trace import read_diff

__all__ = ["baseline_summary", "read_baseline"]


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
                    "pass a run identifier such as ",
                    Opt("baseline", "run-2026-11-29"),
                    ", or the reference run's trace: ",
                    Opt("baseline", Placeholder("ref_log")),
                    ".",
                ),
            )
        try:
            baseline.encode("utf-8")
        except UnicodeEncodeError:
            raise TlnetronError(
                ErrorCode.INVALID_BASELINE,
                (
                    Opt("baseline", baseline),
                    " is not valid Unicode text (it holds lone surrogates), so the artifact cannot record it.",
                ),
                where="baseline",
                remedy=("pass a run identifier of valid UTF-8 text, such as ", Opt("baseline", "run-2026-11-29"), "."),
            ) from None
        return (BaselineKind.IDENTIFIER, baseline), None
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
        "direction": {
            "subject": f"the exported capture ({diff.subject_name})",
            "reference": f"the baseline capture ({diff.reference_name})",
        },
        "row_counts": counts,
        "removed_labels": removed,
        "source": diff.source,
    }

"""A baseline run for ``baseline=``: a run identifier, or a reference trace read into
TorchLens' guarded differential (the rows ``views.diff`` attaches to the drawing) and the
model-level summary (``schema/baseline-summary.schema.json``)."""

from __future__ import annotations

from typing import Any

from .._generated.vocab import DIFF_STATUS, BaselineKind, DiffStatus, ErrorCode
from ..errors import Opt, Placeholder, TlnetronError
from ..ir.trace import DiffIR, DiffRow
from .stats import finite_float
from .trace import describe, is_trace, node_name_map

__all__ = ["baseline_summary", "read_baseline", "read_diff", "self_baseline_refusal"]


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


def self_baseline_refusal(what: str) -> TlnetronError:
    """The refusal of a baseline that is the exported capture itself (``what`` it is).

    Raised by :func:`read_diff` for the same Trace object, and by the command line for the
    same saved trace, before it is loaded twice.
    """
    return TlnetronError(
        ErrorCode.INVALID_BASELINE,
        f"the baseline is {what}: the diff of a capture with itself is vacuous.",
        where="baseline",
        remedy=(
            "pass the reference run's trace (",
            Opt("baseline", Placeholder("ref_log")),
            ", from a second torchlens.trace call), or a run identifier (",
            Opt("baseline", "run-id"),
            ").",
        ),
    )


def read_diff(subject: Any, reference: Any) -> DiffIR:
    """Run TorchLens' own guarded differential and read its settled rows into the IR.

    Uses ``torchlens.report.diff`` where the installed TorchLens has it, else
    ``torchlens.differential.diff_report`` (2.36). tlnetron never pairs ops itself.

    Raises:
        TlnetronError: ``invalid_baseline`` when the baseline is the subject itself or not a
            Trace; ``baseline_refused`` when TorchLens refuses the pair.
    """
    if reference is subject:
        raise self_baseline_refusal("the same Trace object as the one being exported")
    if not is_trace(reference):
        raise TlnetronError(
            ErrorCode.INVALID_BASELINE,
            f"baseline must be a torchlens Trace or a string, got {type(reference).__name__}.",
            where="baseline",
            remedy=(
                "pass ",
                Opt("baseline", Placeholder("ref_log")),
                " (a Trace) or ",
                Opt("baseline", "run-id"),
                " (recorded verbatim).",
            ),
        )
    import torchlens

    report_mod = getattr(torchlens, "report", None)
    differ = getattr(report_mod, "diff", None)
    source = "torchlens.report.diff"
    if not callable(differ):
        from torchlens import differential

        differ = differential.diff_report
        source = "torchlens.differential.diff_report"
    try:
        report = differ(subject, reference)
    except Exception as exc:
        raise TlnetronError(
            ErrorCode.BASELINE_REFUSED,
            f"TorchLens refused to compare the two captures "
            f"({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}).",
            where="baseline",
            remedy=(
                "compare two captures of the same model family (see TorchLens' differential docs), "
                "or record a run identifier: ",
                Opt("baseline", "run-id"),
                ".",
            ),
        ) from exc
    try:
        names = node_name_map(subject)
        rows = []
        for row in report.rows:
            label = row.subject_label
            delta = finite_float(row.max_abs_delta)
            rows.append(
                DiffRow(
                    status=str(row.status),
                    subject=names.get(str(label), str(label)) if label else None,
                    reference=str(row.reference_label) if row.reference_label else None,
                    max_abs_delta=delta,
                    verdict=str(row.verdict) if row.verdict else None,
                    detail=str(row.detail) if row.detail else None,
                )
            )
        counts = tuple(sorted((str(k), int(v)) for k, v in dict(report.counts).items()))
    except Exception as exc:
        raise TlnetronError(
            ErrorCode.TRACE_UNREADABLE,
            f"could not read TorchLens' diff report ({type(exc).__name__}: {exc}).",
            where="baseline",
            remedy="use the torchlens version tlnetron supports (see pyproject.toml).",
        ) from exc
    return DiffIR(
        rows=tuple(rows),
        counts=counts,
        source=source,
        subject_name=describe(subject),
        reference_name=describe(reference),
    )

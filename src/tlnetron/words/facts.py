"""Words: every numeric fact, from one table. Views hand over typed :class:`~tlnetron.ir.facts.Facts`
(an op's own, a rolled layer's passes summed, a module call's inclusive totals) and this
module words them wherever they show: node metadata rows, function descriptions, companion
metric rows, and the model's totals (metadata and companion).

The wording is :data:`~tlnetron._generated.vocab.METRICS`, generated from the
``x-tlnetron-metrics`` table of ``schema/vocabularies.schema.json``: per metric, the unit
formatter, and per scope (op, passes, inclusive, total) the row key, the sentence and the
companion rows. Adding a metric is a row of that table (codegen gives ``Facts`` its field,
which :mod:`tlnetron.ir.facts` takes and sums), its field on ``OpIR`` and the reader's line; no
wording code.
"""

from __future__ import annotations

import string
from collections.abc import Callable, Iterable
from typing import Any

from .._generated.vocab import (
    METRICS,
    PASSES_ROW,
    CompanionRow,
    InclusiveWording,
    Metric,
    NodeWording,
)
from ..ir.facts import Facts
from ..ir.trace import TensorStats
from ..perf import export_memo

__all__ = [
    "STATS_ROW_NAMES",
    "bytes_text",
    "companion_metric_rows",
    "compile_table",
    "count_text",
    "duration_text",
    "duration_us",
    "fact_rows",
    "flops_text",
    "function_doc_line",
    "share_rows",
    "stats_rows",
    "total_meta",
    "total_rows",
]


def _group(n: int) -> str:
    return f"{n:,}"


def duration_us(seconds: float) -> float:
    """Seconds -> microseconds, rounded to a nanosecond (stable text and JSON)."""
    return round(seconds * 1e6, 3)


def duration_text(seconds: float) -> str:
    """``569 µs``, ``1.25 ms``, ``2.03 s``, ``340 ns``."""
    if seconds >= 1.0:
        return f"{seconds:.3g} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.3g} ms"
    if seconds >= 1e-6:
        return f"{seconds * 1e6:.3g} µs"
    return f"{seconds * 1e9:.3g} ns"


@export_memo
def flops_text(flops: int) -> str:
    """``1,234,567 FLOPs (4.2 MFLOPs)``."""
    text = f"{_group(flops)} FLOPs"
    for scale, unit in ((1e12, "TFLOPs"), (1e9, "GFLOPs"), (1e6, "MFLOPs"), (1e3, "kFLOPs")):
        if flops >= scale:
            return f"{text} ({flops / scale:.3g} {unit})"
    return text


@export_memo
def bytes_text(nbytes: int) -> str:
    """``3,072 B (3 KiB)``."""
    text = f"{_group(nbytes)} B"
    for scale, unit in ((1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")):
        if nbytes >= scale:
            return f"{text} ({nbytes / scale:.3g} {unit})"
    return text


def count_text(n: int) -> str:
    return _group(n)


_FORMAT: dict[str, Callable[[Any], str]] = {
    "duration": duration_text,
    "flops": flops_text,
    "bytes": bytes_text,
    "count": count_text,
}
"""A metric's ``format`` -> the function wording one value with its unit."""


_COMPANION_VALUE: dict[str, Callable[[Any], Any]] = {
    "microseconds": duration_us,
    "count": lambda value: value,
}
"""A metric's ``companion_value`` -> the number a companion row holds."""


def _compile(metric: Metric) -> tuple[str, Callable[[Any], str], Callable[[Any], Any]]:
    return metric.fact, _FORMAT[metric.format], _COMPANION_VALUE[metric.companion_value]


_TABLE = tuple((m, *_compile(m)) for m in METRICS)
"""Each metric with its fact's attribute name, its formatter and its companion value."""


def _scope(facts: Facts) -> str:
    if facts.inclusive:
        return "inclusive"
    return "passes" if facts.passes > 1 else "op"


def _stated(value: Any, is_count: bool) -> bool:
    """Whether a fact is worded: an unknown one is absent, and so is a count of 0 (no op inside)."""
    return value is not None and not (is_count and value == 0)


def _renderer(template: str, fmt: Callable[[Any], str]) -> Callable[[Any, Facts], str]:
    """``template`` compiled once: ``render(value, facts)`` is its text for one fact."""
    fields = {name for _, name, _, _ in string.Formatter().parse(template) if name}
    head, _, tail = template.partition("{value}")
    if fields == {"value"} and "{" not in head + tail and "}" not in head + tail:
        return lambda value, facts: head + fmt(value) + tail  # the common case, as fast as an f-string

    def render(value: Any, facts: Facts) -> str:
        words: dict[str, Any] = {"value": fmt(value), "raw": value}
        if "passes" in fields or "per_pass" in fields:
            words["passes"] = facts.passes
            words["per_pass"] = fmt(value / facts.passes)
        if "unknown_flops_note" in fields:
            n = facts.unknown_flops
            words["unknown_flops_note"] = f"; {n} ops inside have no FLOP rule" if n else ""
        if "calls_note" in fields:
            words["calls_note"] = f" (summed over {facts.calls} calls)" if facts.calls > 1 else ""
        return template.format(**words)

    return render


_Spec = tuple[str, bool, str, Callable[[Any, Facts], str], tuple[str, ...], Callable[[Any], Any]]
"""One metric in one scope, compiled: (fact attribute, a zero is absent, node metadata key,
its renderer, companion rows, the companion's number)."""


def compile_table(
    table: Iterable[tuple[Metric, str, Callable[[Any], str], Callable[[Any], Any]]],
) -> dict[str, tuple[_Spec, ...]]:
    """The node-level wording of each scope (``op``, ``passes``, ``inclusive``), compiled from
    the metric table once, in the table's order."""
    specs: dict[str, list[_Spec]] = {"op": [], "passes": [], "inclusive": []}
    for metric, attr, fmt, number in table:
        for scope_name, out in specs.items():
            scope: NodeWording | InclusiveWording | None = getattr(metric, scope_name)
            if scope is not None:
                out.append(
                    (attr, metric.format == "count", scope.node_meta, _renderer(scope.text, fmt), scope.rows, number)
                )
    return {name: tuple(out) for name, out in specs.items()}


_SPECS = compile_table(_TABLE)


def fact_rows(facts: Facts) -> list[tuple[str, str]]:
    """The node metadata rows stating ``facts`` (an absent fact gives no row; a count of 0,
    no op inside, says nothing either)."""
    rows: list[tuple[str, str]] = []
    for attr, skip_zero, key, render, _, _ in _SPECS[_scope(facts)]:
        value = getattr(facts, attr)
        if not _stated(value, skip_zero):
            continue
        rows.append((key, render(value, facts)))
    return rows


def companion_metric_rows(facts: Facts) -> list[tuple[str, Any]]:
    """``(row name, number)`` for each fact of a node, in the companion's order."""
    scope_name = _scope(facts)
    out: list[tuple[str, Any]] = []
    for attr, skip_zero, _, _, rows, number in _SPECS[scope_name]:
        value = getattr(facts, attr)
        if not _stated(value, skip_zero):
            continue
        out.append((rows[0], number(value)))
        for name in rows[1:]:  # the per-pass row: the value over one pass
            out.append((name, number(value / facts.passes)))
    if scope_name == "passes":
        out.append((PASSES_ROW, facts.passes))
    return out


def share_rows(facts: Facts, totals: Facts) -> list[tuple[str, str]]:
    """A module call's share of the model's time and FLOPs, as companion metadata rows."""
    out: list[tuple[str, str]] = []
    if not facts.inclusive:
        return out
    for metric, attr, _, _ in _TABLE:
        scope = metric.inclusive
        if scope is None or scope.share_row is None:
            continue
        value, whole = getattr(facts, attr), getattr(totals, attr)
        if value is not None and whole:
            out.append((scope.share_row, f"{100.0 * value / whole:.2f} %"))
    return out


def function_doc_line(facts: Facts) -> str | None:
    """The sentence of a module function's description stating its inclusive facts."""
    parts: list[str] = []
    for metric, attr, fmt, _ in _TABLE:
        scope = metric.inclusive
        value = getattr(facts, attr)
        if scope is None or scope.function_doc is None or not _stated(value, metric.format == "count"):
            continue
        parts.append(scope.function_doc.format(value=fmt(value), raw=value))
    inside = f"inside the {facts.calls} calls" if facts.calls > 1 else "inside"
    return f"Inclusive of every op {inside}: " + "; ".join(parts) + "." if parts else None


def total_meta(totals: Facts) -> list[tuple[str, str]]:
    """The model metadata rows stating the model's totals (key, sentence)."""
    out: list[tuple[str, str]] = []
    for metric, attr, fmt, _ in _TABLE:
        scope = metric.total
        value = getattr(totals, attr)
        if scope is None or value is None:
            continue
        out.append((scope.model_meta, scope.text.format(value=fmt(value), raw=value)))
    return out


def total_rows(totals: Facts) -> list[tuple[str, Any]]:
    """The companion's model rows stating the model's totals (name, number)."""
    out: list[tuple[str, Any]] = []
    for metric, attr, _, number in _TABLE:
        scope = metric.total
        value = getattr(totals, attr)
        if scope is None or value is None:
            continue
        out.extend((name, number(value)) for name in scope.rows)
    return out


def _sig(value: float) -> float:
    """A float statistic to 7 significant digits (float32's precision; the sidebar shows
    JavaScript's shortest form, so 0.1 reads 0.1, not 0.10000000149011612)."""
    return float(f"{value:.7g}")


STATS_ROW_NAMES = (
    CompanionRow.MIN,
    CompanionRow.MAX,
    CompanionRow.MEAN,
    CompanionRow.STD,
    CompanionRow.NAN_COUNT,
    CompanionRow.INF_COUNT,
    CompanionRow.ZERO_FRACTION,
)
"""The value rows' names, in sidebar order (what :func:`stats_rows` names its rows)."""


def stats_rows(stats: TensorStats) -> list[tuple[str, Any]]:
    """A captured tensor's value rows, in sidebar order; a statistic that is absent (see
    :class:`~tlnetron.ir.trace.TensorStats`) gives no row, so every value is a finite number."""
    lo, hi, mean, std, nans, infs, zeros = STATS_ROW_NAMES
    out: list[tuple[str, Any]] = []
    for name, value in ((lo, stats.min), (hi, stats.max), (mean, stats.mean), (std, stats.std)):
        if value is not None:
            out.append((name, _sig(value) if isinstance(value, float) else value))
    out.append((nans, stats.nan_count))
    out.append((infs, stats.inf_count))
    if stats.numel:
        out.append((zeros, _sig(stats.zero_count / stats.numel)))
    return out

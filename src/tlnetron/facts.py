"""Facts and their wording (the accuracy contract of the properties panel).

Durations are *observed*, FLOPs are *estimates*, bytes are *captured-tensor* bytes, module
totals say *inclusive*; a fact that does not apply, or is unknown, is absent (None), never 0.
Every worded fact is one line of text with its unit, because Netron shows a companion row's
``type`` only when the row is expanded.
"""

from __future__ import annotations

from functools import lru_cache

from ._records import record

__all__ = [
    "Facts",
    "duration_text",
    "flops_text",
    "bytes_text",
    "count_text",
    "duration_us",
    "sum_facts",
]


@record
class Facts:
    """Numeric facts of one exported node (None = does not apply / unknown).

    ``inclusive`` marks module-call totals; ``passes`` > 1 marks rolled sums.
    """

    duration_s: float | None = None
    flops: int | None = None
    nbytes: int | None = None
    op_count: int | None = None
    inclusive: bool = False
    passes: int = 1


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


@lru_cache(maxsize=4096, typed=True)  # op FLOP counts recur across layers
def flops_text(flops: int) -> str:
    """``1,234,567 FLOPs (4.2 MFLOPs)``."""
    text = f"{_group(flops)} FLOPs"
    for scale, unit in ((1e12, "TFLOPs"), (1e9, "GFLOPs"), (1e6, "MFLOPs"), (1e3, "kFLOPs")):
        if flops >= scale:
            return f"{text} ({flops / scale:.3g} {unit})"
    return text


@lru_cache(maxsize=4096, typed=True)  # tensor sizes recur across layers
def bytes_text(nbytes: int) -> str:
    """``3,072 B (3 KiB)``."""
    text = f"{_group(nbytes)} B"
    for scale, unit in ((1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")):
        if nbytes >= scale:
            return f"{text} ({nbytes / scale:.3g} {unit})"
    return text


def count_text(n: int) -> str:
    return _group(n)


def sum_facts(items: list[Facts], *, inclusive: bool, passes: int = 1) -> Facts:
    """Sum facts; a sum is absent when no item has the fact (never a fabricated zero)."""
    durations = [f.duration_s for f in items if f.duration_s is not None]
    flops = [f.flops for f in items if f.flops is not None]
    nbytes = [f.nbytes for f in items if f.nbytes is not None]
    ops = sum((f.op_count or 0) for f in items)
    return Facts(
        duration_s=sum(durations) if durations else None,
        flops=sum(flops) if flops else None,
        nbytes=sum(nbytes) if nbytes else None,
        op_count=ops or None,
        inclusive=inclusive,
        passes=passes,
    )

"""Typed facts: what a view hands to :mod:`tlnetron.presentation` to be worded.

Durations are *observed*, FLOPs are *estimates*, bytes are *captured-tensor* bytes; a fact
is an op's own, a rolled layer's passes summed (``passes`` > 1), or a module call's total
over every op inside (``inclusive``). A fact that does not apply, or is unknown, is absent
(None), never 0.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import TypeVar

from ._records import record
from .ir import ROLE_BUFFER, ROLE_INPUT, ROLE_OUTPUT, DiffRow, OpIR

__all__ = ["DiffFacts", "Facts", "known", "op_facts", "passes_facts", "sum_facts"]


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
    unknown_flops: int = 0
    """Inclusive facts: how many ops inside have no FLOP rule (their FLOPs are not in ``flops``)."""
    calls: int = 1
    """Inclusive facts of a run: how many module calls the sums go over."""


@record
class DiffFacts:
    """A node's diff facts: the settled rows of TorchLens' differential for its ops.

    ``inside`` False: the node is one op with exactly one row, stated as it is; True: the
    rows of every op inside a module call or rolled layer (or of an op with several rows),
    stated as counts and the largest delta.
    """

    rows: tuple[DiffRow, ...]
    inside: bool


def sum_facts(items: list[Facts], *, inclusive: bool, passes: int = 1, unknown_flops: int = 0, calls: int = 1) -> Facts:
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
        unknown_flops=unknown_flops,
        calls=calls,
    )


_Num = TypeVar("_Num", int, float)


def known(value: _Num | None) -> _Num | None:
    """A fact as the panel may state it: non-finite or negative values are unknown (absent)."""
    kind = type(value)
    if kind is float:  # NaN fails both comparisons
        return value if 0 <= value < math.inf else None  # type: ignore[operator]
    if kind is int:
        return value if value >= 0 else None  # type: ignore[operator]
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value if value >= 0 else None


def op_facts(op: OpIR) -> Facts:
    """The op's own facts; anything unknown or impossible is absent, never worded."""
    return Facts(
        known(op.duration_s),
        known(op.flops),
        known(op.nbytes),
        1 if op.role not in (ROLE_INPUT, ROLE_OUTPUT, ROLE_BUFFER) else None,
    )


def passes_facts(ops: Iterable[OpIR], passes: int) -> Facts:
    """A rolled layer's facts: its passes' ``op_facts`` summed (what ``sum_facts`` of them
    gives), with ``op_count`` the number of passes when they are compute ops."""
    durations: list[float] = []
    flops: list[int] = []
    nbytes: list[int] = []
    compute = False
    for op in ops:
        d = known(op.duration_s)
        if d is not None:
            durations.append(d)
        f = known(op.flops)
        if f is not None:
            flops.append(f)
        b = known(op.nbytes)
        if b is not None:
            nbytes.append(b)
        compute = compute or op.role not in (ROLE_INPUT, ROLE_OUTPUT, ROLE_BUFFER)
    return Facts(
        duration_s=sum(durations) if durations else None,
        flops=sum(flops) if flops else None,
        nbytes=sum(nbytes) if nbytes else None,
        op_count=passes if compute else None,
        inclusive=False,
        passes=passes,
    )

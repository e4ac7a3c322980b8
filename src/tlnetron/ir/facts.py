"""Typed facts: what a view hands to :mod:`tlnetron.words.facts` to be worded.

Durations are *observed*, FLOPs are *estimates*, bytes are *captured-tensor* bytes; a fact
is an op's own, a rolled layer's passes summed (``passes`` > 1), or a module call's total
over every op inside (``inclusive``). A fact that does not apply, or is unknown, is absent
(None), never 0.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import TypeVar

from .._generated.facts import Facts, op_facts_of, passes_facts_of, sum_facts_of
from .._records import record
from .trace import ROLE_BUFFER, ROLE_INPUT, ROLE_OUTPUT, DiffRow, OpIR

__all__ = ["DiffFacts", "Facts", "known", "op_facts", "passes_facts", "sum_facts"]

_NOT_COMPUTE = (ROLE_INPUT, ROLE_OUTPUT, ROLE_BUFFER)
# The arithmetic is generated from the metric table (one line per metric, no loop per node).


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
    """Sum facts, metric by metric; a sum is absent when no item has the fact (never a fabricated zero)."""
    return sum_facts_of(items, inclusive, passes, unknown_flops, calls)


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
    return op_facts_of(op, known, 1 if op.role not in _NOT_COMPUTE else None)


def passes_facts(ops: Iterable[OpIR], passes: int) -> Facts:
    """A rolled layer's facts: its passes' ``op_facts`` summed (what ``sum_facts`` of them
    gives), with the counted metrics the number of passes when they are compute ops."""
    ops = list(ops)
    return passes_facts_of(ops, passes, known, any(op.role not in _NOT_COMPUTE for op in ops))

"""The module view's automatic depth: which calls to open so the root reads as a
diagram (enough boxes of substance, enough to drill into, within the legibility budget).

The choice is typed (:class:`~tlnetron.ir.drawing.DepthChoice`); :func:`tlnetron.words.docs.depth_reason`
words it.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..ir.drawing import DepthChoice, Opening
from ..ir.trace import ROLE_INPUT, ROLE_OP, ROLE_OUTPUT, ModuleCallIR, OpIR
from .nodes import LEGIBILITY_BUDGET
from .runs import find_runs

__all__ = ["MIN_MODULE_BOXES", "MIN_ROOT_BOXES", "TRIVIAL_OP_TYPES", "open_main_blocks"]

TRIVIAL_OP_TYPES = frozenset(
    {
        "getitem",
        "getattr",
        "view",
        "reshape",
        "contiguous",
        "to",
        "type",
        "identity",
        "clone",
        "detach",
        "flatten",
        "squeeze",
        "unsqueeze",
    }
)
"""Ops that do not make a root graph a diagram on their own (the root of a wrapped model that
only reshapes its input)."""

MIN_ROOT_BOXES = 5
"""Boxes of substance (module calls and non-trivial ops) below which the automatic depth
looks one level deeper: fewer do not read as an architecture diagram."""

MIN_MODULE_BOXES = 2
"""Boxes to drill into (module calls, runs) below which the automatic depth looks deeper."""


@dataclass(frozen=True, slots=True)
class _RootAt:
    """What the root graph would draw with a given set of module calls kept as boxes."""

    calls: tuple[str, ...]  # module calls, runs and groups drawn as boxes, in order of first op
    substantive_ops: int  # ops drawn as boxes that are not trivial views
    ranks: int  # boxes along the longest path, inputs and outputs included
    runs: tuple[tuple[str, int], ...] = ()  # run boxes at the root and the ops they hold

    @property
    def boxes(self) -> int:
        return len(self.calls) + self.substantive_ops

    def sparse(self) -> bool:
        """Too few boxes, or too few to drill into, to read as an architecture diagram."""
        return self.boxes < MIN_ROOT_BOXES or len(self.calls) < MIN_MODULE_BOXES


def _root_at(
    ops: tuple[OpIR, ...], boxed: set[str], by_label: dict[str, ModuleCallIR], taken: set[str], opened: frozenset[str]
) -> _RootAt:
    runs = find_runs(ops, boxed, by_label, taken=set(taken), opened=opened)
    box_of: dict[str, str] = {}  # a call at the root -> the run or group box that holds it
    for run in runs.boxes.values():
        if run.parent is None:
            box_of.update((c, run.label) for c in run.calls)
    held: dict[str, int] = {}
    calls: dict[str, None] = {}
    substantive = 0
    item_of: dict[str, str] = {}
    rank: dict[str, int] = {}
    longest = 0
    for op in ops:
        if op.role == ROLE_INPUT:
            item_of[op.name] = op.name
            rank[op.name] = 1
            continue
        top = None
        if op.role != ROLE_OUTPUT:
            top = next((c for c in op.module_calls if c in boxed), None)
            if top is None:
                substantive += op.role == ROLE_OP and op.op_type not in TRIVIAL_OP_TYPES
            else:
                top = box_of.get(top, top)
                calls[top] = None
                if top in runs.boxes:
                    held[top] = held.get(top, 0) + 1
        item = top or op.name
        item_of[op.name] = item
        r = rank.get(item, 1)
        for parent in op.parents:
            source = item_of.get(parent)
            if source is not None and source != item and rank[source] + 1 > r:
                r = rank[source] + 1
        rank[item] = r
        longest = max(longest, r)
    run_boxes = tuple((label, n) for label, n in held.items() if runs.boxes[label].group_of is None)
    return _RootAt(tuple(calls), substantive, longest, run_boxes)


def open_main_blocks(
    ops: tuple[OpIR, ...],
    boxable: set[str],
    counts: dict[str, int],
    depth: dict[str, int],
    by_label: dict[str, ModuleCallIR],
    taken: set[str],
) -> DepthChoice:
    """The calls the automatic module view opens and the runs it draws open at the root.

    While the root draws fewer than :data:`MIN_ROOT_BOXES` boxes of substance or fewer than
    :data:`MIN_MODULE_BOXES` boxes to drill into, the calls holding at least a third of the
    ops each (a wrapper, the backbone beside a task head, an encoder and a decoder) are
    opened together, as long as that does not draw fewer boxes and stays within the
    legibility budget. When the block holding most of the model is a run, it is drawn open
    at the root instead: its groups of calls, or its calls when it is short.
    """
    total = sum(1 for op in ops if op.role not in (ROLE_INPUT, ROLE_OUTPUT))
    opened: set[str] = set()
    opened_runs: frozenset[str] = frozenset()
    here = _root_at(ops, boxable, by_label, taken, opened_runs)
    wrappers: list[str] = []
    steps: list[Opening] = []
    while here.sparse() and here.calls:
        big = [c for c in here.calls if c in by_label and counts[c] * 3 >= total]
        big_runs = [label for label, n in here.runs if n * 3 >= total] if not big else []
        if not big and not big_runs:
            break  # no block dominates: the root already shows the architecture
        deeper = _root_at(ops, boxable - opened - set(big), by_label, taken, opened_runs | set(big_runs))
        if deeper.boxes < here.boxes or deeper.ranks > LEGIBILITY_BUDGET:
            break  # opening them would draw less, or a rope
        if len(here.calls) == 1 and not here.substantive_ops and big:
            wrappers.append(by_label[big[0]].address)
        else:
            sizes = dict(here.runs)
            steps.append(
                Opening(
                    blocks=tuple(
                        (by_label[c].address, counts[c], False) if c in by_label else (c, sizes[c], True)
                        for c in (big or big_runs)
                    ),
                    boxes=here.boxes,
                    drawn=tuple(by_label[c].address if c in by_label else c for c in here.calls),
                    ops_drawn=here.substantive_ops,
                    total=total,
                )
            )
        opened.update(big)
        opened_runs = opened_runs | set(big_runs)
        here = deeper
    reached = 1 + max((depth[c] for c in opened), default=0)
    return DepthChoice(opened, opened_runs, reached, tuple(wrappers), tuple(steps))

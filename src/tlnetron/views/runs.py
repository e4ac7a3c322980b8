"""The module view: runs of repeated calls (``model.layers.0`` .. ``model.layers.31``).

Consecutive sibling calls of one module class under one container (addresses
``<container>.<i>`` with ``i`` counting up by one, nothing drawn between them) are found in
the bodies the module view draws. A run whose calls form a clean chain (each call takes
the previous call's output, and only the last call's results go on, besides what the
model returns) is drawn as one box, ``LlamaDecoderLayer ×32``, in domain
``ai.torchlens.run``: the container (a ``ModuleList``) is never called, so the box is a run
of calls, not a call. When a call's whole body is such a run (an ``nn.Sequential`` stage),
that call's box says so itself. A run too long to read as one chain opens on groups of
consecutive calls. Where calls repeat but do not chain, they are drawn one by one and the
reason is recorded for the description of the body they are in.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from ..ir.drawing import RunIR, Runs
from ..ir.trace import ROLE_INPUT, ROLE_OUTPUT, ModuleCallIR, OpIR

__all__ = ["GROUP_SIZE", "MIN_RUN_BOX", "RUN_CHAIN_MAX", "find_runs"]

RUN_CHAIN_MAX = 16
"""Calls an opened run draws as one chain; a longer run opens on groups of calls."""

GROUP_SIZE = 10
"""Calls per group when a run opens on groups (the last group may hold fewer)."""

MIN_RUN_BOX = 3
"""Calls a run needs to be drawn as a box of its own: two calls read well side by side, and
a box would only add a level to drill through. (A call whose whole body is a run of two
still says so on its box.)"""


def _index(address: str) -> tuple[str, int] | None:
    prefix, dot, tail = address.rpartition(".")
    return (prefix, int(tail)) if dot and tail.isdigit() and prefix else None


def _body_items(
    ops: tuple[OpIR, ...], chain_of: Callable[[OpIR], tuple[str, ...]]
) -> dict[str | None, list[str | None]]:
    """Each body's items in execution order: kept calls by label, ops as None."""
    items: dict[str | None, list[str | None]] = {}
    seen: set[str] = set()
    last_op: dict[str | None, bool] = {}
    for op in ops:
        if op.role in (ROLE_INPUT, ROLE_OUTPUT):
            continue
        chain = chain_of(op)
        for i, c in enumerate(chain):
            if c not in seen:
                seen.add(c)
                parent = chain[i - 1] if i else None
                items.setdefault(parent, []).append(c)
                last_op[parent] = False
        inner = chain[-1] if chain else None
        if not last_op.get(inner, False):  # consecutive ops count as one item
            items.setdefault(inner, []).append(None)
            last_op[inner] = True
    return items


@dataclass
class _Candidate:
    body: str | None
    calls: list[str]
    prefix: str
    first: int
    whole: bool = False
    links: set[int] = field(default_factory=set)
    skips: int = 0
    leaks: int = 0
    leak_example: tuple[str, str] | None = None


def _candidates(
    items: Mapping[str | None, list[str | None]],
    by_label: Mapping[str, ModuleCallIR],
    notes: dict[str | None, list[str]],
) -> list[_Candidate]:
    out: list[_Candidate] = []
    for body, seq in items.items():
        i = 0
        while i < len(seq):
            c = seq[i]
            at = _index(by_label[c].address) if c is not None else None
            if c is None or at is None:
                i += 1
                continue
            cls = by_label[c].class_name
            calls = [c]
            j = i + 1
            stop = None
            while j < len(seq):
                nxt = seq[j]
                if nxt is None:
                    stop = "op"
                    break
                nat = _index(by_label[nxt].address)
                if nat is None or nat[0] != at[0] or nat[1] != at[1] + len(calls):
                    break
                if by_label[nxt].class_name != cls:
                    stop = f"`{by_label[nxt].address}` is a {by_label[nxt].class_name}, not a {cls}"
                    break
                calls.append(nxt)
                j += 1
            if len(calls) > 1:
                whole = body is not None and len(calls) == len(seq)
                out.append(_Candidate(body, calls, at[0], at[1], whole))
                if stop is not None and stop != "op":
                    notes.setdefault(body, []).append(
                        f"`{at[0]}.{at[1]}` .. `{at[0]}.{at[1] + len(calls) - 1}` "
                        f"are one run and the calls after it another: {stop}."
                    )
                elif stop == "op" and j + 1 < len(seq) and seq[j + 1] is not None:
                    after = _index(by_label[seq[j + 1]].address)  # type: ignore[index]
                    if after is not None and after[0] == at[0] and after[1] == at[1] + len(calls):
                        notes.setdefault(body, []).append(
                            f"ops run between `{at[0]}.{after[1] - 1}` and `{at[0]}.{after[1]}`, "
                            "so the calls before and after "
                            "them are drawn as separate runs."
                        )
            i = j if len(calls) > 1 else i + 1
    return out


def _check_chains(
    ops: tuple[OpIR, ...], chain_of: Callable[[OpIR], tuple[str, ...]], candidates: list[_Candidate]
) -> None:
    """One pass over the ops: which calls of each candidate feed the next (``links``),
    which hand values to a later call (``skips``), and which of its values other than the
    last call's leave it for anything but the model's return value (``leaks``)."""
    member: dict[str, tuple[int, int]] = {}
    for cid, cand in enumerate(candidates):
        for k, c in enumerate(cand.calls):
            member[c] = (cid, k)
    levels: dict[tuple[str, ...], dict[int, int]] = {}

    def level(chain: tuple[str, ...]) -> dict[int, int]:
        got = levels.get(chain)
        if got is None:
            got = levels[chain] = dict(member[c] for c in chain if c in member)
        return got

    home: dict[str, tuple[str, ...]] = {}
    for op in ops:
        if op.role == ROLE_INPUT:
            home[op.name] = ()
            continue
        chain = () if op.role == ROLE_OUTPUT else chain_of(op)
        mine = level(chain)
        for parent in op.parents:
            theirs = level(home.get(parent, ()))
            if not theirs and not mine:
                continue
            for cid, j in theirs.items():
                at = mine.get(cid)
                if at is None:
                    cand = candidates[cid]
                    if op.role != ROLE_OUTPUT and j < len(cand.calls) - 1:
                        cand.leaks += 1
                        if cand.leak_example is None:
                            cand.leak_example = (cand.calls[j], op.name)
                elif at == j + 1:
                    candidates[cid].links.add(at)
                elif at > j + 1:
                    candidates[cid].skips += 1
        if op.role != ROLE_OUTPUT:
            home[op.name] = chain


def _label(prefix: str, first: int, last: int, taken: set[str], *, ranged: bool) -> str:
    label = f"{prefix}[{first}..{last}]" if ranged else prefix
    while label in taken:
        label += "'"
    taken.add(label)
    return label


def find_runs(
    ops: tuple[OpIR, ...],
    kept: set[str],
    by_label: Mapping[str, ModuleCallIR],
    *,
    taken: set[str] | None = None,
    opened: frozenset[str] = frozenset(),
) -> Runs:
    """The runs among the ``kept`` calls (see the module docstring).

    ``taken`` holds names a run's label may not take. A run whose label is in ``opened`` is
    drawn open where it stands: its groups, or its calls one by one (the automatic depth
    opens a run that is most of a root that would read as too few boxes).
    """
    chains: dict[tuple[str, ...], tuple[str, ...]] = {}

    def chain_of(op: OpIR) -> tuple[str, ...]:
        got = chains.get(op.module_calls)
        if got is None:
            got = chains[op.module_calls] = tuple(c for c in op.module_calls if c in kept)
        return got

    runs = Runs()
    items = _body_items(ops, chain_of)
    candidates = _candidates(items, by_label, runs.notes)
    if not candidates:
        return runs
    _check_chains(ops, chain_of, candidates)
    names = set(taken if taken is not None else ()) | set(by_label)
    per_prefix: dict[str, int] = {}
    for cand in candidates:
        per_prefix[cand.prefix] = per_prefix.get(cand.prefix, 0) + 1
    for cand in candidates:
        n = len(cand.calls)
        first, last = cand.first, cand.first + n - 1
        span = f"`{cand.prefix}.{first}` .. `{cand.prefix}.{last}`"
        cls = by_label[cand.calls[0]].class_name
        if n < MIN_RUN_BOX and not cand.whole:
            continue
        why_not = _not_a_run(cand)
        if why_not is not None:
            runs.notes.setdefault(cand.body, []).append(
                f"{span} ({n} {cls} calls) are drawn one by one, not as a run: {why_not}."
            )
            continue
        params = sum(by_label[c].num_params for c in cand.calls)
        where: str | None
        if cand.whole and cand.body is not None:
            run = RunIR(
                cand.body, cand.prefix, cls, tuple(cand.calls), cand.body, first, last, None, cand.skips, params
            )
            runs.container[cand.body] = run
            owner = where = cand.body
        else:
            label = _label(cand.prefix, first, last, names, ranged=per_prefix[cand.prefix] > 1)
            run = RunIR(label, cand.prefix, cls, tuple(cand.calls), cand.body, first, last, None, cand.skips, params)
            if label in opened:
                runs.opened[label] = run
                if n <= RUN_CHAIN_MAX:
                    continue  # its calls are drawn one by one
                owner = label
                where = cand.body
            else:
                runs.boxes[label] = run
                owner = where = label
                for c in cand.calls:
                    runs.placed[c] = (label,)
        if n > RUN_CHAIN_MAX:
            _groups(runs, cand, cls, where, owner, names, by_label)
    return runs


def _not_a_run(cand: _Candidate) -> str | None:
    """Why a candidate's calls are not one run (they branch, or values leave them early)."""
    missing = [k for k in range(1, len(cand.calls)) if k not in cand.links]
    if missing:
        k, first = missing[0], cand.first
        return (
            f"`{cand.prefix}.{first + k}` does not take "
            f"`{cand.prefix}.{first + k - 1}`'s output (the calls branch rather than chain)"
        )
    if cand.leaks:
        src, dst = cand.leak_example or ("?", "?")
        return (
            f"{cand.leaks} value(s) of calls before the last "
            f"leave them (skip connections; e.g. from `{src}` to `{dst}`)"
        )
    return None


def _groups(
    runs: Runs,
    cand: _Candidate,
    cls: str,
    where: str | None,
    owner: str,
    names: set[str],
    by_label: Mapping[str, ModuleCallIR],
) -> None:
    """A long run's calls in groups (boxes inside the run's box), each call placed in its group."""
    n, first = len(cand.calls), cand.first
    size = GROUP_SIZE if n <= GROUP_SIZE * RUN_CHAIN_MAX else math.ceil(n / RUN_CHAIN_MAX)
    for start in range(0, n, size):
        part = cand.calls[start : start + size]
        a, b = first + start, first + start + len(part) - 1
        glabel = _label(cand.prefix, a, b, names, ranged=True)
        group_params = sum(by_label[c].num_params for c in part)
        runs.boxes[glabel] = RunIR(glabel, cand.prefix, cls, tuple(part), where, a, b, owner, 0, group_params)
        for c in part:
            runs.placed[c] = (*runs.placed.get(c, ()), glabel)

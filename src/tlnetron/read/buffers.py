"""The buffer density policy (``show_buffers``), shared by every view.

``never`` drops every buffer pseudo-op; ``meaningful`` (default) drops BatchNorm bookkeeping
buffers (``running_mean``, ``running_var``, ``num_batches_tracked``); ``always`` keeps all.
Under ``never`` and ``meaningful`` a compute op whose every neighbour is hidden (the
train-mode counter chain ``buffer -> add_ -> buffer``) is hidden too. Inputs of kept ops that
came from hidden nodes are dropped, so no edge dangles.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, replace

from .._generated.vocab import BufferPolicy
from ..ir.trace import ROLE_BUFFER, ROLE_OP, OpIR

__all__ = ["BufferResult", "apply_buffer_policy", "hides_buffer"]

_BOOKKEEPING = ("running_mean", "running_var", "num_batches_tracked")


@dataclass(frozen=True, slots=True)
class BufferResult:
    """The ops that remain, and what was hidden (totals and per innermost module call)."""

    ops: tuple[OpIR, ...]
    hidden_buffers: int
    hidden_ops: int
    hidden_by_call: tuple[tuple[str, int, int], ...]


def hides_buffer(policy: str, address: str | None) -> bool:
    """Whether ``policy`` hides the buffer pseudo-op at ``address`` by itself."""
    if policy == BufferPolicy.ALWAYS:
        return False
    if policy == BufferPolicy.NEVER:
        return True
    return (address or "").rsplit(".", 1)[-1] in _BOOKKEEPING


def apply_buffer_policy(ops: tuple[OpIR, ...], policy: str) -> BufferResult:
    """Apply ``policy`` to ``ops`` (execution order kept)."""
    if policy == BufferPolicy.ALWAYS:
        return BufferResult(ops, 0, 0, ())
    hidden: set[str] = set()
    for op in ops:
        if op.role == ROLE_BUFFER and hides_buffer(policy, op.buffer_address):
            hidden.add(op.name)
    if not hidden:
        return BufferResult(ops, 0, 0, ())
    children: dict[str, list[str]] = {}
    compute: dict[str, OpIR] = {}
    seeds: list[str] = []
    for op in ops:
        name = op.name
        if op.role == ROLE_OP:
            compute[name] = op
        for p in op.parents:
            children.setdefault(p, []).append(name)
            if name in hidden:
                seeds.append(p)  # a hidden buffer's parent
        if name in hidden:
            continue
        if any(p in hidden for p in op.parents):
            seeds.append(name)  # a hidden buffer's child
    # An op is hidden when every dataflow neighbour is hidden, so only neighbours of hidden
    # nodes can be; hiding one can hide its neighbours in turn (a worklist from those seeds
    # reaches the same fixed point as repeated sweeps over every op).
    hidden_ops: set[str] = set()
    pending = [n for n in seeds if n in compute]
    while pending:
        name = pending.pop()
        if name in hidden_ops:
            continue
        around = (*compute[name].parents, *children.get(name, ()))
        if around and all(n in hidden or n in hidden_ops for n in around):
            hidden_ops.add(name)
            pending.extend(n for n in around if n in compute and n not in hidden_ops)
    gone = hidden | hidden_ops
    by_call: Counter[tuple[str, str]] = Counter()
    kept: list[OpIR] = []
    for op in ops:
        if op.name in gone:
            call = op.module_calls[-1] if op.module_calls else ""
            by_call[(call, "buffer" if op.name in hidden else "op")] += 1
            continue
        if any(p in gone for p in op.parents):
            pairs = [(p, port) for p, port in zip(op.parents, op.ports) if p not in gone]
            op = replace(op, parents=tuple(p for p, _ in pairs), ports=tuple(q for _, q in pairs))
        kept.append(op)
    calls = sorted({c for c, _ in by_call})
    return BufferResult(
        tuple(kept),
        len(hidden),
        len(hidden_ops),
        tuple((c, by_call[(c, "buffer")], by_call[(c, "op")]) for c in calls),
    )

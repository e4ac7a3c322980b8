"""Which argument slot each parent of an op fills (``arg0``, ``weight``, ``arg1[0]``), from
the op's recorded argument positions: the ports its edges attach to."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

__all__ = ["ARG_PORTS", "port_names", "wire"]


def _position_key(pos: Any) -> tuple[Any, ...]:
    return pos if isinstance(pos, tuple) else (pos,)


def port_names(arg_positions: Any, parents_raw: tuple[str, ...]) -> dict[str, list[str]]:
    """Map each raw parent reference to the argument slots it fills, in order."""
    slots: dict[str, list[str]] = {}
    if not isinstance(arg_positions, dict):
        return slots
    args = arg_positions.get("args") or {}
    if args:
        positions = list(args)
        if len(positions) > 1:
            positions.sort(key=_position_key)
        for pos in positions:
            ref = args[pos]
            if type(pos) is int:
                name = f"arg{pos}"
            elif isinstance(pos, tuple):
                name = f"arg{pos[0]}" + "".join(f"[{p}]" for p in pos[1:])
            else:
                name = f"arg{pos}"
            slots.setdefault(str(ref), []).append(name)
    kwargs = arg_positions.get("kwargs") or {}
    for key, ref in kwargs.items():
        if isinstance(key, tuple):
            name = str(key[0]) + "".join(f"[{p}]" for p in key[1:])
        else:
            name = str(key)
        slots.setdefault(str(ref), []).append(name)
    return slots


ARG_PORTS = tuple(f"arg{i}" for i in range(64))


def wire(
    name: Callable[[str], str], parents_raw: tuple[str, ...], arg_positions: Any
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Parent node names in argument order, and the argument slot each one fills."""
    if len(parents_raw) == 1 and type(arg_positions) is dict and not arg_positions.get("kwargs"):
        # The most common op: one tensor argument, in one positional slot.
        args = arg_positions.get("args")
        if args and len(args) == 1:
            ((pos, ref),) = args.items()
            only = parents_raw[0]
            if type(pos) is int and 0 <= pos < 64 and (ref if type(ref) is str else str(ref)) == only:
                return (name(only),), (ARG_PORTS[pos],)
    unique = len(parents_raw) == 1 or len(set(parents_raw)) == len(parents_raw)
    if unique and type(arg_positions) is dict and not arg_positions.get("kwargs"):
        # The common case: positional tensors only, no parent twice. Each parent fills its
        # lowest position (as port_names orders them).
        lowest: dict[str, int] = {}
        for pos, ref in (arg_positions.get("args") or {}).items():
            if type(pos) is not int:
                break
            ref = ref if type(ref) is str else str(ref)
            known = lowest.get(ref)
            if known is None or pos < known:
                lowest[ref] = pos
        else:
            names: list[str] = []
            ports: list[str] = []
            for i, ref in enumerate(parents_raw):
                names.append(name(ref))
                pos = lowest.get(ref)
                ports.append(f"in{i}" if pos is None else ARG_PORTS[pos] if pos < 64 else f"arg{pos}")
            return tuple(names), tuple(ports)
    slots = port_names(arg_positions, parents_raw)
    if unique:
        names_of = [name(ref) for ref in parents_raw]
        slot_of = [slots.get(ref) for ref in parents_raw]
        return tuple(names_of), tuple(s[0] if s else f"in{i}" for i, s in enumerate(slot_of))
    parents: list[str] = []
    port_list: list[str] = []
    used: Counter[str] = Counter()
    for ref in parents_raw:
        parents.append(name(ref))
        slot_names = slots.get(ref, ())
        k = used[ref]
        used[ref] += 1
        port_list.append(slot_names[k] if k < len(slot_names) else f"in{len(port_list)}")
    return tuple(parents), tuple(port_list)

"""``record``: the decorator for tlnetron's per-op and per-node data classes.

An export creates a few objects per op (IR op, node, value, type, facts). A
``dataclass(frozen=True)`` pays one ``object.__setattr__`` call per field in ``__init__``,
several times what a plain slots class costs per record. Records are therefore plain slots dataclasses
at run time, still hashable like frozen ones, and *frozen to the type checker*
(``dataclass_transform(frozen_default=True)``): ``mypy --strict`` (run in CI) rejects any
assignment to a field, so nothing in tlnetron mutates a record after construction; use
``dataclasses.replace`` to derive a changed copy.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeVar, dataclass_transform

__all__ = ["record"]

_T = TypeVar("_T")


@dataclass_transform(frozen_default=True)
def record(cls: type[_T]) -> type[_T]:
    """A slots dataclass, hashable by value, immutable by contract (see the module doc)."""
    return dataclass(slots=True, unsafe_hash=True)(cls)

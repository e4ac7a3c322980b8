"""Stage 3, views, in one registry: each granularity names the function that projects a trace
and what that function needs the trace reader to read.

Every view has one signature, ``project(ir, options, progress) -> Projection``: the IR,
the export's checked :class:`~tlnetron.options.ExportOptions`, and a ``progress(done, of)``
tick (None when nobody listens). A new view is a module with that function and one entry
here (plus its name in the ``granularity`` vocabulary of ``schema/``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from .._generated.vocab import GRANULARITY, Granularity
from ..ir.drawing import Projection
from ..ir.trace import TraceIR
from ..options import ExportOptions
from .module import project_module
from .op import project_op
from .rolled import project_rolled

__all__ = ["Project", "Reads", "VIEWS", "View", "view"]


class Project(Protocol):
    def __call__(
        self, ir: TraceIR, options: ExportOptions, progress: Callable[[int, int], None] | None = None
    ) -> Projection: ...


@dataclass(frozen=True, slots=True)
class Reads:
    """What a view needs from the trace reader beyond every op's own facts."""

    module_calls: bool = False
    """The module-call stack of every op and the calls themselves."""
    brief_repeats: bool = False
    """Only what varies between passes of a repeated layer (the rolled view keeps the first's identity)."""


@dataclass(frozen=True, slots=True)
class View:
    granularity: str
    project: Project
    reads: Reads


VIEWS: dict[str, View] = {
    Granularity.MODULE: View(Granularity.MODULE, project_module, Reads(module_calls=True)),
    Granularity.OP: View(Granularity.OP, project_op, Reads()),
    Granularity.ROLLED: View(Granularity.ROLLED, project_rolled, Reads(brief_repeats=True)),
}
if tuple(sorted(VIEWS)) != tuple(sorted(GRANULARITY)):  # pragma: no cover - caught by the import in every test
    raise RuntimeError(
        f"the views registry {sorted(VIEWS)} does not match the granularity vocabulary {sorted(GRANULARITY)}"
    )


def view(granularity: str) -> View:
    """The registered view of ``granularity`` (checked by :func:`~tlnetron.options.check_options`)."""
    return VIEWS[granularity]

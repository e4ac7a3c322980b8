"""Progress reports of an export: the stages, their estimated shares, and the counting.

:func:`tlnetron.export` takes a ``progress(stage, done, total)`` hook (:data:`Progress`);
:class:`Steps` turns stage starts and in-stage counts into those calls, and
:func:`every_share` counts the items of a long stage without costing anything when no
hook listens.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import TypeVar

from .options import check_progress

__all__ = ["PROGRESS_STAGES", "Progress", "Steps", "every_share", "report_every"]

_T = TypeVar("_T")

Progress = Callable[[str, int, int], None]

PROGRESS_STAGES = (
    ("read", 28),
    ("project", 17),
    ("metadata", 5),
    ("companion", 13),
    ("build", 19),
    ("check", 15),
    ("write", 3),
)
"""An export's stages in order, each with its estimated share of the export (percent).

Each CPU stage's median share of the instructions of whole exports over real models and
views (``benchmarks/instructions.py --stages``), with the write's share of a large export's
time (it waits on the disk); ``progress(stage, done, total)`` reports ``done / total`` from
these (how closely they track the time is in ``benchmarks/README.md``)."""


class Steps:
    """Calls a :data:`Progress` hook with the share of the export done, in units of 1/1000
    of the stages this export runs (the companion's is left out when none is written)."""

    __slots__ = ("_hook", "_start", "_span", "_stage", "total")

    def __init__(self, hook: Progress | None, *, companion: bool) -> None:
        check_progress(hook)
        self._hook = hook
        self._start: dict[str, int] = {}
        self._span: dict[str, int] = {}
        self._stage = ""
        pos = 0
        for stage, share in PROGRESS_STAGES:
            if stage == "companion" and not companion:
                continue
            self._start[stage] = pos
            self._span[stage] = share * 10
            pos += share * 10
        self.total = pos

    def begin(self, stage: str) -> None:
        self._stage = stage
        if self._hook is not None:
            self._hook(stage, self._start[stage], self.total)

    def within(self, done: int, of: int) -> None:
        """``done`` of the current stage's ``of`` parts are done (reported inside long stages)."""
        if self._hook is not None and of > 0:
            stage = self._stage
            self._hook(stage, self._start[stage] + self._span[stage] * min(done, of) // of, self.total)

    def ticks(self, share: float = 1.0) -> Callable[[int, int], None] | None:
        """A ``report(done, n)`` for a loop that is the first ``share`` of the current stage,
        or None when no hook listens (the loop then skips its counting)."""
        if self._hook is None:
            return None
        scale = round(share * 1000)
        within = self.within
        return lambda done, n: within(done * scale, n * 1000)

    def finish(self) -> None:
        if self._hook is not None:
            self._hook("done", self.total, self.total)


_REPORT_AT_LEAST = 50


def report_every(n: int) -> int | None:
    """How many of ``n`` items a long stage handles between two reports: about 2% of them,
    at least 50; None when ``n`` is under 100 (a stage that short takes milliseconds)."""
    return None if n < 2 * _REPORT_AT_LEAST else max(_REPORT_AT_LEAST, n // 50)


def every_share(items: Iterable[_T], n: int, report: Callable[[int, int], None] | None) -> Iterable[_T]:
    """``items`` (``n`` of them), calling ``report(done, n)`` every :func:`report_every` items.

    Without ``report`` it is ``items`` itself, so a stage that is not watched pays nothing.
    """
    every = None if report is None else report_every(n)
    if report is None or every is None:
        return items
    return _reporting(items, n, report, every)


def _reporting(items: Iterable[_T], n: int, report: Callable[[int, int], None], every: int) -> Iterator[_T]:
    countdown = every
    done = 0
    for item in items:
        yield item
        countdown -= 1
        if not countdown:
            done += every
            countdown = every
            report(done, n)

"""Open bugs in ``src/`` that make ``export_ir`` refuse a valid trace, and how to step around them.

Each entry names the bug, recognises its *exact* signature in an export outcome, and knows
how to *sidestep* it: change the trace as little as possible so the bug no longer fires.
The broad property tests then check the sidestepped trace (so they keep hunting for other
bugs instead of stopping at the first known one); each sidestep is recorded with ``event``
(see ``--hypothesis-show-statistics``) and ``note``. Each open bug also has its own test
asserting the correct behaviour on a minimal trace, marked ``xfail(strict=False)`` with the
bug named. When a bug is fixed: delete its entry here and the mark there, and keep its
minimal trace as an ``@example`` of the property test (house style).

Fixed so far (their traces are ``@example``s in ``test_export_properties.py``):

* ``untyped_graph_io`` -- a graph input/output with no faithful ONNX type was written as
  ``tensorType{elemType: 0}`` without a shape and failed ``onnx.checker``, so the export
  refused with ``artifact_invalid`` (fixed in d2843aa: loose types, input/output nodes).
* ``zero_io_module_call`` -- a module call taking nothing from outside and giving nothing
  back (a call holding only a counter chain) became a node with no inputs and no outputs
  and failed ``onnx.checker`` (fixed in d2843aa: idle calls dissolve into their parent).

Fixed, found by the oracle rather than by a refusal (``test_export_properties.py``):

* ``module_view_totals_skip_buffers`` -- the model's captured-bytes total left buffer
  bytes out in the module view but counted them in the op and rolled views (fixed in
  9d8144e: totals over compute ops in every view).
* ``nonfinite_fact_worded`` -- a NaN / infinite duration was worded ``nan ns observed wall
  time`` in node and model metadata when no companion was written, and refused the whole
  export when one was (fixed in 9d8144e: unknown or impossible facts are absent).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hypothesis import event, note

from oracle import Outcome, ir_literal, run_export
from tlnetron.ir.trace import TraceIR

__all__ = ["KNOWN_BUGS", "KnownBug", "export_sidestepping", "known_bug", "refused_with"]


@dataclass(frozen=True)
class KnownBug:
    name: str
    summary: str
    matches: Callable[[Outcome], bool]
    sidestep: Callable[[TraceIR, Outcome], TraceIR]


def refused_with(code: str, text: str) -> Callable[[Outcome], bool]:
    """A matcher: the export refused with ``code`` and a message containing ``text``."""

    def matches(outcome: Outcome) -> bool:
        err = outcome.error
        return err is not None and err.code == code and text in str(err)

    return matches


KNOWN_BUGS: tuple[KnownBug, ...] = ()


def known_bug(outcome: Outcome) -> KnownBug | None:
    """The known bug ``outcome`` shows, or None (recorded as an event and a note)."""
    for bug in KNOWN_BUGS:
        if bug.matches(outcome):
            event(f"known bug: {bug.name}")
            note(f"known bug {bug.name}: {outcome.error}")
            return bug
    return None


def export_sidestepping(ir: TraceIR, directory: Path, options: dict[str, Any]) -> tuple[TraceIR, Outcome]:
    """Export ``ir``; while a known bug fires, sidestep it and export again.

    Returns the trace finally exported and its outcome (which may still be a refusal).
    """
    outcome = run_export(ir, directory, options)
    for _ in range(8):
        bug = known_bug(outcome)
        if bug is None:
            break
        ir = bug.sidestep(ir, outcome)
        note(f"sidestepped {bug.name}: {ir_literal(ir)}")
        outcome = run_export(ir, directory, options)
    return ir, outcome

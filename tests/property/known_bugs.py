"""Bugs in ``src/`` the property tests found and that are not fixed yet.

Each entry names the bug, recognises its *exact* signature in an export outcome, and knows
how to *sidestep* it: change the trace as little as possible so the bug no longer fires.
The broad property tests then check the sidestepped trace (so they keep hunting for other
bugs instead of stopping at the first known one); the sidestep is recorded with ``event``
(see ``--hypothesis-show-statistics``) and ``note``. Each bug also has its own test in
``test_known_bugs.py`` that asserts the correct behaviour on a minimal trace and is marked
``xfail(strict=False)`` with the bug named.

When the lead fixes a bug: delete its entry here and its ``xfail`` mark there.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, replace

from hypothesis import event, note

from pathlib import Path
from typing import Any

from oracle import Outcome, expected_type, ir_literal, run_export
from tlnetron.ir import ROLE_INPUT, ROLE_OUTPUT, TraceIR

__all__ = ["KNOWN_BUGS", "KnownBug", "export_sidestepping", "known_bug"]


@dataclass(frozen=True)
class KnownBug:
    name: str
    summary: str
    matches: Callable[[Outcome], bool]
    sidestep: Callable[[TraceIR, Outcome], TraceIR]


def _refused_with(text: str) -> Callable[[Outcome], bool]:
    def matches(outcome: Outcome) -> bool:
        err = outcome.error
        return err is not None and err.code == "artifact_invalid" and text in str(err)

    return matches


def _type_graph_io(ir: TraceIR, outcome: Outcome) -> TraceIR:
    """Give every graph input and output value a faithful type ([1] float32).

    Outputs' parents are retyped in every pass of their layer, so the rolled view agrees too.
    """
    layer_of = {op.name: op.layer for op in ir.ops}
    io_layers = {layer_of[p] for op in ir.ops if op.role == ROLE_OUTPUT for p in op.parents}
    by_layer: dict[str, set[tuple[object, object]]] = {}
    for op in ir.ops:
        by_layer.setdefault(op.layer, set()).add((op.shape, op.dtype))
    ops = []
    for op in ir.ops:
        io = op.role in (ROLE_INPUT, ROLE_OUTPUT) or op.layer in io_layers
        untyped = expected_type(op.shape, op.dtype) is None or len(by_layer[op.layer]) > 1
        ops.append(replace(op, shape=(1,), dtype="float32") if io and untyped else op)
    return replace(ir, ops=tuple(ops))


_ZERO_IO = re.compile(r"NodeProto \(name: (.*), type: .*\) has zero input and zero output", re.S)


def _dissolve_call(ir: TraceIR, outcome: Outcome) -> TraceIR:
    """Move the ops of the offending call (and of every call inside it) to the enclosing call."""
    m = _ZERO_IO.search(str(outcome.error))
    assert m, str(outcome.error)
    label = m.group(1)
    children: dict[str | None, list[str]] = {}
    for c in ir.calls:
        children.setdefault(c.parent, []).append(c.label)
    gone = {label}
    todo = [label]
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in gone:
                gone.add(child)
                todo.append(child)
    address = {c.label: c.address for c in ir.calls}
    ops = []
    for op in ir.ops:
        if not gone.intersection(op.module_calls):
            ops.append(op)
            continue
        stack = tuple(c for c in op.module_calls if c not in gone)
        path = (address[stack[-1]] if stack else None) if op.module_path is not None else None
        ops.append(replace(op, module_calls=stack, module_path=path))
    return replace(ir, ops=tuple(ops))


KNOWN_BUGS: tuple[KnownBug, ...] = (
    KnownBug(
        "untyped_graph_io",
        "A graph input or output with no faithful ONNX type (dtype None / complex32 / quint8, "
        "shape None or symbolic, rolled shape drift) is written as tensorType{elemType: 0} with "
        "no shape; onnx.checker rejects it ('Field 'shape' of 'type' is required but missing'), "
        "so the export refuses with artifact_invalid.",
        _refused_with("Field 'shape' of 'type' is required but missing"),
        _type_graph_io,
    ),
    KnownBug(
        "zero_io_module_call",
        "Module view: a kept module call that neither consumes a value from outside nor produces "
        "one used outside (a call holding only the counter chain buffer -> add_ -> buffer under "
        "show_buffers='always') becomes a NodeProto with no inputs and no outputs; onnx.checker "
        "rejects it, so the export refuses with artifact_invalid.",
        _refused_with("has zero input and zero output"),
        _dissolve_call,
    ),
)


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

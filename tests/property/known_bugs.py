"""Bugs in ``src/`` the property tests found and that are not fixed yet.

Each entry names the bug and recognises its *exact* signature in an export outcome. The
broad property tests set such an outcome aside (``event`` + ``note``, counted in the
Hypothesis statistics) so they keep hunting for new bugs; each bug has its own test
(``test_known_bugs.py``) that asserts the correct behaviour on a minimal trace and is marked
``xfail(strict=False)`` with the bug named. When the lead fixes a bug: delete its entry here
and the ``xfail`` mark there (the test then XPASSes until the mark goes).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from hypothesis import event, note

from oracle import Outcome, expected_type
from tlnetron.ir import ROLE_INPUT, ROLE_OUTPUT, TraceIR

__all__ = ["KNOWN_BUGS", "known_bug", "sidestep"]


def _untyped_graph_io(outcome: Outcome) -> bool:
    err = outcome.error
    return (
        err is not None
        and err.code == "artifact_invalid"
        and "Field 'shape' of 'type' is required but missing" in str(err)
    )


def _type_graph_io(ir: TraceIR) -> TraceIR:
    """``ir`` with every graph input and output value given a faithful type ([1] float32).

    Outputs' parents are retyped in every pass of their layer, so the rolled view agrees too.
    """
    layers = {p for op in ir.ops if op.role == ROLE_OUTPUT for p in op.parents}
    layer_of = {op.name: op.layer for op in ir.ops}
    io_layers = {layer_of[p] for p in layers}
    by_layer: dict[str, list[tuple[object, object]]] = {}
    for op in ir.ops:
        by_layer.setdefault(op.layer, []).append((op.shape, op.dtype))
    ops = []
    for op in ir.ops:
        io = op.role in (ROLE_INPUT, ROLE_OUTPUT) or op.layer in io_layers
        untyped = expected_type(op.shape, op.dtype) is None or len(set(by_layer[op.layer])) > 1
        ops.append(replace(op, shape=(1,), dtype="float32") if io and untyped else op)
    return replace(ir, ops=tuple(ops))


KNOWN_BUGS: dict[str, Callable[[Outcome], bool]] = {
    # A graph input or output with no faithful ONNX type (dtype None / complex32 / quint8,
    # shape None or symbolic, rolled shape drift) is written as tensorType{elemType: 0}
    # with no shape; onnx.checker rejects that, so the export refuses with
    # artifact_invalid ("this is a bug in tlnetron").
    "untyped_graph_io": _untyped_graph_io,
}


SIDESTEPS: dict[str, Callable[[TraceIR], TraceIR]] = {
    "untyped_graph_io": _type_graph_io,
}


def sidestep(name: str, ir: TraceIR) -> TraceIR:
    """``ir`` changed as little as possible so it no longer triggers known bug ``name``."""
    return SIDESTEPS[name](ir)


def known_bug(outcome: Outcome) -> str | None:
    """The name of the known bug ``outcome`` shows, or None (and record it as an event)."""
    for name, matches in KNOWN_BUGS.items():
        if matches(outcome):
            event(f"known bug: {name}")
            note(f"known bug {name}: {outcome.error}")
            return name
    return None

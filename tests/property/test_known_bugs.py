"""Bugs the property tests found in ``src/``, each pinned by its minimal trace.

Every test asserts the *correct* behaviour (the export succeeds and passes the oracle) and
is marked ``xfail(strict=False)`` naming the bug until the lead fixes it; ``known_bugs.py``
describes each bug and lets the broad property tests sidestep it meanwhile. When a bug is
fixed, remove its mark here and its entry in ``known_bugs.py``.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from oracle import check_outcome, run_export
from strategies import BUFFER_POLICIES, GRANULARITIES
from tlnetron.ir import Honesty, ModuleCallIR, OpIR, TraceIR

# --- untyped_graph_io ------------------------------------------------------------------
# The smallest trace: one input whose dtype has no ONNX element type, returned as is.


def _io_trace(dtype: str | None, shape: tuple[int | str, ...] | None) -> TraceIR:
    return TraceIR(
        ops=(
            OpIR("input_1", "input_1", 1, 1, "input", "input", shape, dtype),
            OpIR("relu_1_1", "relu_1_1", 1, 1, "relu", "op", (2,), "float32", parents=("input_1",), ports=("arg0",)),
            OpIR("output_1", "output_1", 1, 1, "output", "output", shape, dtype, parents=("relu_1_1",), ports=("arg0",)),
        ),
        honesty=Honesty(capture_status="complete"),
    )


UNTYPED_INPUT = TraceIR(
    ops=(
        OpIR("input_1", "input_1", 1, 1, "input", "input", (2,), "complex32"),
        OpIR("output_1", "output_1", 1, 1, "output", "output", (2,), "complex32", parents=("input_1",), ports=("arg0",)),
    ),
    honesty=Honesty(capture_status="complete"),
)

# The rolled view of a recurrent layer whose output shape drifts across passes.
DRIFTING_OUTPUT = TraceIR(
    ops=(
        OpIR("input_1", "input_1", 1, 1, "input", "input", (1, 4), "float32"),
        OpIR("cat_1_1:1", "cat_1_1", 1, 2, "cat", "op", (2, 4), "float32", parents=("input_1", "input_1"), ports=("arg0[0]", "arg0[1]")),
        OpIR("cat_1_1:2", "cat_1_1", 2, 2, "cat", "op", (3, 4), "float32", parents=("cat_1_1:1", "input_1"), ports=("arg0[0]", "arg0[1]")),
        OpIR("output_1", "output_1", 1, 1, "output", "output", (3, 4), "float32", parents=("cat_1_1:2",), ports=("arg0",)),
    ),
    honesty=Honesty(capture_status="complete"),
)


@pytest.mark.xfail(strict=False, reason="bug untyped_graph_io: an untyped graph input/output fails onnx.checker (artifact_invalid)")
@pytest.mark.parametrize("granularity", GRANULARITIES)
@example(ir=UNTYPED_INPUT, show_buffers="meaningful")
@example(ir=DRIFTING_OUTPUT, show_buffers="meaningful")
@given(
    ir=st.builds(
        _io_trace,
        st.sampled_from((None, "complex32", "quint8", "float32")),
        st.sampled_from((None, ("batch", 3), (-1,), (2, 3))),
    ),
    show_buffers=st.sampled_from(BUFFER_POLICIES),
)
def test_untyped_graph_io_exports(granularity: str, ir: TraceIR, show_buffers: str, tmp_path_factory: pytest.TempPathFactory) -> None:
    outcome = run_export(ir, tmp_path_factory.mktemp("io"), {"granularity": granularity, "show_buffers": show_buffers})
    assert outcome.error is None, str(outcome.error)
    check_outcome(ir, outcome)


# --- zero_io_module_call ----------------------------------------------------------------
# A module whose only work is the train-mode counter chain on its own buffer.

COUNTER_ONLY_CALL = TraceIR(
    ops=(
        OpIR("input_1", "input_1", 1, 1, "input", "input", (2,), "float32"),
        OpIR("buffer_1", "buffer_1", 1, 1, "buffer", "buffer", (), "int64", module_calls=("counter:1",), buffer_address="counter.num_batches_tracked", buffer_access="read"),
        OpIR("add_1_1", "add_1_1", 1, 1, "add_", "op", (), "int64", parents=("buffer_1",), ports=("arg0",), module_calls=("counter:1",), module_path="counter"),
        OpIR("buffer_2", "buffer_2", 1, 1, "buffer", "buffer", (), "int64", parents=("add_1_1",), ports=("arg0",), module_calls=("counter:1",), buffer_address="counter.num_batches_tracked", buffer_access="write (inplace)"),
        OpIR("output_1", "output_1", 1, 1, "output", "output", (2,), "float32", parents=("input_1",), ports=("arg0",)),
    ),
    calls=(ModuleCallIR("counter:1", "counter", 1, "StepCounter", None),),
    honesty=Honesty(capture_status="complete"),
)

# Dead code inside a call: a constant built and scaled, never used outside.
DEAD_CODE_CALL = TraceIR(
    ops=(
        OpIR("input_1", "input_1", 1, 1, "input", "input", (2,), "float32"),
        OpIR("ones_1_1", "ones_1_1", 1, 1, "ones", "op", (3,), "float32", module_calls=("aux:1",), module_path="aux"),
        OpIR("mul_1_2", "mul_1_2", 1, 1, "mul", "op", (3,), "float32", parents=("ones_1_1",), ports=("arg0",), module_calls=("aux:1",), module_path="aux"),
        OpIR("output_1", "output_1", 1, 1, "output", "output", (2,), "float32", parents=("input_1",), ports=("arg0",)),
    ),
    calls=(ModuleCallIR("aux:1", "aux", 1, "Aux", None),),
    honesty=Honesty(capture_status="complete"),
)


@pytest.mark.xfail(strict=False, reason="bug zero_io_module_call: a module call with no inputs and no outputs fails onnx.checker (artifact_invalid)")
@pytest.mark.parametrize(
    ("ir", "show_buffers"),
    [(COUNTER_ONLY_CALL, "always"), (DEAD_CODE_CALL, "meaningful")],
    ids=["counter_only_call", "dead_code_call"],
)
def test_zero_io_module_call_exports(ir: TraceIR, show_buffers: str, tmp_path: Path) -> None:
    outcome = run_export(ir, tmp_path, {"granularity": "module", "show_buffers": show_buffers})
    assert outcome.error is None, str(outcome.error)
    check_outcome(ir, outcome)

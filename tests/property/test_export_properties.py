"""Property: every random trace exports to a fully valid artifact, or is refused cleanly.

For each granularity (parametrized) x show_buffers (x depth, attachment; drawn), a random
internally consistent ``TraceIR`` (see ``strategies.py``) is exported with ``export_ir``.
The outcome must be (a) a success that passes every check in ``oracle.py`` (strict proto
parse, ``onnx.checker`` full check, jsonschema on model metadata and node properties,
companion rows that resolve, finite numbers, typed edges that match the trace,
``tlnetron.validation`` silent) or (b) a ``TlnetronError`` with a documented code that
wrote nothing. A *clean* trace (no line breaks in node names or call labels, finite
durations) must succeed. Exporting the same trace twice gives byte-identical files.
Warnings must be ``TlnetronWarning`` with a documented code.
"""

from __future__ import annotations

import math
import tempfile
from pathlib import Path

import pytest
from hypothesis import example, given, note
from hypothesis import strategies as st

from known_bugs import known_bug, sidestep
from oracle import check_outcome, files_of, ir_literal, run_export
from strategies import BUFFER_POLICIES, GRANULARITIES, check_consistent, export_options, trace_irs
from tlnetron.ir import Honesty, ModuleCallIR, OpIR, TraceIR


def _op(name: str, op_type: str, parents: tuple[str, ...] = (), **kw: object) -> OpIR:
    base: dict[str, object] = {
        "name": name,
        "layer": name,
        "pass_index": 1,
        "num_passes": 1,
        "op_type": op_type,
        "role": "op",
        "shape": (2, 3),
        "dtype": "float32",
        "parents": parents,
        "ports": tuple(f"arg{i}" for i in range(len(parents))),
    }
    base.update(kw)
    return OpIR(**base)  # type: ignore[arg-type]


# x * x, a counter chain inside a train-mode BatchNorm call, a split, a layer run twice
# with shape drift, and a model returning an input and one value twice.
SQUARE_AND_COUNTER = TraceIR(
    ops=(
        _op("input_1", "input", role="input"),
        _op("mul_1_1", "mul", ("input_1", "input_1"), module_calls=("bn:1",), module_path="bn"),
        _op("buffer_1", "buffer", role="buffer", shape=(), dtype="int64", module_calls=("bn:1",), buffer_address="bn.num_batches_tracked", buffer_access="read"),
        _op("add_1_2", "add_", ("buffer_1",), shape=(), dtype="int64", module_calls=("bn:1",), module_path="bn"),
        _op("buffer_2", "buffer", ("add_1_2",), role="buffer", shape=(), dtype="int64", module_calls=("bn:1",), buffer_address="bn.num_batches_tracked", buffer_access="write (inplace)"),
        _op("split_1_3", "split", ("mul_1_1",), shape=(2, 0), multi_output_index=0),
        _op("split_2_4", "split", ("mul_1_1",), shape=(2, 3), multi_output_index=1),
        _op("linear_1_5:1", "linear", ("split_2_4",), layer="linear_1_5", num_passes=2, module_calls=("fc:1",), module_path="fc"),
        _op("linear_1_5:2", "linear", ("linear_1_5:1",), layer="linear_1_5", pass_index=2, num_passes=2, shape=(2, 4), module_calls=("fc:2",), module_path="fc"),
        _op("output_1", "output", ("linear_1_5:2",), role="output", shape=(2, 4)),
        _op("output_2", "output", ("input_1",), role="output"),
        _op("output_3", "output", ("linear_1_5:2",), role="output", shape=(2, 4)),
    ),
    calls=(
        ModuleCallIR("bn:1", "bn", 1, "BatchNorm1d", None, 8),
        ModuleCallIR("fc:1", "fc", 1, "Linear", None, 20),
        ModuleCallIR("fc:2", "fc", 2, "Linear", None, 20),
    ),
    honesty=Honesty(capture_status="complete"),
)

# Odd names everywhere, 0-d / 6-D / huge / zero-size shapes, dtypes without an ONNX type,
# facts at their extremes.
ODD_NAMES = TraceIR(
    ops=(
        _op("input 'é'", "input", role="input", shape=(), dtype="complex32", nbytes=0),
        _op("中文_1_1", "<b>&amp;", ("input 'é'",), shape=(2, 0, 1, 1, 1, 2**40), dtype="quint8", module_calls=('a "b":1',), module_path='a "b"', duration_s=-1e-6, flops=10**18, nbytes=2**63 - 1),
        _op("😀_1_2", "relu", ("中文_1_1", "中文_1_1"), shape=None, dtype=None, module_calls=('a "b":1', 'a "b".c\nd:1'), module_path='a "b".c\nd', duration_s=0.0, flops=0),
        _op("x_1_3", "to", ("😀_1_2",), shape=(1, 2, 3, 4, 5), dtype="bfloat16", module_calls=('a "b":1', 'a "b".c\nd:1'), module_path='a "b".c\nd', ports=("it's",)),
        _op("output_1", "output", ("x_1_3",), role="output", shape=(1, 2, 3, 4, 5), dtype="bfloat16"),
    ),
    calls=(
        ModuleCallIR('a "b":1', 'a "b"', 1, "Wrap<per>\nclass", None, 0),
        ModuleCallIR('a "b".c\nd:1', 'a "b".c\nd', 1, "中文 Class", 'a "b":1', 10**12),
    ),
    model_class="Model\n<i>x</i>",
    honesty=Honesty(capture_status="halted", reason="stopped\nhere", verified=False, interventions=(("set", "é", "sel\n", 3),)),
)

# A NaN duration a wrong reader let through: the export must stay finite or refuse.
NAN_DURATION = TraceIR(
    ops=(
        _op("input_1", "input", role="input"),
        _op("relu_1_1", "relu", ("input_1",), duration_s=math.nan, flops=1),
        _op("relu_2_2", "relu", ("relu_1_1",), duration_s=math.inf),
        _op("output_1", "output", ("relu_2_2",), role="output"),
    ),
)


def _clean(ir: TraceIR) -> bool:
    """No line break in any node name or call label, every duration finite."""
    names = [op.name for op in ir.ops] + [c.label for c in ir.calls]
    if any("\n" in n or "\r" in n for n in names):
        return False
    return all(op.duration_s is None or math.isfinite(op.duration_s) for op in ir.ops)


def _export_and_check(ir: TraceIR, options: dict[str, object]) -> None:
    note(f"options: {options}")
    note(f"ir: {ir_literal(ir)}")
    with tempfile.TemporaryDirectory() as a, tempfile.TemporaryDirectory() as b:
        first = run_export(ir, Path(a), options)
        if first.error is not None:
            note(f"refused: {first.error}")
            bug = known_bug(first)
            if bug:  # asserted on its own in test_known_bugs.py; check the rest of the trace
                ir = sidestep(bug, ir)
                note(f"sidestepped ir: {ir_literal(ir)}")
                first = run_export(ir, Path(a), options)
                if first.error is not None and known_bug(first):
                    return
        check_outcome(ir, first)
        if _clean(ir):
            assert first.error is None, f"a clean trace was refused: {first.error}"
        second = run_export(ir, Path(b), options)
        assert (first.error is None) == (second.error is None)
        if first.error is not None:
            assert second.error is not None and second.error.code == first.error.code
        assert files_of(Path(a)) == files_of(Path(b)), "the same trace gave different bytes"


@pytest.mark.parametrize("granularity", GRANULARITIES)
@example(ir=SQUARE_AND_COUNTER, options={"show_buffers": "always"})
@example(ir=SQUARE_AND_COUNTER, options={"show_buffers": "meaningful"})
@example(ir=SQUARE_AND_COUNTER, options={"show_buffers": "never", "attachment": False})
@example(ir=ODD_NAMES, options={"show_buffers": "meaningful"})
@example(ir=ODD_NAMES, options={"show_buffers": "always", "attachment": False})
@example(ir=NAN_DURATION, options={"show_buffers": "meaningful"})
@example(ir=NAN_DURATION, options={"show_buffers": "never", "attachment": False})
@given(ir=trace_irs(), options=export_options())
def test_export_is_valid_or_refused(granularity: str, ir: TraceIR, options: dict[str, object]) -> None:
    options = {**options, "granularity": granularity}
    if granularity != "module":
        options["depth"] = None
    _export_and_check(ir, options)


@given(ir=trace_irs(nonfinite=False, newline_names=False), show_buffers=st.sampled_from(BUFFER_POLICIES))
def test_clean_trace_exports_in_every_view(ir: TraceIR, show_buffers: str) -> None:
    """One clean trace, all three granularities: each must succeed (checked by the oracle)."""
    for granularity in GRANULARITIES:
        _export_and_check(ir, {"granularity": granularity, "show_buffers": show_buffers})


@given(ir=trace_irs())
def test_strategy_draws_consistent_traces(ir: TraceIR) -> None:
    """The strategy keeps its promises (topological order, contiguous calls, passes)."""
    check_consistent(ir)

"""Property: every random trace exports to a fully valid artifact, or is refused cleanly.

For each granularity (parametrized) x show_buffers (x depth, attachment; drawn), a random
internally consistent ``TraceIR`` (see ``strategies.py``) is exported with ``export_ir``.
The outcome must be (a) a success that passes every check in ``oracle.py`` (strict proto
parse, ``onnx.checker`` full check, jsonschema on model metadata and node properties,
companion rows that resolve, finite numbers, typed edges that match the trace,
``tlnetron.check.validation`` silent) or (b) a ``TlnetronError`` with a documented code that
wrote nothing. A *clean* trace (finite durations; names whose first lines are distinct
and hold no carriage return) must succeed. Exporting the same trace twice gives
byte-identical files. Warnings must be ``TlnetronWarning`` with a documented code. The
three views of one clean trace draw the same ops; over existing files a refusal changes
nothing; bad options are refused before the trace is read.
"""

from __future__ import annotations

import math
import tempfile
import warnings
from pathlib import Path

import pytest
from hypothesis import event, example, given, note
from hypothesis import strategies as st

from known_bugs import export_sidestepping
from oracle import (
    ARTIFACT_NAME,
    ERROR_CODES,
    Outcome,
    check_outcome,
    companion_name,
    files_of,
    ir_literal,
    run_export,
)
from semantics import check_view_totals_agree, check_views_agree
from strategies import BUFFER_POLICIES, GRANULARITIES, export_options, trace_irs
from tlnetron import TlnetronWarning
from tlnetron._generated.vocab import BufferPolicy, CaptureStatus, Granularity
from tlnetron.ir.trace import ROLE_INPUT, ROLE_OUTPUT, Honesty, ModuleCallIR, OpIR, TraceIR


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
        _op(
            "mul_1_1",
            "mul",
            ("input_1", "input_1"),
            module_calls=("bn:1",),
            module_path="bn",
            duration_s=2e-6,
            flops=6,
            nbytes=24,
        ),
        _op(
            "buffer_1",
            "buffer",
            role="buffer",
            shape=(),
            dtype="int64",
            module_calls=("bn:1",),
            buffer_address="bn.num_batches_tracked",
            buffer_access="read",
        ),
        _op("add_1_2", "add_", ("buffer_1",), shape=(), dtype="int64", module_calls=("bn:1",), module_path="bn"),
        _op(
            "buffer_2",
            "buffer",
            ("add_1_2",),
            role="buffer",
            shape=(),
            dtype="int64",
            module_calls=("bn:1",),
            buffer_address="bn.num_batches_tracked",
            buffer_access="write (inplace)",
        ),
        _op("split_1_3", "split", ("mul_1_1",), shape=(2, 0), multi_output_index=0),
        _op("split_2_4", "split", ("mul_1_1",), shape=(2, 3), multi_output_index=1),
        _op(
            "linear_1_5:1",
            "linear",
            ("split_2_4",),
            layer="linear_1_5",
            num_passes=2,
            module_calls=("fc:1",),
            module_path="fc",
            duration_s=1e-5,
            flops=48,
            nbytes=24,
        ),
        _op(
            "linear_1_5:2",
            "linear",
            ("linear_1_5:1",),
            layer="linear_1_5",
            pass_index=2,
            num_passes=2,
            shape=(2, 4),
            module_calls=("fc:2",),
            module_path="fc",
            duration_s=3e-5,
            flops=64,
        ),
        _op("output_1", "output", ("linear_1_5:2",), role="output", shape=(2, 4)),
        _op("output_2", "output", ("input_1",), role="output"),
        _op("output_3", "output", ("linear_1_5:2",), role="output", shape=(2, 4)),
    ),
    calls=(
        ModuleCallIR("bn:1", "bn", 1, "BatchNorm1d", None, 8),
        ModuleCallIR("fc:1", "fc", 1, "Linear", None, 20),
        ModuleCallIR("fc:2", "fc", 2, "Linear", None, 20),
    ),
    honesty=Honesty(capture_status=CaptureStatus.COMPLETE),
)

# Odd names everywhere, 0-d / 6-D / huge / zero-size shapes, dtypes without an ONNX type,
# facts at their extremes.
ODD_NAMES = TraceIR(
    ops=(
        _op("input 'é'", "input", role="input", shape=(), dtype="complex32", nbytes=0),
        _op(
            "中文_1_1",
            "<b>&amp;",
            ("input 'é'",),
            shape=(2, 0, 1, 1, 1, 2**40),
            dtype="quint8",
            module_calls=('a "b":1',),
            module_path='a "b"',
            duration_s=-1e-6,
            flops=10**18,
            nbytes=2**63 - 1,
        ),
        _op(
            "😀_1_2",
            "relu",
            ("中文_1_1", "中文_1_1"),
            shape=None,
            dtype=None,
            module_calls=('a "b":1', 'a "b".c\nd:1'),
            module_path='a "b".c\nd',
            duration_s=0.0,
            flops=0,
        ),
        _op(
            "x_1_3",
            "to",
            ("😀_1_2",),
            shape=(1, 2, 3, 4, 5),
            dtype="bfloat16",
            module_calls=('a "b":1', 'a "b".c\nd:1'),
            module_path='a "b".c\nd',
            ports=("it's",),
        ),
        _op("output_1", "output", ("x_1_3",), role="output", shape=(1, 2, 3, 4, 5), dtype="bfloat16"),
    ),
    calls=(
        ModuleCallIR('a "b":1', 'a "b"', 1, "Wrap<per>\nclass", None, 0),
        ModuleCallIR('a "b".c\nd:1', 'a "b".c\nd', 1, "中文 Class", 'a "b":1', 10**12),
    ),
    model_class="Model\n<i>x</i>",
    honesty=Honesty(
        capture_status=CaptureStatus.HALTED,
        reason="stopped\nhere",
        verified=False,
        interventions=(("set", "é", "sel\n", 3),),
    ),
)

# A NaN duration a wrong reader let through: the export must stay finite or refuse
# (nonfinite_fact_worded, fixed in 9d8144e: it was worded 'nan ns observed wall time').
NAN_DURATION = TraceIR(
    ops=(
        _op("input_1", "input", role="input"),
        _op("relu_1_1", "relu", ("input_1",), duration_s=math.nan, flops=1),
        _op("relu_2_2", "relu", ("relu_1_1",), duration_s=math.inf),
        _op("output_1", "output", ("relu_2_2",), role="output"),
    ),
)


# --- regressions: traces that once failed (see known_bugs.py for the history) ------------

# untyped_graph_io: an input whose dtype has no ONNX element type, returned as is.
UNTYPED_INPUT = TraceIR(
    ops=(
        OpIR("input_1", "input_1", 1, 1, "input", "input", (2,), "complex32"),
        OpIR(
            "output_1", "output_1", 1, 1, "output", "output", (2,), "complex32", parents=("input_1",), ports=("arg0",)
        ),
    ),
    honesty=Honesty(capture_status=CaptureStatus.COMPLETE),
)

# untyped_graph_io: an input of unknown shape and dtype, and an output of unknown rank.
UNKNOWN_IO = TraceIR(
    ops=(
        OpIR("input_1", "input_1", 1, 1, "input", "input", None, None),
        OpIR(
            "relu_1_1", "relu_1_1", 1, 1, "relu", "op", ("batch", 3), "float32", parents=("input_1",), ports=("arg0",)
        ),
        OpIR("view_1_2", "view_1_2", 1, 1, "view", "op", None, "quint8", parents=("relu_1_1",), ports=("arg0",)),
        OpIR(
            "output_1",
            "output_1",
            1,
            1,
            "output",
            "output",
            ("batch", 3),
            "float32",
            parents=("relu_1_1",),
            ports=("arg0",),
        ),
        OpIR("output_2", "output_2", 1, 1, "output", "output", None, "quint8", parents=("view_1_2",), ports=("arg0",)),
    ),
    honesty=Honesty(capture_status=CaptureStatus.COMPLETE),
)

# untyped_graph_io: the rolled view of a recurrent layer whose output shape drifts.
DRIFTING_OUTPUT = TraceIR(
    ops=(
        OpIR("input_1", "input_1", 1, 1, "input", "input", (1, 4), "float32"),
        OpIR(
            "cat_1_1:1",
            "cat_1_1",
            1,
            2,
            "cat",
            "op",
            (2, 4),
            "float32",
            parents=("input_1", "input_1"),
            ports=("arg0[0]", "arg0[1]"),
        ),
        OpIR(
            "cat_1_1:2",
            "cat_1_1",
            2,
            2,
            "cat",
            "op",
            (3, 4),
            "float32",
            parents=("cat_1_1:1", "input_1"),
            ports=("arg0[0]", "arg0[1]"),
        ),
        OpIR(
            "output_1", "output_1", 1, 1, "output", "output", (3, 4), "float32", parents=("cat_1_1:2",), ports=("arg0",)
        ),
    ),
    honesty=Honesty(capture_status=CaptureStatus.COMPLETE),
)

# zero_io_module_call: a module whose only work is the counter chain on its own buffer.
COUNTER_ONLY_CALL = TraceIR(
    ops=(
        OpIR("input_1", "input_1", 1, 1, "input", "input", (2,), "float32"),
        OpIR(
            "buffer_1",
            "buffer_1",
            1,
            1,
            "buffer",
            "buffer",
            (),
            "int64",
            module_calls=("counter:1",),
            buffer_address="counter.num_batches_tracked",
            buffer_access="read",
        ),
        OpIR(
            "add_1_1",
            "add_1_1",
            1,
            1,
            "add_",
            "op",
            (),
            "int64",
            parents=("buffer_1",),
            ports=("arg0",),
            module_calls=("counter:1",),
            module_path="counter",
        ),
        OpIR(
            "buffer_2",
            "buffer_2",
            1,
            1,
            "buffer",
            "buffer",
            (),
            "int64",
            parents=("add_1_1",),
            ports=("arg0",),
            module_calls=("counter:1",),
            buffer_address="counter.num_batches_tracked",
            buffer_access="write (inplace)",
        ),
        OpIR("output_1", "output_1", 1, 1, "output", "output", (2,), "float32", parents=("input_1",), ports=("arg0",)),
    ),
    calls=(ModuleCallIR("counter:1", "counter", 1, "StepCounter", None),),
    honesty=Honesty(capture_status=CaptureStatus.COMPLETE),
)

# zero_io_module_call: dead code inside a nested call (a constant built, scaled, never used).
DEAD_CODE_CALL = TraceIR(
    ops=(
        OpIR("input_1", "input_1", 1, 1, "input", "input", (2,), "float32"),
        OpIR(
            "ones_1_1",
            "ones_1_1",
            1,
            1,
            "ones",
            "op",
            (3,),
            "float32",
            module_calls=("outer:1", "outer.aux:1"),
            module_path="outer.aux",
        ),
        OpIR(
            "mul_1_2",
            "mul_1_2",
            1,
            1,
            "mul",
            "op",
            (3,),
            "float32",
            parents=("ones_1_1",),
            ports=("arg0",),
            module_calls=("outer:1", "outer.aux:1"),
            module_path="outer.aux",
        ),
        OpIR("output_1", "output_1", 1, 1, "output", "output", (2,), "float32", parents=("input_1",), ports=("arg0",)),
    ),
    calls=(
        ModuleCallIR("outer:1", "outer", 1, "Outer", None),
        ModuleCallIR("outer.aux:1", "outer.aux", 1, "Aux", "outer:1"),
    ),
    honesty=Honesty(capture_status=CaptureStatus.COMPLETE),
)


def _clean(ir: TraceIR) -> bool:
    r"""A trace every view must export: finite durations, and names Netron can be pointed at.

    Netron matches a companion target against a name up to its first ``\n``; tlnetron
    writes that first line, so names with ``\n`` are fine unless two share a first line.
    A ``\r`` would stay in the target, which the companion schema refuses.
    """
    if not all(op.duration_s is None or math.isfinite(op.duration_s) for op in ir.ops):
        return False
    names = {op.name for op in ir.ops} | {op.layer for op in ir.ops} | {c.label for c in ir.calls}
    if any("\r" in n for n in names):
        return False
    firsts = [n.split("\n", 1)[0] for n in names]
    return len(set(firsts)) == len(firsts)


def _export_and_check(ir: TraceIR, options: dict[str, object]) -> tuple[TraceIR, Outcome]:
    """Export (sidestepping known bugs), check the outcome and determinism; return both."""
    note(f"options: {options}")
    note(f"ir: {ir_literal(ir)}")
    with tempfile.TemporaryDirectory() as a, tempfile.TemporaryDirectory() as b:
        ir, first = export_sidestepping(ir, Path(a), options)
        event(f"outcome: {first.error.code if first.error else 'exported'}")
        if first.error is not None:
            note(f"refused: {first.error}")
        elif first.result is not None:
            event(f"functions: {min(first.result.function_count, 3)}")
        check_outcome(ir, first)
        if _clean(ir):
            assert first.error is None, f"a clean trace was refused: {first.error}"
        second = run_export(ir, Path(b), options)
        assert (first.error is None) == (second.error is None)
        if first.error is not None:
            assert second.error is not None and second.error.code == first.error.code
        assert files_of(Path(a)) == files_of(Path(b)), "the same trace gave different bytes"
    return ir, first


@pytest.mark.parametrize("granularity", GRANULARITIES)
@example(ir=SQUARE_AND_COUNTER, options={"show_buffers": BufferPolicy.ALWAYS})
@example(ir=SQUARE_AND_COUNTER, options={"show_buffers": BufferPolicy.MEANINGFUL})
@example(ir=SQUARE_AND_COUNTER, options={"show_buffers": BufferPolicy.NEVER, "attachment": False})
@example(ir=ODD_NAMES, options={"show_buffers": BufferPolicy.MEANINGFUL})
@example(ir=ODD_NAMES, options={"show_buffers": BufferPolicy.ALWAYS, "attachment": False})
@example(ir=NAN_DURATION, options={"show_buffers": BufferPolicy.MEANINGFUL})
@example(ir=NAN_DURATION, options={"show_buffers": BufferPolicy.NEVER, "attachment": False})
@example(ir=UNTYPED_INPUT, options={"show_buffers": BufferPolicy.MEANINGFUL})
@example(ir=UNKNOWN_IO, options={"show_buffers": BufferPolicy.MEANINGFUL})
@example(ir=DRIFTING_OUTPUT, options={"show_buffers": BufferPolicy.MEANINGFUL})
@example(ir=COUNTER_ONLY_CALL, options={"show_buffers": BufferPolicy.ALWAYS})
@example(ir=DEAD_CODE_CALL, options={"show_buffers": BufferPolicy.MEANINGFUL})
@given(ir=trace_irs(), options=export_options())
def test_export_is_valid_or_refused(granularity: str, ir: TraceIR, options: dict[str, object]) -> None:
    options = {**options, "granularity": granularity}
    if granularity != Granularity.MODULE:
        options["depth"] = None
    _export_and_check(ir, options)


def _every_view(ir: TraceIR, show_buffers: str) -> tuple[TraceIR, dict[str, Outcome]]:
    """Export ``ir`` in all three views (each checked); the trace finally exported and outcomes."""
    original = ir
    outcomes: dict[str, Outcome] = {}
    for granularity in GRANULARITIES:
        ir, outcomes[granularity] = _export_and_check(ir, {"granularity": granularity, "show_buffers": show_buffers})
    if ir is not original:  # a known bug was sidestepped: export every view of the same trace
        for granularity in GRANULARITIES:
            with tempfile.TemporaryDirectory() as d:
                outcomes[granularity] = run_export(
                    ir, Path(d), {"granularity": granularity, "show_buffers": show_buffers}
                )
    return ir, outcomes


# module_view_totals_skip_buffers (fixed in 9d8144e): the module view summed captured bytes
# over compute ops only, the op and rolled views over every node (buffers included).
BUFFER_BYTES = TraceIR(
    ops=(
        OpIR("input_1", "input_1", 1, 1, "input", "input", (2,), "float32", nbytes=8),
        OpIR(
            "buffer_1",
            "buffer_1",
            1,
            1,
            "buffer",
            "buffer",
            (2,),
            "float32",
            nbytes=8,
            buffer_address="scale",
            buffer_access="read",
        ),
        OpIR(
            "mul_1_1",
            "mul_1_1",
            1,
            1,
            "mul",
            "op",
            (2,),
            "float32",
            parents=("input_1", "buffer_1"),
            ports=("arg0", "arg1"),
            duration_s=1e-6,
            flops=2,
            nbytes=8,
        ),
        OpIR("output_1", "output_1", 1, 1, "output", "output", (2,), "float32", parents=("mul_1_1",), ports=("arg0",)),
    ),
    honesty=Honesty(capture_status=CaptureStatus.COMPLETE),
)


@example(ir=SQUARE_AND_COUNTER, show_buffers=BufferPolicy.ALWAYS)
@example(ir=DEAD_CODE_CALL, show_buffers=BufferPolicy.ALWAYS)
@example(ir=BUFFER_BYTES, show_buffers=BufferPolicy.ALWAYS)
@given(ir=trace_irs(nonfinite=False, newline_names=False), show_buffers=st.sampled_from(BUFFER_POLICIES))
def test_clean_trace_exports_in_every_view(ir: TraceIR, show_buffers: str) -> None:
    """One clean trace, all three granularities: each succeeds, the views draw the same ops,
    and the model totals (estimated FLOPs, captured bytes) do not depend on the view."""
    ir, outcomes = _every_view(ir, show_buffers)
    check_views_agree(ir, outcomes)
    check_view_totals_agree(outcomes)


def _check_consistent(ir: TraceIR) -> None:
    """Assert the invariants the strategy promises (used by a self-test)."""
    names = [op.name for op in ir.ops]
    assert len(set(names)) == len(names), "node names are unique"
    position = {n: i for i, n in enumerate(names)}
    roles = [op.role for op in ir.ops]
    first_other = next(i for i, r in enumerate(roles) if r != ROLE_INPUT)
    assert all(r == ROLE_INPUT for r in roles[:first_other])
    assert ROLE_INPUT not in roles[first_other:]
    first_out = roles.index(ROLE_OUTPUT)
    assert all(r == ROLE_OUTPUT for r in roles[first_out:])
    by_label = {c.label: c for c in ir.calls}
    assert len(by_label) == len(ir.calls), "call labels are unique"
    per_address: dict[str, list[int]] = {}
    for c in ir.calls:
        assert c.label == f"{c.address}:{c.call_index}"
        per_address.setdefault(c.address, []).append(c.call_index)
        if c.parent is not None:
            assert c.parent in by_label and list(by_label).index(c.parent) < list(by_label).index(c.label)
    for idx in per_address.values():
        assert idx == list(range(1, len(idx) + 1))
    layers: dict[str, list[OpIR]] = {}
    for op in ir.ops:
        assert len(op.parents) == len(op.ports)
        for p in op.parents:
            assert position[p] < position[op.name], "parents come first"
        if op.role == ROLE_OUTPUT:
            assert len(op.parents) == 1
        if op.module_calls:
            chain = [by_label[c] for c in op.module_calls]
            assert chain[0].parent is None
            for outer, inner in zip(chain, chain[1:]):
                assert inner.parent == outer.label
        layers.setdefault(op.layer, []).append(op)
    for layer, passes in layers.items():
        assert [op.pass_index for op in passes] == list(range(1, len(passes) + 1))
        assert {op.num_passes for op in passes} == {len(passes)}
        assert len({op.op_type for op in passes}) == 1
        for op in passes:
            assert op.name == (layer if len(passes) == 1 else f"{layer}:{op.pass_index}")
    # A call runs as one contiguous interval of the op sequence.
    spans: dict[str, list[int]] = {}
    for i, op in enumerate(ir.ops):
        for call_label in op.module_calls:
            spans.setdefault(call_label, []).append(i)
    for label, idx in spans.items():
        inside = [i for i in range(idx[0], idx[-1] + 1)]
        for i in inside:
            assert label in ir.ops[i].module_calls, f"call {label} is not contiguous"


@given(ir=trace_irs())
def test_strategy_draws_consistent_traces(ir: TraceIR) -> None:
    """The strategy keeps its promises (topological order, contiguous calls, passes)."""
    _check_consistent(ir)


@given(ir=trace_irs())
def test_a_rolled_layers_facts_are_its_passes_facts_summed(ir: TraceIR) -> None:
    """``facts.passes_facts`` (the rolled view's fused sum, one walk over the passes) says
    exactly what summing each pass's ``op_facts`` says, NaN, negatives and pseudo-ops
    included."""
    from dataclasses import replace

    from tlnetron.ir.facts import op_facts, passes_facts, sum_facts

    layers: dict[str, list[OpIR]] = {}
    for op in ir.ops:
        layers.setdefault(op.layer, []).append(op)
    for ops in layers.values():
        summed = sum_facts([op_facts(op) for op in ops], inclusive=False, passes=len(ops))
        expected = replace(summed, op_count=len(ops) if summed.op_count else None)
        assert passes_facts(ops, len(ops)) == expected


@given(ir=trace_irs(max_ops=12), options=export_options(), stale=st.sampled_from(("artifact", "both")))
def test_a_refusal_leaves_existing_files_alone(ir: TraceIR, options: dict[str, object], stale: str) -> None:
    """Over existing files: a refusal changes nothing; a success replaces them (both or neither)."""
    note(f"ir: {ir_literal(ir)}")
    with tempfile.TemporaryDirectory() as d:
        directory = Path(d)
        artifact = str(options.get("name", ARTIFACT_NAME))
        companion = companion_name(artifact)
        old = {artifact: b"old artifact"}
        if stale == "both":
            old[companion] = b"old companion"
        for name, data in old.items():
            (directory / name).write_bytes(data)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", TlnetronWarning)
            outcome = run_export(ir, directory, options)
        files = files_of(directory)
        if outcome.error is not None:
            assert files == old, f"a refusal ({outcome.error.code}) changed the files"
            return
        assert outcome.result is not None
        assert files[artifact] == outcome.result.artifact_json.encode("utf-8")
        if outcome.result.companion_json is not None:
            assert files[companion] == outcome.result.companion_json.encode("utf-8")
        else:
            assert files.get(companion) == old.get(companion)
        assert set(files) == set(old) | {artifact} | ({companion} if outcome.result.companion_json else set())


_ANY = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 6),
    st.text(max_size=8),
    st.sampled_from(GRANULARITIES + BUFFER_POLICIES),
    st.sampled_from(("Module", " op", "ALWAYS", "rolled\n")),
)


@given(
    granularity=st.one_of(st.sampled_from(GRANULARITIES), _ANY),
    show_buffers=st.one_of(st.sampled_from(BUFFER_POLICIES), _ANY),
    depth=st.one_of(st.none(), _ANY),
    attachment=st.one_of(st.sampled_from((None, True, False)), _ANY),
    name=st.sampled_from(("m.onnx.json", "m.json", "m.onnx", "m.attachment.json", "model.json", "sub/m.onnx.json", "")),
)
def test_bad_options_are_refused_before_anything_is_read_or_written(
    granularity: object, show_buffers: object, depth: object, attachment: object, name: str
) -> None:
    """``tlnetron.export`` checks its options first: a documented code, nothing written."""
    from tlnetron import TlnetronError, export

    with tempfile.TemporaryDirectory() as d:
        with pytest.raises(TlnetronError) as info:
            with warnings.catch_warnings():
                warnings.simplefilter("error")
                export(
                    object(),
                    Path(d) / name,
                    granularity=granularity,
                    depth=depth,
                    show_buffers=show_buffers,
                    attachment=attachment,
                )  # type: ignore[arg-type]
        assert info.value.code in ERROR_CODES
        assert not list(Path(d).iterdir())
        valid = (
            granularity in GRANULARITIES
            and show_buffers in BUFFER_POLICIES
            and (depth is None or (type(depth) is int and depth >= 1 and granularity == Granularity.MODULE))
            and attachment in (None, True, False)
            and type(attachment) in (type(None), bool)
            and name.endswith(".json")
            and not name.endswith(".attachment.json")
            and "/" not in name
        )
        if valid:
            assert info.value.code == "not_a_trace", str(info.value)
        else:
            assert info.value.code != "not_a_trace", str(info.value)

"""Activation statistics (issue 26): read from each saved output tensor, written as value rows
of the companion (Netron's Connection Properties, when an edge is clicked).

Unit tests build the IR by hand; the rest compare real traces with torch's own computation
on ``op.out``.
"""

from __future__ import annotations

import json
import math
import warnings
from pathlib import Path
from typing import Any

import pytest
import torch
import torchlens
from torch import nn

import tlnetron
from tlnetron._generated.vocab import BufferPolicy, CaptureStatus, CompanionKind, CompanionRow, Granularity
from tlnetron.pipeline import export_ir
from tlnetron.read.stats import merged_stats
from tlnetron.build.companion import build_companion, drawn_values
from tlnetron.words.facts import stats_rows
from tlnetron.errors import TlnetronError, TlnetronWarning
from tlnetron.ir.trace import Honesty, OpIR, TensorStats, TraceIR
from tlnetron.read.trace import read_trace, tensor_stats
from tlnetron.check.pairs import Shown
from tlnetron.check.validation import companion_problems
from tlnetron.options import ExportOptions
from tlnetron.views.op import project_op

from zoo import ZooTrace

STAT_NAMES = (
    CompanionRow.MIN, CompanionRow.MAX, CompanionRow.MEAN, CompanionRow.STD,
    CompanionRow.NAN_COUNT, CompanionRow.INF_COUNT, CompanionRow.ZERO_FRACTION,
)  # fmt: skip


def _value_rows(companion: dict[str, Any]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for row in companion["metrics"]:
        if row["kind"] == CompanionKind.VALUE:
            out.setdefault(row["target"], {})[row["name"]] = row["value"]
    return out


def _model_rows(companion: dict[str, Any]) -> dict[str, Any]:
    return {r["name"]: r["value"] for r in (*companion["metadata"], *companion["metrics"]) if r["kind"] == "model"}


def _export(log: Any, tmp_path: Path, **kw: Any) -> dict[str, Any]:
    result = tlnetron.export(log, tmp_path / "m.onnx.json", **kw)
    assert result.companion_bytes is not None
    data: dict[str, Any] = json.loads(result.companion_bytes)
    return data


def _op_rows(log: Any, tmp_path: Path, **kw: Any) -> dict[str, dict[str, Any]]:
    """The value rows by the op whose tensor they state: a model output is drawn under its
    returned field's name (``output``, ``logits``), produced by its op's node."""
    result = tlnetron.export(log, tmp_path / "m.onnx.json", **kw)
    assert result.companion_bytes is not None
    graph = json.loads(result.artifact_json)["graph"]
    producer = {
        o: n["name"] for n in graph.get("node", []) if n["domain"] == "ai.torchlens.lossy" for o in n.get("output", [])
    }
    rows: dict[str, dict[str, Any]] = {}
    for target, got in _value_rows(json.loads(result.companion_bytes)).items():
        op = producer.get(target, target)
        assert rows.get(op, got) == got, f"{op} is stated twice, differently"
        rows[op] = got
    return rows


# ------------------------------------------------------------------ unit: the IR by hand

RELU = TensorStats(numel=8, nan_count=0, inf_count=0, zero_count=4, min=0.0, max=2.5, mean=0.75, std=0.1234567891)
BAD = TensorStats(numel=8, nan_count=2, inf_count=1, zero_count=0, min=-1.0, max=1.0, mean=0.2, std=None)


def _ir(relu: TensorStats | None, exp: TensorStats | None = None, passes: int = 1) -> TraceIR:
    ops = [
        OpIR("input_1", "input_1", 1, 1, "input", "input", (2, 4), "float32", nbytes=32,
             stats=TensorStats(8, 0, 0, 0, -3, 7, 1.0, 2.0)),
        OpIR("relu_1_1", "relu_1_1", 1, 1, "relu", "op", (2, 4), "float32", parents=("input_1",), ports=("arg0",),
             duration_s=1e-6, stats=relu),
    ]  # fmt: skip
    last = "relu_1_1"
    for k in range(1, passes + 1):
        name = "exp_1_2" if passes == 1 else f"exp_1_2:{k}"
        ops.append(
            OpIR(
                name, "exp_1_2", k, passes, "exp", "op", (2, 4), "float32", parents=(last,), ports=("arg0",), stats=exp
            )
        )
        last = name
    ops.append(
        OpIR("output_1", "output_1", 1, 1, "output", "output", (2, 4), "float32", parents=(last,), ports=("arg0",))
    )
    return TraceIR(ops=tuple(ops), honesty=Honesty(capture_status=CaptureStatus.COMPLETE))


def test_value_rows_from_the_ir(tmp_path: Path) -> None:
    result = export_ir(
        _ir(RELU, BAD),
        tmp_path / "m.onnx.json",
        granularity=Granularity.OP,
        depth=None,
        show_buffers=BufferPolicy.MEANINGFUL,
        attachment=None,
    )
    companion = json.loads(result.companion_bytes or b"")
    rows = _value_rows(companion)
    assert rows["relu_1_1"] == {
        "min": 0.0, "max": 2.5, "mean": 0.75, "std": 0.1234568,  # 7 significant digits
        "NaN count": 0, "Inf count": 0, "zero fraction": 0.5,
    }  # fmt: skip
    assert [r["name"] for r in companion["metrics"] if r["target"] == "relu_1_1" and r["kind"] == "value"] == list(
        STAT_NAMES
    )
    assert rows["input_1"]["min"] == -3 and isinstance(rows["input_1"]["min"], int)  # integer min stays exact
    # std absent: no row, never a null
    assert rows["exp_1_2"] == {
        "min": -1.0,
        "max": 1.0,
        "mean": 0.2,
        "NaN count": 2,
        "Inf count": 1,
        "zero fraction": 0.0,
    }
    assert _model_rows(companion)[CompanionRow.FIRST_NON_FINITE_OUTPUT] == "exp_1_2"
    # value rows and node rows of the same name coexist (kind::target keys differ)
    assert any(r["kind"] == "node" and r["target"] == "relu_1_1" for r in companion["metrics"])


def test_no_stats_no_rows(tmp_path: Path) -> None:
    result = export_ir(
        _ir(None),
        tmp_path / "m.onnx.json",
        granularity=Granularity.OP,
        depth=None,
        show_buffers=BufferPolicy.MEANINGFUL,
        attachment=None,
    )
    companion = json.loads(result.companion_bytes or b"")
    assert _value_rows(companion) == {"input_1": _value_rows(companion)["input_1"]}
    assert CompanionRow.FIRST_NON_FINITE_OUTPUT not in _model_rows(companion)


def test_stats_rows_leave_out_what_is_absent() -> None:
    assert stats_rows(TensorStats(numel=0)) == [(CompanionRow.NAN_COUNT, 0), (CompanionRow.INF_COUNT, 0)]
    complex_rows = dict(stats_rows(TensorStats(4, 1, 0, 2)))
    assert complex_rows == {"NaN count": 1, "Inf count": 0, "zero fraction": 0.5}


def test_a_rolled_layer_of_several_passes_states_them_pooled(tmp_path: Path) -> None:
    ir = _ir(RELU, BAD, passes=2)
    rolled = export_ir(
        ir,
        tmp_path / "r.onnx.json",
        granularity=Granularity.ROLLED,
        depth=None,
        show_buffers=BufferPolicy.MEANINGFUL,
        attachment=None,
    )
    op = export_ir(
        ir,
        tmp_path / "o.onnx.json",
        granularity=Granularity.OP,
        depth=None,
        show_buffers=BufferPolicy.MEANINGFUL,
        attachment=None,
    )
    rolled_rows = _value_rows(json.loads(rolled.companion_bytes or b""))
    op_rows = _value_rows(json.loads(op.companion_bytes or b""))
    assert set(op_rows) == {"input_1", "relu_1_1", "exp_1_2:1", "exp_1_2:2"}
    assert set(rolled_rows) == {"input_1", "relu_1_1", "exp_1_2"}  # the two-pass layer's one edge
    # Both passes are BAD: counts add up, extremes and mean are BAD's, std stays absent.
    assert rolled_rows["exp_1_2"] == {
        "min": -1.0,
        "max": 1.0,
        "mean": 0.2,
        "NaN count": 4,
        "Inf count": 2,
        "zero fraction": 0.0,
    }
    assert _model_rows(json.loads(rolled.companion_bytes or b""))[CompanionRow.FIRST_NON_FINITE_OUTPUT] == "exp_1_2:1"


def test_merged_statistics_are_those_of_the_tensors_together() -> None:
    """Pooled per-pass statistics equal the statistics of the passes' tensors concatenated."""
    torch.manual_seed(0)
    parts = [
        torch.randn(3, 5) * 2 + 1,
        torch.randn(7) - 4,
        torch.zeros(4),
        torch.tensor([float("nan"), 3.0, float("inf")]),
    ]
    whole = tensor_stats(torch.cat([t.flatten() for t in parts]))
    pooled = merged_stats([s for s in map(tensor_stats, parts) if s is not None])
    assert whole is not None
    assert (pooled.numel, pooled.nan_count, pooled.inf_count, pooled.zero_count) == (
        whole.numel,
        whole.nan_count,
        whole.inf_count,
        whole.zero_count,
    )
    assert pooled.min == pytest.approx(whole.min) and pooled.max == pytest.approx(whole.max)
    assert pooled.mean == pytest.approx(whole.mean, rel=1e-5) and pooled.std == pytest.approx(whole.std, rel=1e-5)
    ints = merged_stats(
        [s for s in (tensor_stats(torch.tensor([3, -2])), tensor_stats(torch.tensor([9]))) if s is not None]
    )
    assert (ints.min, ints.max) == (-2, 9) and isinstance(ints.min, int)
    flags = merged_stats(
        [s for s in (tensor_stats(torch.tensor([True, False])), tensor_stats(torch.tensor([True]))) if s is not None]
    )
    assert flags.mean == pytest.approx(2 / 3) and flags.std is None  # bool has no std, so the whole has none
    assert merged_stats([TensorStats(0), TensorStats(2, nan_count=2)]) == TensorStats(2, 2, 0, 0)  # nothing finite


def test_value_rows_must_target_a_drawn_value() -> None:
    ir = _ir(RELU)
    projection = project_op(ir, ExportOptions(granularity=Granularity.OP, show_buffers=BufferPolicy.MEANINGFUL))
    values = drawn_values(projection)
    assert {"input_1", "relu_1_1", "exp_1_2"} <= values
    companion = build_companion(
        projection, artifact_name="m.onnx.json", producer_version="0", stats=(("relu_1_1", RELU),), values=values
    )
    shown = Shown(nodes=frozenset(n.name for n in projection.graph.nodes), values=values, functions=frozenset())
    assert list(companion_problems(companion, shown)) == []
    companion["metrics"].append({"kind": "value", "target": "not_drawn", "name": "min", "value": 0})
    problems = list(companion_problems(companion, shown))
    assert len(problems) == 1 and "not_drawn" in problems[0].what


# ------------------------------------------------------------------ unit: tensor_stats on tensors


def _expected(t: torch.Tensor) -> TensorStats:
    """The statistics computed the plain way, one torch call each."""
    numel = t.numel()
    nan, inf, zeros = int(torch.isnan(t).sum()), int(torch.isinf(t).sum()), int((t == 0).sum())
    finite = t[torch.isfinite(t)].double()
    if finite.numel() == 0:
        return TensorStats(numel, nan, inf, zeros)
    return TensorStats(
        numel,
        nan,
        inf,
        zeros,
        finite.min().item(),
        finite.max().item(),
        finite.mean().item(),
        finite.std(correction=0).item(),
    )


def _close(a: TensorStats | None, b: TensorStats) -> None:
    assert a is not None
    assert (a.numel, a.nan_count, a.inf_count, a.zero_count) == (b.numel, b.nan_count, b.inf_count, b.zero_count)
    for field in ("min", "max", "mean", "std"):
        x, y = getattr(a, field), getattr(b, field)
        assert (x is None) == (y is None), field
        if x is not None:
            assert math.isfinite(x) and math.isclose(x, y, rel_tol=1e-5, abs_tol=1e-6), (field, x, y)


@pytest.mark.parametrize(
    "t",
    [
        torch.tensor([1.0, float("nan"), float("inf"), 0.0, -float("inf"), -2.0]),
        torch.randn(3, 5, generator=torch.Generator().manual_seed(0)),
        torch.randn(7, generator=torch.Generator().manual_seed(1)).half(),
        torch.randn(7, generator=torch.Generator().manual_seed(2)).bfloat16(),
        torch.tensor([float("nan"), float("inf")]),
        torch.tensor(3.5, dtype=torch.float64),
        # one NaN / one Inf deep inside a large tensor (vectorised reductions): still found
        torch.randn(10_007, generator=torch.Generator().manual_seed(3)).index_fill(
            0, torch.tensor([5003]), float("nan")
        ),
        torch.randn(10_007, generator=torch.Generator().manual_seed(4)).index_fill(
            0, torch.tensor([9_990]), float("-inf")
        ),
        # mean far from zero against the spread: the sum-of-squares shortcut would cancel,
        # so std_mean measures again
        torch.randn(4_099, generator=torch.Generator().manual_seed(5)) * 0.01 + 1000.0,
        # the sum overflows float32 while every element is finite
        torch.full((64,), 3.0e38).index_fill(0, torch.tensor([7]), -1.0e38),
    ],
    ids=["mixed", "float32", "float16", "bfloat16", "nothing-finite", "0-d", "one-nan", "one-inf", "offset", "huge"],
)
def test_float_stats_equal_torch(t: torch.Tensor) -> None:
    _close(tensor_stats(t), _expected(t.float() if t.dtype.itemsize < 4 else t))


def test_other_dtypes() -> None:
    ints = torch.tensor([[0, 5], [-7, 2]], dtype=torch.int32)
    st = tensor_stats(ints)
    assert st is not None and (st.numel, st.nan_count, st.inf_count, st.zero_count, st.min, st.max) == (
        4,
        0,
        0,
        1,
        -7,
        5,
    )
    assert (
        isinstance(st.min, int)
        and st.mean is not None
        and abs(st.mean) < 1e-12
        and st.std is not None
        and math.isclose(
            st.std, torch.tensor([0.0, 5, -7, 2], dtype=torch.float64).std(correction=0).item(), rel_tol=1e-9
        )
    )
    assert tensor_stats(torch.tensor([True, False, True, True])) == TensorStats(4, 0, 0, 1, 0, 1, 0.75, None)
    assert tensor_stats(torch.tensor([1 + 1j, 0j, complex("nan")])) == TensorStats(3, 1, 0, 1)
    assert tensor_stats(torch.zeros(0, 3)) == TensorStats(0)
    assert tensor_stats(torch.empty(2, device="meta")) is None
    assert tensor_stats(5) is None and tensor_stats(None) is None and tensor_stats((torch.ones(1),)) is None


# ------------------------------------------------------------------ real traces


def test_demo_rows_equal_torch_on_op_out(zoo_trace: ZooTrace, tmp_path: Path) -> None:
    log = zoo_trace("demo")
    ir = read_trace(log)
    by_name = {op.name: op for op in ir.ops}
    outs = {}
    for op, ir_op in zip(log.ops, ir.ops):
        out = op.out.detach() if isinstance(op.out, torch.Tensor) else op.out
        outs[ir_op.name] = out
        if ir_op.role == "output":  # stated by its producer's value (read once, there)
            assert ir_op.stats is None
            continue
        if isinstance(out, torch.Tensor) and out.dtype.is_floating_point:
            _close(ir_op.stats, _expected(out.float() if out.dtype.itemsize < 4 else out))
    with pytest.warns(TlnetronWarning, match="legibility_budget_exceeded"):  # the op view is a tall rope
        companion = _export(log, tmp_path, granularity=Granularity.OP)
    with pytest.warns(TlnetronWarning, match="legibility_budget_exceeded"):
        rows = _op_rows(log, tmp_path, granularity=Granularity.OP)
    assert len(rows) > 20
    for target, got in rows.items():
        t = outs[target]
        assert isinstance(t, torch.Tensor) and by_name[target].stats is not None
        assert got[CompanionRow.NAN_COUNT] == int(torch.isnan(t).sum())
        assert got[CompanionRow.INF_COUNT] == int(torch.isinf(t).sum())
        assert math.isclose(got[CompanionRow.ZERO_FRACTION], int((t == 0).sum()) / t.numel(), rel_tol=1e-6)
        finite = t[torch.isfinite(t)].double() if t.dtype.is_floating_point else t.double()
        if finite.numel():  # min, max and mean over the finite elements
            assert math.isclose(got["max"], float(finite.max()), rel_tol=1e-6)
            assert math.isclose(got["mean"], float(finite.mean()), rel_tol=1e-5, abs_tol=1e-7)
    # The demo's causal mask holds -inf: the first op whose saved output is not all finite.
    first = next(name for name, t in outs.items() if isinstance(t, torch.Tensor) and not bool(torch.isfinite(t).all()))
    assert _model_rows(companion)[CompanionRow.FIRST_NON_FINITE_OUTPUT] == first
    # the module view: values inside function bodies keep op names, and carry rows too
    module_rows = _op_rows(log, tmp_path, granularity=Granularity.MODULE)
    assert set(module_rows) == set(rows)


class _Blowup(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.relu(x) + 1.0
        z = torch.log(x * 0.0)  # log(0) = -inf: the first non-finite output
        return y + z * 0.0  # -inf * 0 = nan


def test_first_non_finite_output(tmp_path: Path) -> None:
    log = torchlens.trace(_Blowup(), torch.ones(2, 3))
    companion = _export(log, tmp_path, granularity=Granularity.OP)
    ir = read_trace(log)
    log_op = next(op for op in ir.ops if op.op_type == "log")
    assert _model_rows(companion)[CompanionRow.FIRST_NON_FINITE_OUTPUT] == log_op.name
    rows = _value_rows(companion)
    assert rows[log_op.name][CompanionRow.INF_COUNT] == 6 and rows[log_op.name][CompanionRow.NAN_COUNT] == 0
    assert CompanionRow.MEAN not in rows[log_op.name]  # nothing finite: no mean row
    mul_nan = next(op for op in ir.ops if op.op_type == "mul" and op.parents == (log_op.name,))
    assert rows[mul_nan.name][CompanionRow.NAN_COUNT] == 6
    for values in rows.values():
        assert all(isinstance(v, (int, float)) and math.isfinite(v) for v in values.values())


def test_opt_out_and_structure_only(zoo_trace: ZooTrace, tmp_path: Path) -> None:
    log = zoo_trace("demo")
    off = _export(log, tmp_path, activation_stats=False)
    assert _value_rows(off) == {}
    assert all(op.stats is None for op in read_trace(log, activation_stats=False).ops)
    bare = torchlens.trace(_Blowup(), torch.ones(2, 3), capture=torchlens.options.CaptureOptions(structure_only=True))
    companion = _export(bare, tmp_path)
    assert _value_rows(companion) == {}
    assert CompanionRow.FIRST_NON_FINITE_OUTPUT not in _model_rows(companion)


@pytest.mark.parametrize("bad", ["yes", 1, None])
def test_activation_stats_must_be_a_bool(zoo_trace: ZooTrace, tmp_path: Path, bad: object) -> None:
    with pytest.raises(TlnetronError) as info:
        tlnetron.export(zoo_trace("demo"), tmp_path / "m.onnx.json", activation_stats=bad)  # type: ignore[arg-type]
    assert info.value.code == "invalid_option"
    assert list(tmp_path.iterdir()) == []


def test_audit_save_has_no_payloads_and_no_rows(tmp_path: Path) -> None:
    """An ``audit`` save keeps no tensors: after loading, op.out is None and no value rows exist."""
    log = torchlens.trace(_Blowup(), torch.ones(2, 3))
    torchlens.save(log, tmp_path / "run.tlspec", level="audit")
    loaded = torchlens.load(str(tmp_path / "run.tlspec"))
    assert all(op.out is None for op in loaded.ops)
    companion = _export(loaded, tmp_path)
    assert _value_rows(companion) == {}
    assert CompanionRow.FIRST_NON_FINITE_OUTPUT not in _model_rows(companion)
    assert _value_rows(_export(log, tmp_path))  # the live trace has them


def test_warnings_point_at_the_callers_line(zoo_trace: ZooTrace, tmp_path: Path) -> None:
    # A fixed stacklevel pointed inside api.py; the caller's own file and line are what helps.
    log = zoo_trace("demo")
    with pytest.warns(TlnetronWarning, match="legibility_budget_exceeded") as caught:
        tlnetron.export(log, tmp_path / "m.onnx.json", granularity=Granularity.OP)
    assert {Path(w.filename).name for w in caught if isinstance(w.message, TlnetronWarning)} == {Path(__file__).name}


def test_statistics_on_one_thread_restore_the_thread_count(zoo_trace: ZooTrace) -> None:
    from tlnetron.read.stats import one_thread

    log = zoo_trace("demo")
    before = torch.get_num_threads()
    ir = read_trace(log)
    assert torch.get_num_threads() == before
    with one_thread():
        assert torch.get_num_threads() == 1
    assert torch.get_num_threads() == before
    # The statistics stay what torch computes on each tensor with its default threads.
    for op, ir_op in zip(log.ops, ir.ops):
        out = op.out.detach() if isinstance(op.out, torch.Tensor) else op.out
        if ir_op.role != "output" and isinstance(out, torch.Tensor) and out.dtype.is_floating_point and out.numel():
            _close(ir_op.stats, _expected(out.float() if out.dtype.itemsize < 4 else out))


def _finite_extremes(t: torch.Tensor) -> tuple[float | int, float | int] | None:
    """The min and the max torch finds over the finite elements, in the type the companion states."""
    if t.dtype == torch.bool:
        return (int(t.min()), int(t.max())) if t.numel() else None
    if not t.dtype.is_floating_point:
        lo, hi = torch.aminmax(t)
        return int(lo), int(hi)
    finite = t[torch.isfinite(t)]
    if finite.numel() == 0:
        return None
    lo, hi = torch.aminmax(finite.float() if t.dtype.itemsize < 4 else finite)
    return float(lo), float(hi)


@pytest.mark.parametrize("name", ["multi_output_mixed", "scalar_and_empty", "gpt2", "bn_cnn_train", "demo"])
def test_every_saved_output_states_what_torch_computes_on_it(zoo_trace: ZooTrace, name: str) -> None:
    """On real traces (float16 / bfloat16 / float64 / int / bool / complex / 0-d / empty outputs,
    a causal mask's -inf), every op's statistics are torch's own on ``op.out``: counts and
    extremes exactly, mean and std to float32 rounding of torch's float64 answer."""
    log = zoo_trace(name)
    ir = read_trace(log)
    assert len(ir.ops) == len(log.ops)
    checked: set[torch.dtype] = set()
    for op, ir_op in zip(log.ops, ir.ops):
        t = op.out
        if ir_op.role == "output":  # its tensor is its producer's, whose value states it
            assert ir_op.stats is None and ir_op.parents, ir_op.name
            continue
        if not isinstance(t, torch.Tensor) or t.layout != torch.strided:
            continue
        t = t.detach()
        st = ir_op.stats
        assert st is not None, ir_op.name
        checked.add(t.dtype)
        assert st.numel == t.numel()
        assert st.zero_count == int((t == 0).sum()), ir_op.name
        floating = t.dtype.is_floating_point or t.dtype.is_complex
        assert st.nan_count == (int(torch.isnan(t).sum()) if floating else 0)
        assert st.inf_count == (int(torch.isinf(t).sum()) if floating else 0)
        if t.dtype.is_complex or t.numel() == 0:
            assert (st.min, st.max, st.mean, st.std) == (None, None, None, None), ir_op.name
            continue
        extremes = _finite_extremes(t)
        assert (st.min, st.max) == ((None, None) if extremes is None else extremes), ir_op.name
        if extremes is None:
            continue
        finite = (t[torch.isfinite(t)] if t.dtype.is_floating_point else t).double()
        scale = float(finite.abs().max()) or 1.0
        assert st.mean is not None and abs(st.mean - float(finite.mean())) <= 1e-5 * scale, ir_op.name
        if t.dtype == torch.bool:
            assert st.std is None
        else:
            assert st.std is not None and abs(st.std - float(finite.std(correction=0))) <= 1e-5 * scale, ir_op.name
    assert checked, name
    if name == "multi_output_mixed":
        assert {
            torch.float16,
            torch.bfloat16,
            torch.float64,
            torch.int32,
            torch.int64,
            torch.bool,
            torch.complex64,
        } <= checked


@pytest.mark.parametrize("granularity", [Granularity.OP, Granularity.ROLLED, Granularity.MODULE])
def test_every_returned_field_states_its_tensor(zoo_trace: ZooTrace, tmp_path: Path, granularity: str) -> None:
    """The model's outputs (GPT-2's logits and KV cache) are drawn under their fields' names:
    each graph output states its tensor's statistics, read once from the producing op (the
    output pseudo-ops are not read at all)."""
    log = zoo_trace("gpt2")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TlnetronWarning)  # the op view's tall rope
        result = tlnetron.export(log, tmp_path / "m.onnx.json", granularity=granularity)
    assert result.companion_bytes is not None
    outputs = [v["name"] for v in json.loads(result.artifact_json)["graph"]["output"]]
    rows = _value_rows(json.loads(result.companion_bytes))
    tensors = [op.out.detach() for op in log.ops if op.is_output and isinstance(op.out, torch.Tensor)]
    assert len(outputs) >= 2 and len(tensors) >= len(outputs)
    for name in outputs:
        if name in rows:
            got = rows[name]
            assert got[CompanionRow.NAN_COUNT] == 0 and math.isfinite(got["mean"]), name
    # every tensor field (not a structure of several) carries its rows
    assert sum(name in rows for name in outputs) >= 1
    logits = next(t for t in tensors if t.dim() == 3 and t.shape[-1] > 64)
    stated = [rows[n] for n in outputs if n in rows and rows[n]["max"] == pytest.approx(float(logits.max()), rel=1e-6)]
    assert stated, "the logits' statistics are stated on their graph output"

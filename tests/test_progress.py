"""Progress: the API's documented hook and the command line's bar on stderr."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest
import torchlens

import tlnetron
from tlnetron import PROGRESS_STAGES, TlnetronWarning
from tlnetron._generated.vocab import GRANULARITY, BufferPolicy, Granularity
from tlnetron.cli import main as cli_main
from tlnetron.progress import every_share
from zoo import ZooTrace


STAGES = ["read", "project", "metadata", "companion", "build", "check", "write", "done"]


def _stages(calls: list[tuple[str, int, int]]) -> list[str]:
    """The stage names in the order they were first reported."""
    out: list[str] = []
    for stage, _, _ in calls:
        if not out or out[-1] != stage:
            out.append(stage)
    return out


def _assert_well_formed(calls: list[tuple[str, int, int]], first: str = "read") -> None:
    totals = {t for _, _, t in calls}
    assert len(totals) == 1, totals  # one total per export
    done = [d for _, d, _ in calls]
    assert done == sorted(done), "progress went backwards"
    names = [stage for stage, _ in PROGRESS_STAGES]
    start = 10 * sum(share for _, share in PROGRESS_STAGES[: names.index(first)])  # where ``first`` begins
    assert calls[0][:2] == (first, start) and calls[-1] == ("done", calls[-1][2], calls[-1][2])
    assert [c for c in calls if c[0] == "done"] == [calls[-1]]  # "done" exactly once, last


def test_progress_hook_reports_every_stage_in_order(zoo_trace: ZooTrace, tmp_path: Path) -> None:
    calls: list[tuple[str, int, int]] = []
    tlnetron.export(zoo_trace("loop"), tmp_path / "m.onnx.json", progress=lambda *a: calls.append(a))
    assert _stages(calls) == STAGES
    _assert_well_formed(calls)
    # A 12-op trace has no per-op reports: each stage once, plus the fixed steps inside
    # the companion (built, validated) and the build (artifact encoded and staged).
    assert [stage for stage, _, _ in calls] == [
        "read",
        "project",
        "metadata",
        *["companion"] * 3,
        *["build"] * 2,
        "check",
        "write",
        "done",
    ]


def test_each_stage_starts_at_its_documented_share(zoo_trace: ZooTrace, tmp_path: Path) -> None:
    calls: list[tuple[str, int, int]] = []
    tlnetron.export(zoo_trace("loop"), tmp_path / "m.onnx.json", progress=lambda *a: calls.append(a))
    total = calls[0][2]
    assert total == 10 * sum(share for _, share in PROGRESS_STAGES) == 1000
    start = 0
    for stage, share in PROGRESS_STAGES:
        reports = [d for s, d, _ in calls if s == stage]
        assert reports[0] == start, stage  # a stage is first reported where it starts
        assert all(start <= d < start + 10 * share for d in reports), stage  # and stays inside its share
        start += 10 * share


def test_no_companion_stage_without_a_companion(zoo_trace: ZooTrace, tmp_path: Path) -> None:
    calls: list[tuple[str, int, int]] = []
    tlnetron.export(zoo_trace("loop"), tmp_path / "m.onnx.json", attachment=False, progress=lambda *a: calls.append(a))
    assert _stages(calls) == [s for s in STAGES if s != "companion"]
    _assert_well_formed(calls)
    # The companion's share is left out of the total, not left as a jump.
    assert calls[-1][2] == 1000 - 10 * dict(PROGRESS_STAGES)["companion"]


@pytest.mark.parametrize("granularity", GRANULARITY)
def test_large_traces_report_while_reading_and_building(zoo_trace: ZooTrace, tmp_path: Path, granularity: str) -> None:
    """T5's 325 ops: the reader reports about every 2% of the ops (at least 50 at a time),
    the builder about every 2% of the nodes, and each report stays inside its stage's share."""
    trace = zoo_trace("t5")
    calls: list[tuple[str, int, int]] = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TlnetronWarning)  # the op view of T5 is past the legibility budget
        tlnetron.export(trace, tmp_path / "m.onnx.json", granularity=granularity, progress=lambda *a: calls.append(a))
    _assert_well_formed(calls)
    assert _stages(calls) == STAGES
    reads = [d for s, d, _ in calls if s == "read"]
    assert len(reads) == 1 + len(list(trace.ops)) // 50  # 0, then after 50, 100, ... ops
    assert max(reads) < 10 * dict(PROGRESS_STAGES)["read"]
    builds = [d for s, d, _ in calls if s == "build"]
    assert len(builds) > 1 or granularity == Granularity.ROLLED  # the rolled view has too few nodes
    projects = [d for s, d, _ in calls if s == "project"]
    # The op and rolled views count ops / layers (over 100 here); T5's module view has too
    # few function bodies (see the synthetic test below).
    assert len(projects) > 1 or granularity == Granularity.MODULE
    starts = {s: d for s, d, _ in reversed(calls)}  # each stage's first report
    assert all(starts["build"] <= d < starts["check"] for d in builds)


def test_the_module_view_reports_while_building_its_function_bodies(tmp_path: Path) -> None:
    """300 module calls of two ops each: the module view reports as it builds the bodies
    (project stage) and as it builds their nodes (build stage)."""
    from tlnetron.pipeline import export_ir
    from tlnetron.ir.trace import ROLE_INPUT, ROLE_OP, ROLE_OUTPUT, ModuleCallIR, OpIR, TraceIR

    ops = [
        OpIR(
            name="input_1",
            layer="input_1",
            pass_index=1,
            num_passes=1,
            op_type="input",
            role=ROLE_INPUT,
            shape=(2,),
            dtype="float32",
        )
    ]
    calls = []
    last = "input_1"
    for i in range(300):
        label = f"blocks.{i}:1"
        calls.append(ModuleCallIR(label=label, address=f"blocks.{i}", call_index=1, class_name="Block", parent=None))
        for op_type in ("linear", "relu"):
            name = f"{op_type}_{i}"
            ops.append(
                OpIR(
                    name=name,
                    layer=name,
                    pass_index=1,
                    num_passes=1,
                    op_type=op_type,
                    role=ROLE_OP,
                    shape=(2,),
                    dtype="float32",
                    parents=(last,),
                    ports=("arg0",),
                    module_calls=(label,),
                    module_path=f"blocks.{i}",
                    duration_s=1e-6,
                )
            )
            last = name
    ops.append(
        OpIR(
            name="output_1",
            layer="output_1",
            pass_index=1,
            num_passes=1,
            op_type="output",
            role=ROLE_OUTPUT,
            shape=(2,),
            dtype="float32",
            parents=(last,),
        )
    )
    reports: list[tuple[str, int, int]] = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TlnetronWarning)  # 300 boxes in a row: past the legibility budget
        result = export_ir(
            TraceIR(ops=tuple(ops), calls=tuple(calls)),
            tmp_path / "m.onnx.json",
            granularity=Granularity.MODULE,
            depth=None,
            show_buffers=BufferPolicy.MEANINGFUL,
            attachment=None,
            progress=lambda *a: reports.append(a),
        )
    # The 300 calls are one run, drawn open at the root on 16 groups of consecutive calls.
    assert result.function_count == 300 + 16
    _assert_well_formed(reports, first="project")  # export_ir is given a read IR
    assert len([s for s, _, _ in reports if s == "project"]) > 1
    assert len([s for s, _, _ in reports if s == "build"]) > 1


def test_a_failing_hook_stops_the_export_and_writes_nothing(zoo_trace: ZooTrace, tmp_path: Path) -> None:
    path = tmp_path / "m.onnx.json"
    tlnetron.export(zoo_trace("loop"), path)
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}

    class Stop(Exception):
        pass

    for stop_at in ("read", "companion", "check", "write"):

        def hook(stage: str, done: int, total: int) -> None:
            if stage == stop_at:
                raise Stop(stage)

        with pytest.raises(Stop):
            tlnetron.export(zoo_trace("loop"), path, granularity=Granularity.OP, progress=hook)
        assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before, stop_at


def test_every_share_costs_nothing_unwatched_and_counts_when_watched() -> None:
    items = list(range(1000))
    assert every_share(items, len(items), None) is items  # no wrapper at all
    assert every_share(items[:99], 99, lambda d, n: None) == items[:99]  # too few to report
    seen: list[tuple[int, int]] = []
    assert list(every_share(items, len(items), lambda d, n: seen.append((d, n)))) == items
    assert seen == [(d, 1000) for d in range(50, 1001, 50)]
    seen.clear()
    list(every_share(range(100_000), 100_000, lambda d, n: seen.append((d, n))))
    assert len(seen) == 50 and seen[-1] == (100_000, 100_000)


def test_cli_export_draws_a_bar_on_stderr(
    zoo_trace: ZooTrace, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    saved = tmp_path / "run.tlspec"
    torchlens.save(zoo_trace("loop"), saved, include_custom_attributes=False, include_buffer_values=False)
    out = tmp_path / "m.onnx.json"
    assert cli_main(["export", str(saved), "-o", str(out), "--progress"]) == 0
    captured = capsys.readouterr()
    assert "[########################] 100% done" in captured.err
    assert "  0% read" in captured.err
    assert "[" not in captured.out.splitlines()[0]
    assert cli_main(["export", str(saved), "-o", str(out), "--no-progress"]) == 0
    assert "done" not in capsys.readouterr().err

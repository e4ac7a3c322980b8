"""Progress: the API's documented hook and the command line's bar on stderr."""

from __future__ import annotations

from pathlib import Path

import pytest
import torchlens

import tlnetron
from tlnetron.cli import main as cli_main
from zoo import ZooTrace


def test_progress_hook_reports_every_stage_in_order(zoo_trace: ZooTrace, tmp_path: Path) -> None:
    calls: list[tuple[str, int, int]] = []
    tlnetron.export(zoo_trace("loop"), tmp_path / "m.onnx.json", progress=lambda *a: calls.append(a))
    stages = [stage for stage, _, _ in calls]
    assert stages == ["project", "metadata", "companion", "build", "check", "done"]
    done = [d for _, d, _ in calls]
    assert done == sorted(done) and calls[-1][1] == calls[-1][2]
    assert len({t for _, _, t in calls}) == 1


def test_no_companion_stage_without_a_companion(zoo_trace: ZooTrace, tmp_path: Path) -> None:
    calls: list[str] = []
    tlnetron.export(zoo_trace("loop"), tmp_path / "m.onnx.json", attachment=False, progress=lambda s, d, t: calls.append(s))
    assert "companion" not in calls and calls[-1] == "done"


def test_cli_export_draws_a_bar_on_stderr(zoo_trace: ZooTrace, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    saved = tmp_path / "run.tlspec"
    torchlens.save(zoo_trace("loop"), saved, include_custom_attributes=False, include_buffer_values=False)
    out = tmp_path / "m.onnx.json"
    assert cli_main(["export", str(saved), "-o", str(out), "--progress"]) == 0
    captured = capsys.readouterr()
    assert "[########################] done" in captured.err
    assert "[" not in captured.out.splitlines()[0]
    assert cli_main(["export", str(saved), "-o", str(out), "--no-progress"]) == 0
    assert "done" not in capsys.readouterr().err

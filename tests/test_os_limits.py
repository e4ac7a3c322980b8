"""Every path the API or the command line takes is checked up front for what the OS takes
(PATH_MAX, NAME_MAX, NUL, encoding): a typed refusal, no traceback, nothing written."""

from __future__ import annotations

import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import pytest
import torch
import torchlens
from torch import nn

import tlnetron
from tlnetron import TlnetronError, TlnetronWarning
from tlnetron.pages.html import write_page


def long_path(tmp_path: Path, name: str) -> Path:
    """Past PATH_MAX (4,096 bytes) while every name stays under NAME_MAX."""
    return tmp_path.joinpath(*["d" * 200] * 21, name)


@pytest.fixture(scope="module")
def log() -> torchlens.Trace:
    torch.manual_seed(0)
    return torchlens.trace(nn.Sequential(nn.Linear(3, 3)).eval(), torch.randn(1, 3))


def test_the_api_refuses_a_path_past_path_max(log: object, tmp_path: Path) -> None:
    with warnings.catch_warnings(), pytest.raises(TlnetronError) as refusal:
        warnings.simplefilter("ignore", TlnetronWarning)
        tlnetron.export(log, long_path(tmp_path, "m.onnx.json"))
    assert refusal.value.code == "invalid_path" and "shorter path" in str(refusal.value)
    assert list(tmp_path.iterdir()) == []


def test_the_api_refuses_a_name_past_name_max(log: object, tmp_path: Path) -> None:
    with warnings.catch_warnings(), pytest.raises(TlnetronError) as refusal:
        warnings.simplefilter("ignore", TlnetronWarning)
        tlnetron.export(log, tmp_path / ("d" * 300) / "m.onnx.json")
    assert refusal.value.code == "invalid_path"


def test_write_page_refuses_a_long_output(tmp_path: Path) -> None:
    with pytest.raises(TlnetronError) as refusal:
        write_page(tmp_path / "m.onnx.json", None, long_path(tmp_path, "p.html"))
    assert refusal.value.code == "invalid_path"


@pytest.mark.parametrize(
    "command",
    [
        ["export", "{long}/m.onnx.json"],
        ["export", "{tmp}/trace", "-o", "{long}/m.onnx.json"],
        ["html", "{tmp}/m.onnx.json", "-o", "{long}/p.html"],
        ["schema", "--copy-to", "{long}/schemas"],
        ["serve", "{long}/m.onnx.json", "--no-browser"],
    ],
)
def test_each_command_refuses_a_long_path(tmp_path: Path, command: list[str]) -> None:
    long = str(long_path(tmp_path, "x").parent)
    argv = [a.format(long=long, tmp=tmp_path) for a in command]
    proc = subprocess.run([sys.executable, "-m", "tlnetron.cli", *argv], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 3 and "[invalid_path]" in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
    assert list(tmp_path.iterdir()) == []


def test_validate_gives_a_verdict_on_a_long_path(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "tlnetron.cli", "validate", str(long_path(tmp_path, "m.onnx.json"))],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 1 and proc.stdout.startswith("json_invalid") and "Traceback" not in proc.stderr


def _refusal(call: Any) -> TlnetronError:
    with pytest.raises(TlnetronError) as refusal:
        call()
    return refusal.value


@pytest.mark.parametrize("case", ["path_max", "name_max", "nul", "encoding"])
@pytest.mark.parametrize("surface", ["serve_files", "page_from_files"])
@pytest.mark.parametrize("which", ["artifact", "attachment"])
def test_serve_files_and_page_from_files_check_their_paths_up_front(
    tmp_path: Path, case: str, surface: str, which: str
) -> None:
    """Called from Python, they refuse as write_page does (same code and words), before reading.

    No server starts and nothing is written.
    """
    import threading

    from tlnetron.options import check_os_limits
    from tlnetron.pages.html import page_from_files
    from tlnetron.pages.serve import serve_files

    bad = {
        "path_max": long_path(tmp_path, "m.onnx.json"),
        "name_max": tmp_path / ("d" * 300) / "m.onnx.json",
        "nul": tmp_path / "m\x00.onnx.json",
        "encoding": tmp_path / "m\udcff\ud800.onnx.json",
    }[case]
    good = tmp_path / "m.onnx.json"  # need not exist: the check comes first
    artifact, companion = (bad, None) if which == "artifact" else (good, bad)
    expected = _refusal(lambda: check_os_limits(bad, which))
    threads = threading.active_count()
    call = {
        "serve_files": lambda: serve_files(artifact, companion, browse=False),
        "page_from_files": lambda: page_from_files(artifact, companion),
    }[surface]
    got = _refusal(call)
    assert (got.code, str(got)) == (expected.code, str(expected)) == ("invalid_path", str(expected))
    assert threading.active_count() == threads and list(tmp_path.iterdir()) == []

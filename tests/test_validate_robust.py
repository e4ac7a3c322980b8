"""``tlnetron validate`` never crashes, on anything, and agrees with Netron on what it reads.

Each case runs the real command in a subprocess (exit code, stdout, stderr as a person sees
them): deep nesting, a device, a FIFO (which used to hang), a byte-order mark (Netron
accepts it), numbers JavaScript changes, a broken artifact beside a broken companion.
A crash inside validate has its own exit code, distinct from "problems found".
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import onnx
import pytest
import torch
import torchlens
from torch import nn

import tlnetron
from tlnetron import TlnetronWarning, cli
from tlnetron.cli import console


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    torch.manual_seed(0)
    log = torchlens.trace(nn.Sequential(nn.Linear(3, 3), nn.ReLU()).eval(), torch.randn(1, 3))
    folder = tmp_path_factory.mktemp("pair")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TlnetronWarning)
        result = tlnetron.export(log, folder / "m.onnx.json")
    assert result.artifact is not None and result.companion is not None
    return result.artifact, result.companion


def validate(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(
        [sys.executable, "-m", "tlnetron.cli", "validate", *args], capture_output=True, text=True, timeout=timeout
    )
    assert "Traceback" not in proc.stderr and "Traceback" not in proc.stdout, proc.stderr
    return proc


def codes(proc: subprocess.CompletedProcess[str]) -> list[str]:
    return [line.split("\t")[0] for line in proc.stdout.splitlines() if "\t" in line]


def test_json_nested_past_any_parser(pair: tuple[Path, Path], tmp_path: Path) -> None:
    deep = tmp_path / "deep.onnx.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    proc = validate(str(deep), "--attachment", str(deep))
    assert proc.returncode == 1 and codes(proc) == ["json_invalid", "json_invalid"], proc.stdout
    assert "too deep" in proc.stdout


def test_values_nested_deep_inside_an_artifact(pair: tuple[Path, Path], tmp_path: Path) -> None:
    data = json.loads(pair[0].read_text())
    value: Any = "x"
    for _ in range(350):
        value = [value]
    data["graph"]["docString"] = value  # a string field holding 350 nested arrays
    bad = tmp_path / "m.onnx.json"
    bad.write_text(json.dumps(data))
    proc = validate(str(bad))
    assert proc.returncode == 1 and codes(proc) == ["proto_parse_failed"], proc.stdout


def test_two_hundred_nested_subgraphs(tmp_path: Path) -> None:
    """Written as JSON text by hand: protobuf (and Python's json) refuse to build one this deep."""

    def graph(name: str, node: str, out: str) -> str:
        typed = '{"tensorType": {"elemType": 1, "shape": {"dim": [{"dimValue": "1"}]}}}'
        return f'{{"name": "{name}", "node": [{node}], "output": [{{"name": "{out}", "type": {typed}}}]}}'

    leaf = graph("g0", '{"opType": "Identity", "input": ["x"], "output": ["y"]}', "y")
    body = leaf
    for i in range(200):  # nested through then_branch only (both branches would double per level)
        node = (
            f'{{"opType": "If", "input": ["c"], "output": ["y{i}"], "attribute": ['
            f'{{"name": "then_branch", "type": "GRAPH", "g": {body}}}, {{"name": "else_branch", "type": '
            f'"GRAPH", "g": {leaf}}}]}}'
        )
        body = graph(f"g{i + 1}", node, f"y{i}")
    path = tmp_path / "nested.onnx.json"
    path.write_text(f'{{"irVersion": "10", "opsetImport": [{{"domain": "", "version": "17"}}], "graph": {body}}}')
    proc = validate(str(path))
    assert proc.returncode == 1 and codes(proc)[0] in ("json_invalid", "proto_parse_failed"), proc.stdout


@pytest.mark.parametrize("special", ["/dev/zero", "fifo", "folder"])
def test_devices_pipes_and_folders_are_refused_not_read(pair: tuple[Path, Path], tmp_path: Path, special: str) -> None:
    if special == "fifo":
        target = tmp_path / "fifo.onnx.json"
        os.mkfifo(target)
    elif special == "folder":
        target = tmp_path / "folder.onnx.json"
        target.mkdir()
    else:
        target = Path(special)
    proc = validate(str(target), timeout=30)  # a FIFO with no writer used to block forever
    assert proc.returncode == 1 and codes(proc) == ["json_invalid"], proc.stdout
    assert "not a regular file" in proc.stdout
    proc = validate(str(pair[0]), "--attachment", str(target), timeout=30)
    assert proc.returncode == 1 and codes(proc) == ["json_invalid"], proc.stdout


def test_a_byte_order_mark_is_read_as_netron_reads_it(pair: tuple[Path, Path], tmp_path: Path) -> None:
    artifact, companion = tmp_path / "m.onnx.json", tmp_path / "m.onnx.attachment.json"
    artifact.write_bytes(b"\xef\xbb\xbf" + pair[0].read_bytes())
    companion.write_bytes(b"\xef\xbb\xbf" + pair[1].read_bytes())
    proc = validate(str(artifact), "--attachment", str(companion))
    assert proc.returncode == 0, proc.stdout


def test_numbers_javascript_would_change_are_reported(pair: tuple[Path, Path], tmp_path: Path) -> None:
    text = pair[1].read_text()
    data = json.loads(text)
    row = next(i for i, r in enumerate(data["metrics"]) if isinstance(r["value"], (int, float)))
    rounded = dict(data, metrics=[*data["metrics"]])
    rounded["metrics"][row] = {**rounded["metrics"][row], "value": 2**60 + 1}
    companion = tmp_path / "m.onnx.attachment.json"
    companion.write_text(json.dumps(rounded))
    proc = validate(str(pair[0]), "--attachment", str(companion))
    assert proc.returncode == 1 and "past 2**53" in proc.stdout and "1152921504606846976" in proc.stdout, proc.stdout
    companion.write_text(json.dumps(rounded).replace(str(2**60 + 1), "1e400"))
    proc = validate(str(pair[0]), "--attachment", str(companion))
    assert proc.returncode == 1 and "Infinity" in proc.stdout, proc.stdout
    companion.write_text(json.dumps(rounded).replace(str(2**60 + 1), "NaN"))
    proc = validate(str(pair[0]), "--attachment", str(companion))
    assert proc.returncode == 1 and codes(proc)[0] == "json_invalid" and "refuses the whole companion" in proc.stdout, (
        proc.stdout
    )
    assert f"metrics[{row}]" in proc.stdout  # and the row holding it is named


def test_a_broken_artifact_does_not_hide_the_companions_problems(pair: tuple[Path, Path], tmp_path: Path) -> None:
    artifact, companion = tmp_path / "m.onnx.json", tmp_path / "m.onnx.attachment.json"
    artifact.write_text("{not json")
    data = json.loads(pair[1].read_text())
    data["metrics"].append(dict(data["metrics"][0]))  # a duplicate row Netron would drop
    del data["metadata"][0]["kind"]  # a row Netron drops
    companion.write_text(json.dumps(data))
    proc = validate(str(artifact), "--attachment", str(companion))
    assert proc.returncode == 1
    assert codes(proc)[0] == "json_invalid" and "netron_attachment_invalid" in codes(proc), proc.stdout


def test_a_crash_inside_validate_has_its_own_exit_code(
    pair: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import tlnetron.check.validation

    def broken(model: onnx.ModelProto) -> Any:
        raise RuntimeError("simulated bug")

    monkeypatch.setattr(tlnetron.check.validation, "artifact_problems", broken)
    assert cli.main(["validate", str(pair[0])]) == cli.EXIT_CRASH == 4
    err = capsys.readouterr().err
    assert (
        "simulated bug" in err
        and "bug" in err
        and cli.EXIT_CRASH not in (cli.EXIT_INVALID, cli.EXIT_OK, cli.EXIT_REFUSED)
    )


def _rewritten(pair: tuple[Path, Path], tmp_path: Path, name: str, edit: Any, which: int = 0) -> Path:
    data = json.loads(pair[which].read_text())
    edit(data)
    out = tmp_path / name
    out.write_text(json.dumps(data))
    return out


def test_a_metadata_value_nested_a_thousand_deep_is_a_verdict(pair: tuple[Path, Path], tmp_path: Path) -> None:
    bad = _rewritten(
        pair,
        tmp_path,
        "m.onnx.json",
        lambda d: d["metadataProps"].append({"key": "torchlens.warnings", "value": "[" * 1000 + "]" * 1000}),
    )
    proc = validate(str(bad))
    assert proc.returncode == 1 and "metadata_invalid" in codes(proc) and "too deep" in proc.stdout, (
        proc.stdout + proc.stderr
    )


def test_a_companion_value_nested_four_hundred_deep_is_a_verdict(pair: tuple[Path, Path], tmp_path: Path) -> None:
    value: Any = 1
    for _ in range(400):
        value = [value]

    def edit(d: Any) -> None:
        d["metrics"][0]["value"] = value

    bad = _rewritten(pair, tmp_path, "m.onnx.attachment.json", edit, which=1)
    proc = validate(str(pair[0]), "--attachment", str(bad))
    assert proc.returncode == 1 and codes(proc) == ["netron_attachment_invalid"] and "deep" in proc.stdout, (
        proc.stdout + proc.stderr
    )


@pytest.mark.parametrize("digits", [309, 400, 4_300, 5_000, 100_000])
def test_integers_of_any_length_are_named_as_infinity(pair: tuple[Path, Path], tmp_path: Path, digits: int) -> None:
    companion = (
        pair[1].read_text().replace('"estimated FLOPs","value":21', '"estimated FLOPs","value":' + "9" * digits, 1)
    )
    assert "9" * digits in companion
    (tmp_path / "c.attachment.json").write_text(companion)
    proc = validate(str(pair[0]), "--attachment", str(tmp_path / "c.attachment.json"))
    assert proc.returncode == 1 and "Infinity" in proc.stdout, proc.stdout + proc.stderr
    artifact = pair[0].read_text()
    assert '"irVersion":"' in artifact or '"irVersion": "' in artifact
    artifact = artifact.replace('"irVersion":"', '"irVersion":' + "9" * digits + ',"x":"', 1).replace(
        '"irVersion": "', '"irVersion": ' + "9" * digits + ', "x": "', 1
    )
    (tmp_path / "a.onnx.json").write_text(artifact)
    proc = validate(str(tmp_path / "a.onnx.json"))
    assert proc.returncode == 1 and "Infinity" in proc.stdout, proc.stdout + proc.stderr


@pytest.mark.parametrize("where", ["opType", "elemType"])
def test_a_lone_surrogate_prints_escaped(pair: tuple[Path, Path], tmp_path: Path, where: str) -> None:
    text = pair[0].read_text()
    assert f'"{where}":' in text.replace(": ", ":")
    text = (
        text.replace(f'"{where}": ', f'"{where}":')
        .replace(f'"{where}":"', f'"{where}":"\\ud800', 1)
        .replace(f'"{where}":1', f'"{where}":"\\ud800"', 1)
    )
    (tmp_path / "s.onnx.json").write_text(text)
    env = {**os.environ, "PYTHONIOENCODING": "utf-8"}
    proc = subprocess.run(
        [sys.executable, "-m", "tlnetron.cli", "validate", str(tmp_path / "s.onnx.json")],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert "Traceback" not in proc.stderr and proc.returncode == 1, proc.stderr
    assert console.printable("a\ud800b") == "a\\ud800b"


def test_a_file_past_what_netron_opens_is_refused_unread(pair: tuple[Path, Path], tmp_path: Path) -> None:
    """Sparse: its size is past the limit while it takes no disk; refused from its size alone."""
    from tlnetron.read.files import MAX_BYTES

    big = tmp_path / "big.onnx.json"
    with open(big, "wb") as fh:
        fh.truncate(4000 * 2**20)
    assert big.stat().st_size > MAX_BYTES
    proc = validate(str(big))
    assert proc.returncode == 1 and codes(proc) == ["json_invalid"] and "Netron can open" in proc.stdout, proc.stdout


def test_max_bytes_is_netrons_own_limit() -> None:
    """Read from the installed Netron (tests/e2e/test_size_limits.py checks it in Chromium): a dropped
    file is read in chunks into bytes, JSON is decoded from them a character at a time, and no file
    of 0x7ffff000 bytes or more is tried as JSON (for a model and for an attachment alike)."""
    from tlnetron.pages.app import netron_dir
    from tlnetron.read.files import MAX_BYTES, PAGE_MAX_BYTES

    app = netron_dir()
    view, reader, browser = ((app / name).read_text(encoding="utf-8") for name in ("view.js", "json.js", "browser.js"))
    peek = view[view.index("case 'json': {", view.index("async peek(type)")) :]
    peek = peek[: peek.index("case 'json.gz'")]
    assert "stream.length < 0x7ffff000" in peek and "json.TextReader.open(stream)" in peek
    assert "const decoder = text.Decoder.open(data);" in reader and "JSON.parse" not in reader
    assert "reader.readAsArrayBuffer(slice)" in browser
    assert view.count("context.peek('json')") >= 2  # the attachment goes through the same peek
    assert MAX_BYTES == 0x7FFFF000 - 1 and PAGE_MAX_BYTES == 2**29 - 24


def test_validate_reads_a_file_past_the_page_limit(tmp_path: Path) -> None:
    """Past what a page's heat map reads, Netron still opens a file: validate gives its verdict on the content."""
    from tlnetron.read.files import PAGE_MAX_BYTES

    big = tmp_path / "big.onnx.json"
    with open(big, "wb") as fh:
        fh.truncate(PAGE_MAX_BYTES + 1)
    proc = validate(str(big))
    assert proc.returncode == 1 and codes(proc) == ["json_invalid"] and "Netron can open" not in proc.stdout, (
        proc.stdout
    )

"""The ``tlnetron`` command, run for real in subprocesses.

Exit codes: 0 done, 1 validate found problems (one line each, starting with the code),
2 usage error, 3 refused (a typed refusal, its code in brackets on stderr).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import torchlens

from tlnetron._generated.vocab import VALIDATION_CODE
from tlnetron.validation import artifact_problems, companion_problems, parse_artifact, shown_in_model
from zoo import ZooTrace

SAVED_MODEL = "twice"  # small zoo model (module calls, a repeated call, two outputs)
TIMEOUT = 180


def run(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)  # the saved trace must load without the tests on the path
    return subprocess.run(
        [sys.executable, "-m", "tlnetron.cli", *args],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        cwd=cwd,
        env=env,
    )


def _problems(artifact: Path, companion: Path | None) -> list[str]:
    model, problems = parse_artifact(artifact.read_text(encoding="utf-8"))
    assert model is not None
    problems = [*problems, *artifact_problems(model)]
    if companion is not None:
        problems += companion_problems(json.loads(companion.read_text(encoding="utf-8")), shown_in_model(model))
    return [p.line() for p in problems]


# ------------------------------------------------------------------ demo


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> tuple[subprocess.CompletedProcess[str], Path]:
    out = tmp_path_factory.mktemp("demo") / "out"
    return run("demo", "--output-dir", str(out)), out


def test_demo_writes_a_valid_pair(demo: tuple[subprocess.CompletedProcess[str], Path]) -> None:
    proc, out = demo
    assert proc.returncode == 0, proc.stderr
    artifact, companion = out / "demo.onnx.json", out / "demo.onnx.attachment.json"
    assert artifact.is_file() and companion.is_file()
    assert str(artifact) in proc.stdout and str(companion) in proc.stdout
    assert "nodes in the root graph" in proc.stdout
    assert "edges typed" in proc.stdout and "functions" in proc.stdout
    assert _problems(artifact, companion) == []


def test_validate_accepts_a_good_pair(demo: tuple[subprocess.CompletedProcess[str], Path]) -> None:
    _, out = demo
    proc = run("validate", str(out / "demo.onnx.json"), "--attachment", str(out / "demo.onnx.attachment.json"))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.startswith("valid:")


def _broken(demo: tuple[subprocess.CompletedProcess[str], Path], tmp_path: Path, case: str) -> list[str]:
    _, out = demo
    artifact = tmp_path / "broken.onnx.json"
    text = (out / "demo.onnx.json").read_text(encoding="utf-8")
    data: dict[str, Any] = json.loads(text)
    args = [str(artifact)]
    if case == "corrupt_json":
        artifact.write_text(text[: len(text) // 2], encoding="utf-8")
    elif case == "snake_case_key":
        data["ir_version"] = data.pop("irVersion")
        artifact.write_text(json.dumps(data), encoding="utf-8")
    elif case == "companion_targets_graph_input":
        artifact.write_text(text, encoding="utf-8")
        companion = json.loads((out / "demo.onnx.attachment.json").read_text(encoding="utf-8"))
        graph_input = data["graph"]["input"][0]["name"]
        companion["metrics"].append({"kind": "node", "target": graph_input, "name": "observed µs", "value": 1.0})
        cpath = tmp_path / "broken.onnx.attachment.json"
        cpath.write_text(json.dumps(companion), encoding="utf-8")
        args += ["--attachment", str(cpath)]
    proc = run("validate", *args)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    assert lines
    for line in lines:
        assert line.split("\t", 1)[0] in VALIDATION_CODE, line
    return [line.split("\t", 1)[0] for line in lines]


@pytest.mark.parametrize(
    ("case", "code"),
    [
        ("corrupt_json", "json_invalid"),
        ("snake_case_key", "netron_unreadable"),
        ("companion_targets_graph_input", "netron_attachment_invalid"),
    ],
)
def test_validate_reports_each_problem_with_its_code(
    demo: tuple[subprocess.CompletedProcess[str], Path], tmp_path: Path, case: str, code: str
) -> None:
    codes = _broken(demo, tmp_path, case)
    assert code in codes
    if case == "companion_targets_graph_input":
        assert codes == [code]  # exactly the one bad row


# ------------------------------------------------------------------ export of a saved trace


@pytest.fixture(scope="module")
def saved(zoo_trace: ZooTrace, tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("saved") / "run.tlspec"
    torchlens.save(zoo_trace(SAVED_MODEL), folder)
    assert (folder / "manifest.json").is_file()
    return folder


def test_export_saved_trace_every_granularity(saved: Path, tmp_path: Path) -> None:
    procs = {}
    for granularity in ("module", "op", "rolled"):
        out = tmp_path / f"{granularity}.onnx.json"
        procs[granularity] = (
            subprocess.Popen(
                [sys.executable, "-m", "tlnetron.cli", "export", str(saved), "-o", str(out), "--granularity", granularity, "--no-progress"],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            ),
            out,
        )
    for granularity, (proc, out) in procs.items():
        stdout, stderr = proc.communicate(timeout=TIMEOUT)
        assert proc.returncode == 0, stderr
        assert f"view       {granularity}:" in stdout
        companion = out.with_name(f"{granularity}.onnx.attachment.json")
        assert out.is_file() and companion.is_file()
        assert _problems(out, companion) == []


def test_export_refuses_a_folder_that_is_not_a_save(tmp_path: Path) -> None:
    folder = tmp_path / "not_a_save"
    folder.mkdir()
    (folder / "notes.txt").write_text("hello")
    proc = run("export", str(folder), "-o", str(tmp_path / "m.onnx.json"))
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert "not a TorchLens save" in proc.stderr
    assert "[trace_unreadable]" in proc.stderr and "Remedy:" in proc.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["not_a_save"]


def test_export_refuses_depth_with_op_view(saved: Path, tmp_path: Path) -> None:
    proc = run("export", str(saved), "-o", str(tmp_path / "m.onnx.json"), "--depth", "2", "--granularity", "op")
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert "[depth_not_applicable]" in proc.stderr
    assert list(tmp_path.iterdir()) == []


def test_usage_error_exits_2(tmp_path: Path) -> None:
    proc = run("export", str(tmp_path), "--granularity", "layers")
    assert proc.returncode == 2


# ------------------------------------------------------------------ schema and help


def test_schema_copy_to(tmp_path: Path) -> None:
    dest = tmp_path / "schemas"
    proc = run("schema", "--copy-to", str(dest))
    assert proc.returncode == 0, proc.stderr
    copied = sorted(p.name for p in dest.iterdir())
    shipped = sorted(p.name for p in (Path(__file__).resolve().parent.parent / "schema").glob("*.json"))
    assert copied == shipped
    for p in dest.iterdir():
        schema = json.loads(p.read_text(encoding="utf-8"))
        assert schema["$id"].startswith("urn:tlnetron:schema:")
        assert schema["$id"] in proc.stdout


def test_help_shows_examples_and_export_help_warns_about_unpickling() -> None:
    top = run("--help")
    assert top.returncode == 0
    assert "examples:" in top.stdout and "tlnetron demo" in top.stdout and "tlnetron export" in top.stdout
    export = run("export", "--help")
    assert export.returncode == 0
    assert "UNPICKLES" in export.stdout and "trust" in export.stdout
    assert "examples:" in export.stdout


def test_top_level_help_warns_about_unpickling() -> None:
    top = run("--help")
    assert "unpickl" in top.stdout.lower()


def test_console_script_is_installed() -> None:
    script = shutil.which("tlnetron", path=str(Path(sys.executable).parent))
    assert script is not None
    proc = subprocess.run([script, "--version"], capture_output=True, text=True, timeout=TIMEOUT)
    assert proc.returncode == 0 and proc.stdout.startswith("tlnetron ")


# ------------------------------------------------------------------ start-up


def _modules_after(code: str) -> set[str]:
    """The heavy modules imported by ``code`` in a fresh interpreter."""
    probe = f"{code}\nimport sys\nprint('loaded:' + ','.join(m for m in ('onnx', 'torch', 'torchlens', 'ml_dtypes', 'numpy') if m in sys.modules))"
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=TIMEOUT)
    assert proc.returncode == 0, proc.stderr
    last = proc.stdout.strip().splitlines()[-1]
    assert last.startswith("loaded:"), proc.stdout
    return set(filter(None, last[len("loaded:") :].split(",")))


def test_import_and_help_do_not_load_onnx_or_torch() -> None:
    """onnx (and its ml_dtypes, 1.1 s to import with 0.7.0) comes with the exporter, on first use."""
    assert _modules_after("import tlnetron") == set()
    assert _modules_after("import contextlib, tlnetron.cli\nwith contextlib.suppress(SystemExit): tlnetron.cli.main(['--help'])") == set()
    assert _modules_after("import contextlib, tlnetron.cli\nwith contextlib.suppress(SystemExit): tlnetron.cli.main(['schema'])") == set()


def test_lazy_public_names_resolve_to_the_exporter() -> None:
    import tlnetron
    from tlnetron import api

    assert tlnetron.export is api.export
    assert tlnetron.ExportResult is api.ExportResult
    assert tlnetron.LEGIBILITY_BUDGET == api.LEGIBILITY_BUDGET
    assert tlnetron.PROGRESS_STAGES is api.PROGRESS_STAGES
    assert set(tlnetron.__all__) <= set(dir(tlnetron))
    for name in tlnetron.__all__:
        assert getattr(tlnetron, name) is not None
    with pytest.raises(AttributeError, match="no attribute 'exporter'"):
        tlnetron.exporter  # noqa: B018
    assert "onnx" in _modules_after("from tlnetron import export")

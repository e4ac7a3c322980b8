"""The ``tlnetron`` command, run for real in subprocesses.

Exit codes: 0 done, 1 validate found problems (one line each, starting with the code),
2 usage error, 3 refused (a typed refusal, its code in brackets on stderr), 141 the
reader of the output went away.
"""

from __future__ import annotations

import inspect
import json
import os
import html
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import torchlens

import tlnetron
from tlnetron import cli
from tlnetron.cli import flags
from tlnetron._generated.vocab import ERROR_CODE, GRANULARITY, VALIDATION_CODE, BufferPolicy, Granularity
from tlnetron.demo import DEMO_TRACES
from tlnetron.errors import Opt, TlnetronError
from tlnetron.options import check_options
from tlnetron.check.pairs import shown_in_model
from tlnetron.check.validation import artifact_problems, companion_problems, parse_artifact
from zoo import ZooTrace

SAVED_MODEL = "twice"  # small zoo model (module calls, a repeated call, two outputs)
TIMEOUT = 180


def run(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    # The saved trace must load without the tests on the path; the tlnetron under test is the one imported here.
    env["PYTHONPATH"] = str(Path(tlnetron.__file__).resolve().parent.parent)
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
    assert "traced     tlnetron's demo model (random weights) twice" in proc.stdout
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


def test_activation_stats_flag(saved: Path, tmp_path: Path) -> None:
    """Value rows (statistics of each saved tensor) by default; none with --no-activation-stats."""
    procs = {
        flag: subprocess.Popen(
            [
                sys.executable,
                "-m",
                "tlnetron.cli",
                "export",
                str(saved),
                "-o",
                str(tmp_path / f"{flag}.onnx.json"),
                "--no-progress",
                flag,
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for flag in ("--activation-stats", "--no-activation-stats")
    }
    kinds = {}
    for flag, proc in procs.items():
        _, err = proc.communicate(timeout=TIMEOUT)
        assert proc.returncode == 0, err.decode()
        companion = json.loads((tmp_path / f"{flag}.onnx.attachment.json").read_text("utf-8"))
        kinds[flag] = {r["name"] for r in companion["metrics"] if r["kind"] == "value"}
        assert not _problems(tmp_path / f"{flag}.onnx.json", tmp_path / f"{flag}.onnx.attachment.json")
    assert kinds["--activation-stats"] == {"min", "max", "mean", "std", "NaN count", "Inf count", "zero fraction"}
    assert kinds["--no-activation-stats"] == set()
    assert cli.cli_spelling(Opt("activation_stats", False)) == "--no-activation-stats"
    assert cli.cli_spelling(Opt("activation_stats", True)) == "--activation-stats"


def test_export_saved_trace_every_granularity(saved: Path, tmp_path: Path) -> None:
    procs = {}
    for granularity in GRANULARITY:
        out = tmp_path / f"{granularity}.onnx.json"
        procs[granularity] = (
            subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "tlnetron.cli",
                    "export",
                    str(saved),
                    "-o",
                    str(out),
                    "--granularity",
                    granularity,
                    "--no-progress",
                ],
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


def test_export_to_a_page(saved: Path, tmp_path: Path) -> None:
    """``-o model.html``: one self-contained page, no artifact or companion beside it."""
    proc = run("export", str(saved), "-o", str(tmp_path / "model.html"), "--no-progress")
    assert proc.returncode == 0, proc.stderr
    assert f"wrote      {tmp_path / 'model.html'}  (one page" in proc.stdout
    assert [p.name for p in tmp_path.iterdir()] == ["model.html"]
    page = (tmp_path / "model.html").read_text(encoding="utf-8")
    assert page.startswith("<!DOCTYPE html>")
    # Its note names the command line that made it (not a Python call), with pip said once.
    note = re.search(r'<div id="tlnetron-note">(.*?)</div>', page)
    words = html.unescape(re.sub(r"<[^>]+>", "", note.group(1))) if note else ""
    assert (
        f"then tlnetron export {saved} -o {tmp_path / 'model.html'} --no-progress" in words
        and words.count("pip install") == 1
    ), words
    proc = run("export", str(saved), "-o", str(tmp_path / "again.html"), "--serve")
    assert proc.returncode == 3 and "[invalid_option]" in proc.stderr and "--serve" in proc.stderr, proc.stderr


def page_data(html: str) -> dict[str, Any]:
    """What a page's scripts read (its tlnetron-data script)."""
    found = re.search(r'<script type="application/json" id="tlnetron-data">(.*?)</script>', html, re.S)
    assert found, html[:300]
    return json.loads(found.group(1))  # type: ignore[no-any-return]


def test_export_to_a_page_coloured_by_a_scheme(saved: Path, tmp_path: Path) -> None:
    """``-o model.html --colour-by time``: the page starts coloured by observed time."""
    proc = run("export", str(saved), "-o", str(tmp_path / "model.html"), "--colour-by", "time", "--no-progress")
    assert proc.returncode == 0, proc.stderr
    assert page_data((tmp_path / "model.html").read_text(encoding="utf-8"))["colour"] == "time"


def test_an_unknown_colour_scheme_is_one_refusal_on_every_surface(saved: Path, tmp_path: Path) -> None:
    """export (page, serve), html, serve, render, show: one check, one line, nothing written."""
    from tlnetron.pages.html import write_page
    from tlnetron.pages.pictures import render
    from tlnetron.pages.serve import serve_files

    (tmp_path / "work").mkdir()
    work = tmp_path / "work"
    artifact = str(work / "m.onnx.json")  # never read: the scheme is refused first
    lines = set()
    for args in (
        ["export", str(saved), "-o", str(work / "m.html"), "--colour-by", "heat"],
        ["export", str(saved), "--serve", "--colour-by", "heat"],
        ["html", artifact, "-o", str(work / "m.html"), "--colour-by", "heat"],
        ["serve", artifact, "--no-browser", "--colour-by", "heat"],
        ["render", artifact, "-o", str(work / "m.svg"), "--colour-by", "heat"],
    ):
        exit_code, stderr, loaded = run_main(*args, cwd=work)
        assert exit_code == 3 and loaded == set(), stderr
        lines.add(stderr)
    assert lines == {
        "tlnetron: [invalid_colour_scheme] --colour-by heat is not a colour scheme; nothing was written. "
        "Remedy: choose one of: none, time, flops, bytes, params, diff, nonfinite (default --colour-by none).\n"
    }
    texts = set()
    for call in (
        lambda: tlnetron.export(object(), work / "m.html", colour_by="heat"),
        lambda: tlnetron.export(object(), serve=True, colour_by="heat"),
        lambda: tlnetron.show(Path(artifact), colour_by="heat"),
        lambda: write_page(Path(artifact), None, work / "m.html", colour_by="heat"),
        lambda: serve_files(Path(artifact), None, browse=False, colour_by="heat"),
        lambda: render(artifact, work / "m.svg", colour_by="heat"),
    ):
        with pytest.raises(TlnetronError) as info:
            call()
        texts.add(str(info.value))
    assert texts == {
        '[invalid_colour_scheme] colour_by="heat" is not a colour scheme; nothing was written. '
        'Remedy: choose one of: none, time, flops, bytes, params, diff, nonfinite (default colour_by="none").'
    }
    assert list(work.iterdir()) == []


def test_colour_by_where_no_page_is_made_is_refused(zoo_trace: ZooTrace, tmp_path: Path) -> None:
    """``export(log, "x.onnx.json", colour_by=...)`` colours nothing: refused, naming how to make a page."""
    with pytest.raises(TlnetronError) as info:
        tlnetron.export(zoo_trace(SAVED_MODEL), tmp_path / "x.onnx.json", colour_by="time")
    assert info.value.code == "colour_needs_page"
    assert 'path="model.html" or serve=True' in str(info.value) and "tlnetron html" in str(info.value)
    assert list(tmp_path.iterdir()) == []


def test_python_export_to_a_page_coloured_by_a_scheme(zoo_trace: ZooTrace, tmp_path: Path) -> None:
    result = tlnetron.export(zoo_trace(SAVED_MODEL), tmp_path / "x.html", colour_by="flops")
    assert result.page == tmp_path / "x.html" and [p.name for p in tmp_path.iterdir()] == ["x.html"]
    assert page_data(result.page.read_text(encoding="utf-8"))["colour"] == "flops"


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
    proc = run(
        "export", str(saved), "-o", str(tmp_path / "m.onnx.json"), "--depth", "2", "--granularity", Granularity.OP
    )
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
    probe = (
        f"{code}\nimport sys\nprint('loaded:' + ','.join(m for m in ('onnx', 'torch', 'torchlens', 'ml_dtypes', "
        "'numpy') if m in sys.modules))"
    )
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=TIMEOUT)
    assert proc.returncode == 0, proc.stderr
    last = proc.stdout.strip().splitlines()[-1]
    assert last.startswith("loaded:"), proc.stdout
    return set(filter(None, last[len("loaded:") :].split(",")))


def test_import_and_help_do_not_load_onnx_or_torch() -> None:
    """onnx (and its ml_dtypes, 1.1 s to import with 0.7.0) comes with the exporter, on first use."""
    assert _modules_after("import tlnetron") == set()
    assert (
        _modules_after(
            "import contextlib, tlnetron.cli\nwith contextlib.suppress(SystemExit): tlnetron.cli.main(['--help'])"
        )
        == set()
    )
    assert (
        _modules_after(
            "import contextlib, tlnetron.cli\nwith contextlib.suppress(SystemExit): tlnetron.cli.main(['schema'])"
        )
        == set()
    )


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
    # The exporter loads onnx's protobuf classes and checker only (tlnetron.build._onnx): not
    # onnx/__init__, so not numpy nor ml_dtypes.
    assert _modules_after("from tlnetron import export") == set()
    assert (
        _modules_after("from tlnetron import pipeline\nimport sys\nassert 'onnx.onnx_cpp2py_export' in sys.modules")
        == set()
    )


# ------------------------------------------------------------------ options refused before the slow part

PYTHON_SPELLING = re.compile(
    r"\b(?:path|granularity|depth|show_buffers|attachment|baseline|serve|colour_by)=|\b(?:True|False|None)\b"
)
"""How a refusal names an option to Python callers; the command line must never print it."""

HEAVY = ("onnx", "torch", "torchlens", "ml_dtypes", "numpy")


def run_main(*args: str, cwd: Path) -> tuple[int, str, set[str]]:
    """``tlnetron.cli.main(args)`` in a fresh interpreter: exit code, stderr, heavy modules it imported."""
    probe = (
        "import sys, tlnetron.cli\n"
        f"code = tlnetron.cli.main({list(args)!r})\n"
        f"print('loaded:' + ','.join(m for m in {HEAVY!r} if m in sys.modules))\n"
        "sys.exit(code)\n"
    )
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=TIMEOUT, cwd=cwd)
    last = proc.stdout.strip().splitlines()[-1]
    assert last.startswith("loaded:"), proc.stdout + proc.stderr
    return proc.returncode, proc.stderr, set(filter(None, last[len("loaded:") :].split(",")))


def _bad_export_args(case: str, saved: Path, tmp: Path) -> list[str]:
    (tmp / "a-file").write_text("not a folder")
    (tmp / "folder.onnx.json").mkdir()
    (tmp / "not-a-save").mkdir()
    (tmp / "same").symlink_to(saved)
    out = str(tmp / "m.onnx.json")
    return {
        "-o not .json": ["-o", str(tmp / "m.txt")],
        "-o a directory": ["-o", str(tmp / "folder.onnx.json")],
        "-o under a file": ["-o", str(tmp / "a-file" / "m.onnx.json")],
        "-o in a missing folder": ["-o", str(tmp / "missing" / "m.onnx.json")],
        "no -o, no --serve": [],
        "--depth 0": ["-o", out, "--depth", "0"],
        "--depth with --granularity op": ["-o", out, "--depth", "2", "--granularity", Granularity.OP],
        "--attachment on without -o": ["--attachment", "on", "--serve"],
        "--baseline path missing": ["-o", out, "--baseline", str(tmp / "ref.tlspec")],
        "--baseline word missing": ["-o", out, "--baseline", "run-42"],
        "--baseline not a save": ["-o", out, "--baseline", str(tmp / "not-a-save")],
        "--baseline the trace itself": ["-o", out, "--baseline", str(saved)],
        "--baseline the trace by another path": ["-o", out, "--baseline", str(tmp / "same")],
        "--baseline-id empty": ["-o", out, "--baseline-id", ""],
        "--colour-by unknown": ["-o", str(tmp / "m.html"), "--colour-by", "heat"],
        "--colour-by with no page": ["-o", out, "--colour-by", "time"],
    }[case]


# case -> (code, what the line must say: the flags of the remedy)
BAD_EXPORT = {
    "-o not .json": ("invalid_path", ["does not end in .json", "m.onnx.json"]),
    "-o a directory": ("invalid_path", ["is a directory"]),
    "-o under a file": ("destination_unwritable", ["a-file"]),
    "-o in a missing folder": ("destination_unwritable", ["missing"]),
    "no -o, no --serve": ("invalid_option", ["no -o and no --serve", "pass -o model.onnx.json, or --serve."]),
    "--depth 0": ("invalid_depth", ["--depth 0 is not a positive integer", "pass --depth 1"]),
    "--depth with --granularity op": (
        "depth_not_applicable",
        ["--depth 2 applies only to --granularity module", "drop --depth N, or use --granularity module"],
    ),
    "--attachment on without -o": (
        "attachment_needs_path",
        ["--attachment on needs a file", "(no -o)", "pass -o model.onnx.json", "--attachment auto"],
    ),
    "--baseline path missing": ("invalid_baseline", ["ref.tlspec' does not exist"]),
    "--baseline word missing": ("invalid_baseline", ["'run-42' does not exist", "--baseline-id run-42"]),
    "--baseline not a save": ("invalid_baseline", ["is not a TorchLens save"]),
    "--baseline the trace itself": (
        "invalid_baseline",
        ["the saved trace being exported", "--baseline ref.tlspec", "--baseline-id run-id"],
    ),
    "--baseline the trace by another path": ("invalid_baseline", ["the saved trace being exported"]),
    "--baseline-id empty": (
        "invalid_baseline",
        ["--baseline-id '' is an empty string", "--baseline-id run-2026-11-29", "--baseline ref.tlspec"],
    ),
    "--colour-by unknown": ("invalid_colour_scheme", ["--colour-by heat is not a colour scheme", "none, time, flops"]),
    "--colour-by with no page": (
        "colour_needs_page",
        ["--colour-by time colours a page", "-o model.html or --serve", "tlnetron html"],
    ),
}


@pytest.mark.parametrize("case", sorted(BAD_EXPORT))
def test_bad_options_are_refused_before_torch_or_onnx_is_imported(case: str, saved: Path, tmp_path: Path) -> None:
    """Each refusal comes from the exporter's own checks (or the CLI's, for --baseline),
    with the command line's flags in it, before anything slow: the trace is never loaded."""
    code, says = BAD_EXPORT[case]
    args = _bad_export_args(case, saved, tmp_path)
    before = sorted(p.name for p in tmp_path.iterdir())
    exit_code, stderr, loaded = run_main("export", str(saved), *args, cwd=tmp_path)
    assert exit_code == 3, stderr
    assert stderr.startswith(f"tlnetron: [{code}] ") and stderr.count("\n") == 1, stderr
    for words in says:
        assert words in stderr, stderr
    assert not PYTHON_SPELLING.search(stderr), stderr
    assert "loading" not in stderr  # no trace was loaded
    assert loaded == set()
    assert sorted(p.name for p in tmp_path.iterdir()) == before


def test_a_bad_output_is_refused_before_a_missing_trace_is_noticed(tmp_path: Path) -> None:
    exit_code, stderr, loaded = run_main("export", str(tmp_path / "missing.tlspec"), "-o", "model.txt", cwd=tmp_path)
    assert exit_code == 3 and "[invalid_path]" in stderr and "not a TorchLens save" not in stderr, stderr
    assert loaded == set()
    exit_code, stderr, loaded = run_main(
        "export", str(tmp_path / "missing.tlspec"), "-o", "model.onnx.json", cwd=tmp_path
    )
    assert exit_code == 3 and "[trace_unreadable]" in stderr and "does not exist" in stderr, stderr
    assert loaded == set()


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0, reason="root writes into read-only folders")
def test_an_unwritable_output_folder_is_refused(saved: Path, tmp_path: Path) -> None:
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        exit_code, stderr, loaded = run_main("export", str(saved), "-o", str(locked / "m.onnx.json"), cwd=tmp_path)
        copy_code, copy_err, _ = run_main("schema", "--copy-to", str(locked / "schemas"), cwd=tmp_path)
    finally:
        locked.chmod(0o700)
    assert exit_code == 3 and "[destination_unwritable]" in stderr, stderr
    assert copy_code == 3 and "[destination_unwritable]" in copy_err, copy_err
    assert loaded == set() and list(locked.iterdir()) == []


# ------------------------------------------------------------------ refusals name the command line's flags


def _check_options_refusals() -> list[TlnetronError]:
    """Every refusal ``check_options`` gives, one per branch (the CLI's choices keep some out of its reach)."""
    MODULE, MEANINGFUL = Granularity.MODULE, BufferPolicy.MEANINGFUL
    cases: list[tuple[Any, ...]] = [
        ("m.onnx.json", "layers", None, MEANINGFUL, None, False),
        ("m.onnx.json", MODULE, None, "sometimes", None, False),
        ("m.onnx.json", MODULE, 0, MEANINGFUL, None, False),
        ("m.onnx.json", Granularity.OP, 2, MEANINGFUL, None, False),
        ("m.onnx.json", MODULE, None, MEANINGFUL, "yes", False),
        ("m.onnx.json", MODULE, None, MEANINGFUL, None, "yes"),
        (None, MODULE, None, MEANINGFUL, True, True),
        (None, MODULE, None, MEANINGFUL, None, False),
        (42, MODULE, None, MEANINGFUL, None, False),
        ("m.txt", MODULE, None, MEANINGFUL, None, False),
        ("/", MODULE, None, MEANINGFUL, None, False),
        ("/nonexistent-folder/m.onnx.json", MODULE, None, MEANINGFUL, None, False),
        ("m.html", MODULE, None, MEANINGFUL, None, False, True, "heat"),
        ("m.onnx.json", MODULE, None, MEANINGFUL, None, False, True, "time"),
        (None, MODULE, None, MEANINGFUL, None, False, True, "time"),
    ]
    refusals = []
    for case in cases:
        with pytest.raises(TlnetronError) as info:
            check_options(*case)
        refusals.append(info.value)
    return refusals


def test_every_option_refusal_reads_right_to_python_and_to_the_command_line() -> None:
    from tlnetron.read.baseline import read_baseline
    from tlnetron.read.baseline import read_diff, self_baseline_refusal

    refusals = _check_options_refusals()
    for call in (lambda: read_baseline(None, " "), lambda: read_diff(object(), 5)):
        with pytest.raises(TlnetronError) as info:
            call()
        refusals.append(info.value)
    refusals.append(self_baseline_refusal("the same Trace object as the one being exported"))
    codes = set()
    for err in refusals:
        codes.add(err.code)
        python, command_line = str(err), err.text(cli.cli_spelling)
        assert python.startswith(f"[{err.code}] ") and command_line.startswith(f"[{err.code}] ")
        assert not PYTHON_SPELLING.search(command_line), command_line
        assert not re.search(r"(?<![\w-])--?[a-z]", python.replace("e.g.", "")), python  # no flags for Python callers
    assert codes == {
        "invalid_granularity",
        "invalid_buffer_policy",
        "invalid_depth",
        "depth_not_applicable",
        "invalid_option",
        "attachment_needs_path",
        "invalid_path",
        "destination_unwritable",
        "invalid_baseline",
        "invalid_colour_scheme",
        "colour_needs_page",
    }
    assert codes <= set(ERROR_CODE)


def test_every_export_keyword_has_a_flag_the_parser_accepts() -> None:
    keywords = [name for name in inspect.signature(tlnetron.export).parameters if name not in ("trace", "progress")]
    assert sorted(keywords) == sorted(flags.FLAGS)
    export_parser = next(
        action
        for action in cli.build_parser()._subparsers._group_actions  # type: ignore[union-attr]
    ).choices["export"]
    accepted = {option for action in export_parser._actions for option in action.option_strings}
    assert set(flags.FLAGS.values()) | {"--baseline-id"} <= accepted
    assert set(flags.ATTACHMENT) == set(
        next(a for a in export_parser._actions if "--attachment" in a.option_strings).choices
    )


@pytest.mark.parametrize(
    ("keyword", "value", "spelt"),
    [
        ("granularity", Granularity.MODULE, f"--granularity {Granularity.MODULE}"),
        ("depth", ..., "--depth N"),
        ("depth", 1, "--depth 1"),
        ("show_buffers", BufferPolicy.ALWAYS, f"--show-buffers {BufferPolicy.ALWAYS}"),
        ("attachment", False, "--attachment off"),
        ("attachment", True, "--attachment on"),
        ("attachment", None, "--attachment auto"),
        ("serve", True, "--serve"),
        ("serve", False, "no --serve"),
        ("path", None, "no -o"),
        ("path", "my model.onnx.json", "-o 'my model.onnx.json'"),
        ("baseline", "run 7", "--baseline-id 'run 7'"),
        ("baseline", ..., "--baseline ref.tlspec"),
    ],
)
def test_cli_spelling(keyword: str, value: object, spelt: str) -> None:
    from tlnetron.errors import Opt

    assert cli.cli_spelling(Opt(keyword, value)) == spelt


# ------------------------------------------------------------------ progress, notices, warnings


@pytest.fixture(scope="module")
def saved_ref(zoo_trace: ZooTrace, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A second save of the same capture, as a baseline."""
    folder = tmp_path_factory.mktemp("saved_ref") / "ref.tlspec"
    torchlens.save(zoo_trace(SAVED_MODEL), folder)
    return folder


def test_progress_starts_at_the_import_and_each_load_says_it_unpickles(
    saved: Path, saved_ref: Path, tmp_path: Path
) -> None:
    proc = run("export", str(saved), "-o", str(tmp_path / "m.onnx.json"), "--baseline", str(saved_ref), "--progress")
    assert proc.returncode == 0, proc.stderr
    stages = re.findall(r"\] +\d+% (\w+) ", proc.stderr)
    assert stages[0] == "import", stages
    order = list(dict.fromkeys(stages))
    assert order[:3] == ["import", "load", "read"] and order[-1] == "done", order
    notices = [line for line in proc.stderr.splitlines() if "unpickles" in line]
    assert [line.split("\r")[-1] for line in notices] == [
        f"tlnetron: loading {saved} (torchlens.load unpickles it: only load files you trust)",
        f"tlnetron: loading {saved_ref} (torchlens.load unpickles it: only load files you trust)",
    ]
    assert proc.stderr.index("unpickles") < proc.stderr.index("% load ")


def test_each_warning_is_one_line_with_its_code_and_message(saved: Path, tmp_path: Path) -> None:
    proc = run("export", str(saved), "-o", str(tmp_path / "model.json"), "--no-progress")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stderr.splitlines()
    warned = [line for line in lines if line.startswith("warning ")]
    assert len(warned) == 1, proc.stderr
    assert warned[0].startswith("warning netron_filename_shadowed Netron offers a file named 'model.json'"), warned
    assert "Remedy: name it model.onnx.json." in warned[0]
    assert (proc.stdout + proc.stderr).count("netron_filename_shadowed") == 1
    assert "Warning" not in proc.stderr and "warn(" not in proc.stderr and ".py:" not in proc.stderr, proc.stderr
    assert [line for line in lines if line not in warned and "unpickles" not in line] == [], proc.stderr


# ------------------------------------------------------------------ folders to write into


@pytest.mark.parametrize("command", ["schema --copy-to", "demo --output-dir"])
@pytest.mark.parametrize("where", ["an existing file", "under a file"])
def test_a_folder_option_on_a_file_is_refused_and_writes_nothing(command: str, where: str, tmp_path: Path) -> None:
    blocker = tmp_path / "blocker"
    blocker.write_text("keep me\n")
    mtime = blocker.stat().st_mtime_ns
    dest = blocker if where == "an existing file" else blocker / "inside"
    exit_code, stderr, loaded = run_main(*command.split(), str(dest), cwd=tmp_path)
    assert exit_code == 3, stderr
    assert stderr.startswith("tlnetron: [destination_unwritable] ") and "nothing was written" in stderr, stderr
    assert command.split()[1] in stderr and "Traceback" not in stderr
    assert loaded == set()  # refused before torch or onnx
    assert [p.name for p in tmp_path.iterdir()] == ["blocker"]
    assert blocker.read_text() == "keep me\n" and blocker.stat().st_mtime_ns == mtime


# ------------------------------------------------------------------ a closed pipe


def test_validate_into_head_ends_quietly(demo: tuple[subprocess.CompletedProcess[str], Path], tmp_path: Path) -> None:
    """Megabytes of problem lines into ``head -1``: head's one line, no traceback, the
    exit code of a writer whose reader went away (128 + SIGPIPE)."""
    _, out = demo
    artifact = out / "demo.onnx.json"
    companion = json.loads((out / "demo.onnx.attachment.json").read_text(encoding="utf-8"))
    graph_input = json.loads(artifact.read_text(encoding="utf-8"))["graph"]["input"][0]["name"]
    companion["metrics"] += [
        {"kind": "node", "target": graph_input, "name": f"observed µs {i}", "value": 1.0} for i in range(20_000)
    ]
    bad = tmp_path / "many.attachment.json"
    bad.write_text(json.dumps(companion), encoding="utf-8")
    command = [sys.executable, "-m", "tlnetron.cli", "validate", str(artifact), "--attachment", str(bad)]
    full = subprocess.run(command, capture_output=True, text=True, timeout=TIMEOUT)
    assert full.returncode == 1 and len(full.stdout) > 1_000_000, full.stderr  # far more than a pipe holds
    script = " ".join(map(shlex.quote, command)) + ' | head -1; echo "exit=${PIPESTATUS[0]}" >&2'
    proc = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=TIMEOUT)
    assert proc.stdout.count("\n") == 1 and proc.stdout.startswith("netron_attachment_invalid\t"), proc.stdout[:300]
    assert proc.stderr == f"exit={cli.EXIT_PIPE_CLOSED}\n", proc.stderr


# ------------------------------------------------------------------ the demo


def test_trace_demo_returns_the_last_of_its_traces(monkeypatch: pytest.MonkeyPatch) -> None:
    """A spy around the real ``torchlens.trace``: the demo traces twice and keeps the second."""
    from tlnetron.demo import trace_demo

    real = torchlens.trace
    made: list[Any] = []

    def spy(*args: Any, **kwargs: Any) -> Any:
        made.append(real(*args, **kwargs))
        return made[-1]

    monkeypatch.setattr(torchlens, "trace", spy)
    log = trace_demo()
    assert DEMO_TRACES == 2 and len(made) == DEMO_TRACES
    assert log is made[-1] and log is not made[0]


def test_a_warnings_remedy_names_the_command_lines_flags(zoo_trace: ZooTrace, tmp_path: Path) -> None:
    """A warning that names an option spells it as the command line does (``--granularity
    module``), never as a Python keyword (``granularity="module"``)."""
    folder = tmp_path / "resnet.tlspec"
    torchlens.save(zoo_trace("resnet"), folder, include_custom_attributes=False, include_buffer_values=False)
    proc = run("export", str(folder), "-o", str(tmp_path / "m.onnx.json"), "--granularity", "op", "--no-progress")
    assert proc.returncode == 0, proc.stderr
    (line,) = [line for line in proc.stderr.splitlines() if line.startswith("warning legibility_budget_exceeded ")]
    assert "use the module view (--granularity module, the default)" in line, line
    assert "granularity=" not in line and "depth=" not in line, line


def test_torchlens_warnings_while_loading_print_as_one_line(saved: Path, tmp_path: Path) -> None:
    """TorchLens' own warnings (here one it raises while a save loads) read as one line in
    its words, not as Python's ``file:line: Category: message`` plus a source line."""
    probe = (
        "import sys, warnings, torchlens.errors, tlnetron.cli, tlnetron.read.trace\n"
        "real = tlnetron.read.trace.load_saved_trace\n"
        "def load(path):\n"
        "    warnings.warn(torchlens.errors.TorchLensWarning('this save was written by an older\\n  torchlens'))\n"
        "    return real(path)\n"
        "tlnetron.read.trace.load_saved_trace = load\n"
        f"sys.exit(tlnetron.cli.main(['export', {str(saved)!r}, '-o', {str(tmp_path / 'm.onnx.json')!r}, "
        "'--no-progress']))\n"
    )
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=TIMEOUT)
    assert proc.returncode == 0, proc.stderr
    lines = [line for line in proc.stderr.splitlines() if "unpickles" not in line]
    assert lines == ["torchlens TorchLensWarning: this save was written by an older torchlens"], proc.stderr


def test_serve_refuses_an_unknown_colour_scheme_listing_the_choices(tmp_path: Path) -> None:
    """A bad --colour-by is a typed refusal naming every scheme, before anything is read or served."""
    proc = run("serve", str(tmp_path / "missing.onnx.json"), "--colour-by", "heat", "--no-browser")
    assert proc.returncode == 3, proc.stderr
    assert "invalid_colour_scheme" in proc.stderr and "--colour-by heat is not" in proc.stderr
    assert "none, time, flops, bytes, params, diff, nonfinite" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_export_of_a_missing_path_says_it_does_not_exist(tmp_path: Path) -> None:
    proc = run("export", str(tmp_path / "missing.tlspec"), "-o", str(tmp_path / "m.onnx.json"))
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert "does not exist" in proc.stderr and "not a TorchLens save" not in proc.stderr
    assert "[trace_unreadable]" in proc.stderr and "Remedy:" in proc.stderr
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("word", "flag"),
    [
        ('granularity="module"', "--granularity module"),
        ("depth=2", "--depth 2"),
        ("activation_stats=False", "--no-activation-stats"),
    ],
)
def test_python_keyword_on_the_command_line_names_the_flag(tmp_path: Path, word: str, flag: str) -> None:
    proc = run("export", str(tmp_path / "run.tlspec"), word)
    assert proc.returncode == 2
    assert f"the command line spells it {flag}" in proc.stderr, proc.stderr
    assert list(tmp_path.iterdir()) == []


def test_validate_checks_the_companion_beside_the_artifact(
    demo: tuple[subprocess.CompletedProcess[str], Path], tmp_path: Path
) -> None:
    """validate takes the companion beside the artifact as serve, html and show do, says so on
    stderr, and --no-attachment leaves it out: a companion of another export beside it is found."""
    _, out = demo
    artifact = tmp_path / "m.onnx.json"
    shutil.copyfile(out / "demo.onnx.json", artifact)
    shutil.copyfile(out / "demo.onnx.attachment.json", tmp_path / "m.onnx.attachment.json")
    proc = run("validate", str(artifact))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.strip() == f"valid: {artifact} and {tmp_path / 'm.onnx.attachment.json'}"
    assert "the companion beside the artifact (--no-attachment leaves it out)" in proc.stderr
    other = json.loads((out / "demo.onnx.attachment.json").read_text(encoding="utf-8"))
    other["metadata"][0]["value"] = "0" * len(str(other["metadata"][0]["value"]))  # another export's id
    (tmp_path / "m.onnx.attachment.json").write_text(json.dumps(other), encoding="utf-8")
    proc = run("validate", str(artifact))
    assert proc.returncode == 1 and "companion_mismatch" in proc.stdout, proc.stdout + proc.stderr
    proc = run("validate", str(artifact), "--no-attachment")
    assert proc.returncode == 0 and proc.stdout.strip() == f"valid: {artifact}" and proc.stderr == "", proc.stderr


def test_serve_takes_the_companion_beside_the_artifact(demo: tuple[subprocess.CompletedProcess[str], Path]) -> None:
    _, out = demo
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    env["PYTHONPATH"] = str(Path(tlnetron.__file__).resolve().parent.parent)  # the tlnetron under test, not the tests
    proc = subprocess.Popen(
        [sys.executable, "-m", "tlnetron.cli", "serve", str(out / "demo.onnx.json"), "--no-browser"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
    )  # fmt: skip
    try:
        assert proc.stdout is not None and proc.stderr is not None
        serving = proc.stdout.readline()
        said = proc.stderr.readline()
    finally:
        proc.terminate()
        proc.communicate(timeout=TIMEOUT)  # closes both pipes
    assert serving.startswith("serving    http://127.0.0.1:"), serving + said
    assert f"used {out / 'demo.onnx.attachment.json'}, the companion beside the artifact" in said

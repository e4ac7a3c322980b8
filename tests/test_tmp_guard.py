"""The temporary-folder guard (``tests/tmp_guard.py``) fails a session that leaves files
behind and passes one that does not, in a real pytest session of its own."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent

CONFTEST = """
from collections.abc import Iterator
from pathlib import Path

import pytest

from tmp_guard import own_temporary_folder


@pytest.fixture(scope="session", autouse=True)
def _guard(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    with own_temporary_folder(tmp_path_factory) as root:
        yield root
"""

TESTS_BODY = """
import os
import subprocess
import sys
import tempfile


def test_tidy(tmp_path):
    (tmp_path / "kept-by-pytest.txt").write_text("pytest's own folder is not the guard's")
    with tempfile.TemporaryDirectory() as d:
        open(os.path.join(d, "x"), "w").close()


def test_leaky():
    if os.environ.get("LEAK") == "here":
        tempfile.mkstemp(prefix="leaked-here-")
    if os.environ.get("LEAK") == "child":  # a subprocess inherits the session's folder
        leak = "import tempfile; tempfile.mkdtemp(prefix='leaked-by-child-')"
        subprocess.run([sys.executable, "-c", leak], check=True)
"""


def _session(tmp_path: Path, leak: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "conftest.py").write_text(CONFTEST)
    (tmp_path / "test_inner.py").write_text(TESTS_BODY)
    env = {**os.environ, "PYTHONPATH": str(TESTS), "LEAK": leak}
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "--basetemp",
            str(tmp_path / "base"),
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        env=env,
    )


@pytest.mark.parametrize(("leak", "name"), [("here", "leaked-here-"), ("child", "leaked-by-child-")])
def test_a_session_that_leaves_a_file_fails_naming_it(tmp_path: Path, leak: str, name: str) -> None:
    proc = _session(tmp_path, leak)
    assert proc.returncode != 0, proc.stdout + proc.stderr
    assert "left 1 entries in its temporary folder" in proc.stdout and name in proc.stdout, proc.stdout
    assert "2 passed" in proc.stdout  # the tests passed: the guard failed the session


def test_a_tidy_session_passes_and_its_folder_is_gone(tmp_path: Path) -> None:
    before = set(os.listdir(os.environ["TMPDIR"]))
    proc = _session(tmp_path, "")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert set(os.listdir(os.environ["TMPDIR"])) == before  # its own folder was removed

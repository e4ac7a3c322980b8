"""The suite leaves nothing in the temporary folder: every temporary file of a test session
goes to a folder of its own, and the session fails if anything is left in it at the end.

Used by ``tests/conftest.py`` (a session-wide autouse fixture); held to its promise by
``tests/test_tmp_guard.py``.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

__all__ = ["CACHE_ENV", "TEMP_ENV", "own_temporary_folder"]

TEMP_ENV = ("TMPDIR", "TEMP", "TMP")
"""What ``tempfile`` (and chromium, and node) read for the temporary folder."""

CACHE_ENV = ("TORCHINDUCTOR_CACHE_DIR",)
"""Caches that default to a folder in the temporary folder, kept there on purpose across
runs (tracing T5 through transformers creates torch's ``torchinductor_<user>``): moved
under pytest's own base folder, which pytest keeps and rotates, unless already set."""


@contextlib.contextmanager
def own_temporary_folder(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Point the temporary folder at a fresh one for the rest of the session; at the end,
    remove it, and fail (naming them) if any entries were left in it.

    pytest's own folders (``tmp_path``) are placed first, where pytest keeps them, and the
    caches of :data:`CACHE_ENV` go under them. From
    then on ``tempfile`` in this process, and every subprocess started later (the CLI,
    ``tlnetron serve``, chromium, Playwright's driver), create their temporary files in
    the fresh folder, so whatever is left there was left by the suite, never by another
    process on the machine.
    """
    base = tmp_path_factory.getbasetemp()
    root = Path(tempfile.mkdtemp(prefix="tlnetron-tests-"))
    saved_env = {name: os.environ.get(name) for name in (*TEMP_ENV, *CACHE_ENV)}
    saved_tempdir = tempfile.tempdir
    for name in TEMP_ENV:
        os.environ[name] = str(root)
    for name in CACHE_ENV:
        if saved_env[name] is None:
            os.environ[name] = str(base / name.lower())
    tempfile.tempdir = str(root)
    try:
        yield root
    finally:
        tempfile.tempdir = saved_tempdir
        for name, value in saved_env.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        left = sorted(p.name for p in root.iterdir())
        shutil.rmtree(root, ignore_errors=True)
    if left:
        shown = ", ".join(left[:20]) + (", ..." if len(left) > 20 else "")
        pytest.fail(
            f"the test session left {len(left)} entries in its temporary folder (now removed): {shown}", pytrace=False
        )

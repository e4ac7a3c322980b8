"""Readers never report a torn pair: ``validate``, ``html`` and ``serve`` read an artifact and
its companion from one export while another process exports to that place again and again.

The exports are of IR literals (no torch), as in test_pairs.
"""

from __future__ import annotations

import multiprocessing
import os
from pathlib import Path
from typing import Any

import pytest

from test_pairs import ARTIFACT, COMPANION, write
from tlnetron import TlnetronError
from tlnetron.cli import commands
from tlnetron.pages.html import page_from_files
from tlnetron.read.files import MAX_BYTES, PAGE_MAX_BYTES, read_input
from tlnetron.write.pair import read_pair


def _exporting(folder: str, stop: Any) -> None:
    n = 0
    while not stop.is_set():
        write(Path(folder), 2 + n % 3)
        n += 1


@pytest.fixture
def busy(tmp_path: Path) -> Any:
    write(tmp_path, 2)
    ctx = multiprocessing.get_context("fork")
    stop = ctx.Event()
    proc = ctx.Process(target=_exporting, args=(str(tmp_path), stop))
    proc.start()
    yield tmp_path
    stop.set()
    proc.join(timeout=60)
    assert proc.exitcode == 0


def test_validate_reads_one_export_during_exports(busy: Path) -> None:
    for _ in range(150):
        problems = commands.validate_files(busy / ARTIFACT, busy / COMPANION)
        assert [p for p in problems if p.code == "companion_mismatch"] == []


def test_the_page_and_the_server_read_one_export_during_exports(busy: Path) -> None:
    from tlnetron.check.pairs import mismatched_pair
    from tlnetron.read.files import companion_object

    def read(p: Path) -> bytes:
        return read_input(p, "", "nothing was written")

    for _ in range(150):
        data, cdata = read_pair(busy / ARTIFACT, busy / COMPANION, read)
        assert mismatched_pair((ARTIFACT, data), (COMPANION, companion_object(COMPANION, cdata)), "alone") is None


@pytest.mark.parametrize("special", ["fifo", "/dev/zero"])
def test_serve_refuses_what_html_refuses_at_once(tmp_path: Path, special: str) -> None:
    from tlnetron.pages.serve import serve_files

    if special == "fifo":
        path = tmp_path / "p.onnx.json"
        os.mkfifo(path)
    else:
        path = Path(special)
    with pytest.raises(TlnetronError) as serve_refusal:
        serve_files(path, None, browse=False)
    with pytest.raises(TlnetronError) as html_refusal:
        page_from_files(path, None)
    assert serve_refusal.value.code == html_refusal.value.code == "invalid_path"


@pytest.mark.parametrize("size", [4000 * 2**20, PAGE_MAX_BYTES + 1])
def test_serve_and_html_refuse_a_file_past_what_their_page_reads(tmp_path: Path, size: int) -> None:
    """Sparse: refused from its size alone, naming where it opens instead (Netron reads more)."""
    from tlnetron.pages.serve import serve_files

    big = tmp_path / "big.onnx.json"
    with open(big, "wb") as fh:
        fh.truncate(size)
    for call in (lambda: serve_files(big, None, browse=False), lambda: page_from_files(big, None)):
        with pytest.raises(TlnetronError) as refusal:
            call()
        assert refusal.value.code == "invalid_path" and f"past the {PAGE_MAX_BYTES:,}" in str(refusal.value)
        assert "netron.app" in str(refusal.value) and f"{MAX_BYTES:,}" in str(refusal.value)


def test_pages_built_in_memory_refuse_what_they_cannot_carry(tmp_path: Path) -> None:
    """A page or a served model made from bytes (``export(trace, "x.html")``, ``serve=True``
    without a path, ``show``) is held to the limit a file on disk is: refused before anything
    is built or served, with where it opens instead."""
    from tlnetron.pages.html import build_page
    from tlnetron.pages.serve import serve_bytes

    big = ("big.onnx.json", b" " * (PAGE_MAX_BYTES + 1))
    small = ("small.onnx.json", b"{}")
    for call, outcome in (
        (lambda: build_page(big), "no page was made"),
        (lambda: build_page(small, ("big.onnx.attachment.json", big[1])), "no page was made"),
        (lambda: serve_bytes(big, None, browse=False), "nothing was served"),
    ):
        with pytest.raises(TlnetronError) as refusal:
            call()
        assert refusal.value.code == "page_too_large", refusal.value
        assert f"past the {PAGE_MAX_BYTES:,}" in str(refusal.value) and outcome in str(refusal.value)
        assert "Netron app" in str(refusal.value) and f"{MAX_BYTES:,}" in str(refusal.value)

"""The size limits of ``read/files.py``, checked in the real headless Chromium and the real Netron.

* ``PAGE_MAX_BYTES`` (``serve``, ``html``, ``show``): our pages' heat map reads the file as one
  JavaScript string (``response.json()``, ``blob.text()``); Chromium holds a string of that many
  characters and no more: one byte more decodes to "" (the heat map would get nothing).
* ``MAX_BYTES`` (``validate``): Netron itself reads JSON byte by byte, so it opens a file past
  ``PAGE_MAX_BYTES``; it tries no file of 0x7ffff000 bytes or more ("Unsupported file content").
  That boundary takes two 2 GiB files and about a minute, so it runs only with
  ``TLNETRON_E2E_HEAVY=1``.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from netron_driver import ErrorDialogError, NetronPage
from tlnetron.read.files import MAX_BYTES, PAGE_MAX_BYTES

pytestmark = pytest.mark.e2e

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "tiny_op.onnx.json"

_DECODE = """async (n) => {
    const spaces = () => {  // "[", spaces, "]": JSON of an empty list
        const bytes = new Uint8Array(n).fill(32);
        bytes[0] = 0x5b;
        bytes[n - 1] = 0x5d;
        return bytes;
    };
    const length = async (read) => { try { return (await read()).length; } catch (e) { return e.name; } };
    return {
        repeat: await length(async () => ' '.repeat(n)),
        text_decoder: await length(async () => new TextDecoder().decode(spaces())),
        response_text: await length(() => new Response(spaces()).text()),
        response_json: await length(async () => JSON.stringify(await new Response(spaces()).json())),
    };
}"""


def padded(path: Path, size: int) -> Path:
    """A valid artifact followed by spaces (JSON whitespace) up to ``size`` bytes."""
    model = GOLDEN.read_bytes().rstrip()
    with open(path, "wb") as fh:
        fh.write(model)
        left = size - len(model)
        block = b" " * 2**24
        while left:
            fh.write(block[: min(left, len(block))])
            left -= min(left, len(block))
    assert path.stat().st_size == size
    return path


def test_chromium_holds_a_string_of_page_max_bytes_and_no_more(netron: NetronPage) -> None:
    netron.page.goto("about:blank")
    at = netron.page.evaluate(_DECODE, PAGE_MAX_BYTES)
    assert at == {
        "repeat": PAGE_MAX_BYTES,
        "text_decoder": PAGE_MAX_BYTES,
        "response_text": PAGE_MAX_BYTES,
        "response_json": 2,
    }, at
    past = netron.page.evaluate(_DECODE, PAGE_MAX_BYTES + 1)
    assert past["repeat"] == "RangeError" and all(
        past[k] in (0, "RangeError") for k in ("text_decoder", "response_text")
    ), past
    assert past["response_json"] == "SyntaxError", past  # JSON.parse of the "" it decoded to


def test_netron_itself_opens_a_file_past_page_max_bytes(netron: NetronPage, tmp_path: Path) -> None:
    """So the page limit is ours, not Netron's: ``validate`` does not use it."""
    assert MAX_BYTES > PAGE_MAX_BYTES
    netron.open_dropped(padded(tmp_path / "past.onnx.json", PAGE_MAX_BYTES + 1), timeout=600)
    assert netron.drawn_nodes()


@pytest.mark.skipif(not os.environ.get("TLNETRON_E2E_HEAVY"), reason="two 2 GiB files: set TLNETRON_E2E_HEAVY=1")
def test_netron_opens_max_bytes_and_refuses_one_byte_more(netron: NetronPage, tmp_path: Path) -> None:
    path = padded(tmp_path / "edge.onnx.json", MAX_BYTES + 1)
    with pytest.raises(ErrorDialogError, match="Unsupported file content"):
        netron.open_dropped(path, timeout=900)
    os.truncate(path, MAX_BYTES)
    netron.open_dropped(path, timeout=900)
    assert netron.drawn_nodes()

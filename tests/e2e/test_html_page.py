"""``tlnetron html``: the one-file page, opened from disk in the real Netron, with no server and no network.

* The page is written by the command line (``tlnetron html ARTIFACT --attachment C -o
  page.html``) and opened as ``file://.../page.html`` in a fresh browser context, by a
  first-time visitor who reads the cookie notice for a few seconds (or clicks Accept at
  once): the graph is drawn (every node, edge and label of the artifact), then the
  companion's rows show in Node Properties and Model Properties, inside functions too.
* No request leaves the browser for any host (the driver aborts and lists any that would),
  and what Netron tries (its location lookup, its analytics) is refused by the page's own
  policy before it is sent.
* A ``file://`` page keeps no cookie: every visit, a reload included, asks again; after
  Accept the model and companion are shown again.
* A broken artifact gets the ONNX reader's own error dialog, the one the served app shows
  (the page holds only the readers an ONNX JSON file needs; the others match nothing).
* Past Netron's age gate (the browser's clock moved past it) the page shows Netron's own
  "Please update to the newest version" and its note says how to regenerate it.
"""

from __future__ import annotations

import copy
import datetime as _dt
import json
import urllib.parse
from pathlib import Path
from typing import Any

import pytest

from netron_driver import AGE_GATE_TEXT, AgeGateError, ErrorDialogError, NetronPage
from test_artifacts import (
    _corrupt_base64,
    _corrupt_elem_type,
    check_drawn_body,
    check_pair_in_page,
    companion_rows,
    export_quietly,
    op_boxes,
    rows_once_attached,
)
from tlnetron._generated.vocab import Granularity, MetaKey
from tlnetron.cli import main

pytestmark = pytest.mark.e2e

COMPANION_SUFFIX = "+ companion"
MODEL_SUFFIX = "+ model"
READING_SECONDS = 4.0  # how long a person looks at the cookie notice before clicking Accept


@pytest.fixture
def demo_files(zoo_trace: Any, tmp_path: Path) -> tuple[Path, Path]:
    result = export_quietly(zoo_trace("demo"), tmp_path / "demo.onnx.json")
    assert result.artifact is not None and result.companion is not None
    return result.artifact, result.companion


def write_html(artifact: Path, companion: Path | None, out: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    args = [
        "html",
        str(artifact),
        *(["--attachment", str(companion)] if companion else ["--no-attachment"]),
        "-o",
        str(out),
    ]
    assert main(args) == 0
    assert f"wrote      {out}" in capsys.readouterr().out
    return out


def check_stays_local(netron: NetronPage) -> None:
    """Nothing was sent to any host: the driver aborted nothing, and every request Netron
    tried was refused by the page's policy (none of them is a file of the page's own)."""
    assert netron.blocked_requests() == []
    refused = netron.csp_refused()
    assert refused, "Netron's location lookup should have been tried and refused"
    assert all(urllib.parse.urlsplit(u).scheme == "https" for u in refused), refused


def check_page(netron: NetronPage, artifact: Path, companion: Path, page: Path) -> None:
    model = json.loads(artifact.read_text("utf-8"))
    attachment = json.loads(companion.read_text("utf-8"))
    graph = model["graph"]
    assert netron._context.cookies() == []  # a first visit
    netron.open_file_url(page)
    assert netron.wait_title(COMPANION_SUFFIX).startswith(artifact.name)
    assert netron.consent_clicks == 1
    check_drawn_body(netron, graph, f"page {page.name}")
    assert len(op_boxes(netron)) == len(graph["node"])

    check_pair_in_page(netron, model, attachment, f"page {page.name}")
    op = next(n for n in graph["node"] if "overload" not in n)  # its rows are read again after each reload
    assert netron.console_errors() == []
    check_stays_local(netron)

    # file:// keeps no cookie: the notice comes back on a reload, and after Accept both files again.
    netron.reload()
    assert netron.wait_title(COMPANION_SUFFIX).startswith(artifact.name)
    assert netron.consent_clicks == 2, "a file:// page asks again on every visit"
    assert netron._context.cookies() == []
    props = rows_once_attached(netron, op["name"])
    assert props.get("Metrics") == companion_rows(attachment, "metrics", "node", op["name"]), props
    assert netron.console_errors() == []
    check_stays_local(netron)


@pytest.mark.parametrize("delay", [READING_SECONDS, 0.0], ids=["accept-after-reading", "accept-at-once"])
def test_page_from_disk_shows_model_then_companion(
    visitor: Any, demo_files: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str], delay: float
) -> None:
    artifact, companion = demo_files
    (tmp_path / "page").mkdir()  # a folder of its own: the page needs no file beside it
    page = write_html(artifact, companion, tmp_path / "page" / "demo.html", capsys)
    check_page(visitor(delay), artifact, companion, page)


def test_page_without_companion(
    visitor: Any, demo_files: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    artifact, _ = demo_files
    page = write_html(artifact, None, tmp_path / "model-only.html", capsys)
    netron = visitor(0.0)
    netron.open_file_url(page)
    assert netron.wait_title(MODEL_SUFFIX).startswith(artifact.name)
    graph = json.loads(artifact.read_text("utf-8"))["graph"]
    check_drawn_body(netron, graph, "model-only page")
    props = netron.open_model_properties()
    assert dict(props["Metadata"])[MetaKey.GRANULARITY] == Granularity.MODULE
    assert "Metrics" not in props
    assert netron.console_errors() == []
    check_stays_local(netron)


@pytest.mark.parametrize(
    ("corrupt", "dialog"),
    [(_corrupt_elem_type, "Unsupported data type"), (_corrupt_base64, "File JSON format is not onnx.ModelProto")],
    ids=["elemType-string", "invalid-base64"],
)
def test_broken_artifact_gets_the_served_apps_dialog(
    visitor: Any,
    demo_files: tuple[Path, Path],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    corrupt: Any,
    dialog: str,
) -> None:
    artifact, companion = demo_files
    model = json.loads(artifact.read_text("utf-8"))
    broken = copy.deepcopy(model)
    corrupt(broken)
    path = tmp_path / "broken.onnx.json"
    path.write_text(json.dumps(broken, ensure_ascii=False), encoding="utf-8")
    page = write_html(path, companion, tmp_path / "broken.html", capsys)
    netron = visitor(0.0)
    with pytest.raises(ErrorDialogError, match=dialog):
        netron.open_file_url(page)
    assert netron.blocked_requests() == []


def test_page_past_the_age_gate_says_how_to_regenerate(
    visitor: Any, demo_files: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The browser's clock one day past the gate: Netron's own notice, and the page's note in plain sight."""
    from tlnetron.pages.html import page_from_files

    artifact, companion = demo_files
    page = write_html(artifact, companion, tmp_path / "old.html", capsys)
    expires = page_from_files(artifact, companion).expires
    netron = visitor(0.0)
    netron.page.clock.set_system_time(expires + _dt.timedelta(days=1))
    with pytest.raises(AgeGateError) as gate:
        netron.open_file_url(page, timeout=20)
    assert gate.value.message == AGE_GATE_TEXT
    note = netron.page.locator("#tlnetron-note")
    assert "tlnetron-expired" in (note.get_attribute("class") or "")
    text = note.text_content() or ""
    assert f"until {expires:%Y-%m-%d}" in text
    assert f"tlnetron html {artifact.name} --attachment {companion.name} -o old.html" in text
    assert note.is_visible()
    assert op_boxes(netron) == []
    assert netron.blocked_requests() == []


def test_note_sits_under_the_sidebar(
    visitor: Any, demo_files: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The note is in plain sight over the empty canvas corner, and an open sidebar covers it:
    the last rows of Node Properties stay readable (in a notebook-sized window too). The note
    takes no clicks, so the probe lets it take them while it asks what is on top."""
    artifact, companion = demo_files
    page = write_html(artifact, companion, tmp_path / "demo.html", capsys)
    netron = visitor(0.0)
    netron.page.set_viewport_size({"width": 900, "height": 600})
    netron.open_file_url(page)
    netron.wait_title(COMPANION_SUFFIX)
    probe = (
        "(() => { const n = document.getElementById('tlnetron-note'); const r = n.getBoundingClientRect();"
        " n.style.pointerEvents = 'auto'; const at = document.elementFromPoint(r.left + r.width / 2, r.top + "
        "r.height / 2);"
        " n.style.pointerEvents = '';"
        " return {inside: r.left >= 0 && r.right <= innerWidth && r.bottom <= innerHeight, top: "
        "n.contains(at), under: at ? (at.closest('.sidebar') ? 'sidebar' : at.tagName + '#' + at.id + '.' + "
        "at.className) : null}; })()"
    )
    closed = netron._js(probe)
    assert closed["inside"] and closed["top"], closed  # read whole, nothing in front of it
    op = next(n for n in json.loads(artifact.read_text("utf-8"))["graph"]["node"] if "overload" not in n)
    netron.open_node_properties(op["name"])
    opened = netron._js(probe)
    assert not opened["top"] and opened["under"] == "sidebar", opened

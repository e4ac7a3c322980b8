"""``tlnetron.show(...)`` in a real Jupyter kernel, and its output in the real Netron.

A notebook is run by ``nbclient`` on a real IPython kernel (``ipykernel``): one cell shows
an artifact by its path (its companion found beside it), another what an export of the demo
model made in the kernel returned (the page is built from the result's bytes). Each cell's
``text/html`` output, the ``<iframe
srcdoc=...>``, is then put in a page as a notebook frontend puts it, and opened in headless
Chromium: Netron in the iframe draws the graph, then the companion's rows show, with no
server and no request to any host.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import nbformat
import pytest
from nbclient import NotebookClient

from netron_driver import NetronBrowser, NetronPage
from test_artifacts import check_drawn_body, companion_rows, export_quietly
from tlnetron._generated.vocab import Granularity, MetaKey

pytestmark = pytest.mark.e2e

FRAME = "iframe"


def run_cells(sources: list[str], folder: Path, monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """Run the cells in a fresh kernel; each cell's outputs. Jupyter's and IPython's own
    files go into ``folder`` (not the home folder)."""
    for name in ("JUPYTER_RUNTIME_DIR", "JUPYTER_DATA_DIR", "JUPYTER_CONFIG_DIR", "IPYTHONDIR", "MPLCONFIGDIR"):
        (folder / name.lower()).mkdir(parents=True)
        monkeypatch.setenv(name, str(folder / name.lower()))
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(source) for source in sources])
    NotebookClient(
        notebook, timeout=180, kernel_name="python3", resources={"metadata": {"path": str(folder)}}
    ).execute()
    return [cell["outputs"] for cell in notebook.cells]


def html_output(outputs: list[dict[str, Any]], text: str = "<tlnetron page: ") -> str:
    shown = [o for o in outputs if o["output_type"] == "execute_result"]
    assert len(shown) == 1, outputs
    assert shown[0]["data"]["text/plain"].startswith(text), shown[0]["data"]["text/plain"]
    return str(shown[0]["data"]["text/html"])


def frame_title(netron: NetronPage, suffix: str, timeout: float = 30.0) -> str:
    deadline = time.monotonic() + timeout
    while True:
        title = str(netron._js("document.title"))
        if title.endswith(suffix) or time.monotonic() > deadline:
            return title
        time.sleep(0.1)


def open_output(netron: NetronPage, output: str, folder: Path, name: str) -> None:
    page = folder / f"{name}.html"
    page.write_text(
        f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>notebook</title></head><body>{output}</body></html>",
        encoding="utf-8",
    )
    netron.open_url(page.resolve().as_uri(), frame=FRAME)


def test_show_in_a_real_kernel(
    netron_browser: NetronBrowser, zoo_trace: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    result = export_quietly(zoo_trace("demo"), tmp_path / "demo.onnx.json")
    assert result.artifact is not None and result.companion is not None
    outputs = run_cells(
        [
            "import tlnetron",
            f"tlnetron.show({str(result.artifact)!r})",
            "import warnings\n"
            "from tlnetron.demo import trace_demo\n"
            "with warnings.catch_warnings():\n"
            "    warnings.simplefilter('ignore')\n"
            "    exported = tlnetron.export(trace_demo(), 'in-kernel.onnx.json')\n"
            "tlnetron.show(exported, height=500)",
            "warnings.simplefilter('ignore')\ntlnetron.export(trace_demo(), 'last-line.onnx.json')",
        ],
        tmp_path / "kernel",
        monkeypatch,
    )
    model = json.loads(result.artifact.read_text("utf-8"))
    attachment = json.loads(result.companion.read_text("utf-8"))
    op = next(n for n in model["graph"]["node"] if "overload" not in n)

    by_path = html_output(outputs[1])
    assert by_path.startswith('<iframe srcdoc="') and "height:720px" in by_path
    with netron_browser.new_page(consent="click", timeout=60) as netron:
        open_output(netron, by_path, tmp_path, "by-path")
        assert frame_title(netron, "+ companion").startswith("demo.onnx.json")
        check_drawn_body(netron, model["graph"], "notebook output (by path)")
        props = netron.open_node_properties(op["name"])
        assert props.get("Metrics") == companion_rows(attachment, "metrics", "node", op["name"]), props
        assert netron.console_errors() == []
        assert netron.blocked_requests() == []

    from_result = html_output(outputs[2])
    assert "height:500px" in from_result
    with netron_browser.new_page(consent="click", timeout=60) as netron:
        open_output(netron, from_result, tmp_path, "from-result")
        assert frame_title(netron, "+ companion").startswith("in-kernel.onnx.json")
        props = netron.open_model_properties()
        assert dict(props["Metadata"])[MetaKey.GRANULARITY] == Granularity.MODULE
        assert "Metrics" in props
        assert netron.console_errors() == []
        assert netron.blocked_requests() == []

    # An export as a cell's last line: a one-line summary as text, the page itself as HTML.
    last_line = html_output(outputs[3], "<tlnetron.ExportResult module view: ")
    assert len(outputs[3][0]["data"]["text/plain"]) < 200
    with netron_browser.new_page(consent="click", timeout=60) as netron:
        open_output(netron, last_line, tmp_path, "last-line")
        assert frame_title(netron, "+ companion").startswith("last-line.onnx.json")
        assert "Metrics" in netron.open_model_properties()
        assert netron.console_errors() == []
        assert netron.blocked_requests() == []

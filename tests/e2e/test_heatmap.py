"""Heat map in the served page (issue 34): colours read back from the DOM against the companion."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from netron_driver import NetronPage
from test_artifacts import export_quietly
from tlnetron.pages.serve import serve_files

pytestmark = pytest.mark.e2e

TIME_ROWS = ("observed µs", "inclusive µs", "all-pass µs")

_PAINTED = r"""(() => Array.from(document.querySelectorAll('#nodes > g.node.graph-node[id^="node-name-"]')).map((g) => ({
  name: g.id.slice('node-name-'.length),
  colour: g.getAttribute('data-tlnetron-colour'),
  value: g.getAttribute('data-tlnetron-value'),
  fill: (() => { const p = g.querySelector(':scope > g.node-item-type > path'); return p ? getComputedStyle(p).fill : null; })()
})))()"""


@pytest.fixture
def served_demo(zoo_trace: Any, tmp_path: Path) -> Iterator[tuple[str, Path]]:
    exported = export_quietly(zoo_trace("demo"), tmp_path / "demo.onnx.json")
    assert exported.companion is not None
    served = serve_files(exported.artifact, exported.companion, browse=False)  # type: ignore[arg-type]
    yield served.url, exported.companion
    served.server.stop()


def painted(netron: NetronPage, want: int) -> list[dict[str, Any]]:
    # Painting follows Netron's redraw by an animation frame: wait until every node says its colour.
    deadline = time.monotonic() + 10
    while True:
        nodes = netron._js(_PAINTED)
        if nodes and all(n["colour"] for n in nodes) and len(nodes) >= want:
            return nodes  # type: ignore[no-any-return]
        assert time.monotonic() < deadline, f"nodes not painted: {nodes}"
        time.sleep(0.05)


def time_of(companion: Path) -> dict[str, float]:
    rows: dict[str, dict[str, float]] = {}
    for row in json.loads(companion.read_text("utf-8"))["metrics"]:
        if row["kind"] == "node":
            rows.setdefault(row["target"], {})[row["name"]] = row["value"]
    return {t: next(r[n] for n in TIME_ROWS if n in r) for t, r in rows.items() if any(n in r for n in TIME_ROWS)}


def luminance(colour: str) -> float:
    r, g, b = (int(colour[i:i + 2], 16) for i in (1, 3, 5))
    return 0.299 * r + 0.587 * g + 0.114 * b


def check_time_colours(nodes: list[dict[str, Any]], times: dict[str, float]) -> None:
    valued = [n for n in nodes if n["name"] in times and times[n["name"]] > 0]
    assert valued, nodes
    for n in nodes:
        if n["name"] not in times or times[n["name"]] <= 0:
            assert n["colour"] == "#d9d9d9" and n["value"] is None, n  # absent: neutral, never the scale's zero
        else:
            assert float(n["value"]) == pytest.approx(times[n["name"]]), n
    # viridis runs dark to light: a longer time is never drawn darker than a shorter one
    ranked = sorted(valued, key=lambda n: times[n["name"]])
    lums = [luminance(n["colour"]) for n in ranked]
    assert lums == sorted(lums), [(n["name"], times[n["name"]], n["colour"]) for n in ranked]


def test_time_heat_map_matches_the_companion_and_survives_drill_down(
    netron: NetronPage, served_demo: tuple[str, Path]
) -> None:
    url, companion = served_demo
    netron.open_url(url + "?colour=time", frame="#netron")
    netron.wait_title(" + companion")
    times = time_of(companion)
    root = painted(netron, 1)
    check_time_colours(root, times)
    call = next(n for n in netron.drawn_nodes() if n["function"])
    netron.drill_into(call["name"])
    inner = painted(netron, 1)
    assert {n["name"] for n in inner} != {n["name"] for n in root}
    check_time_colours(inner, times)
    netron.go_up()
    check_time_colours(painted(netron, len(root)), times)


def test_no_scheme_is_netrons_own_page(netron: NetronPage, served_demo: tuple[str, Path]) -> None:
    url, _ = served_demo
    netron.open_url(url, frame="#netron")
    netron.wait_title(" + companion")
    nodes = netron._js(_PAINTED)
    assert nodes and all(n["colour"] is None for n in nodes)
    assert {n["fill"] for n in nodes} <= {"rgb(51, 51, 51)"}  # .node-item-type path { fill: #333 }


def test_html_page_colours_by_its_colour_by(netron_browser: Any, zoo_trace: Any, tmp_path: Path) -> None:
    """tlnetron html --colour-by time: the page from disk starts coloured, from the companion it holds."""
    from tlnetron.pages.html import write_page

    exported = export_quietly(zoo_trace("demo"), tmp_path / "demo.onnx.json")
    assert exported.companion is not None
    page = tmp_path / "demo.html"
    write_page(exported.artifact, exported.companion, page, colour_by="time")  # type: ignore[arg-type]
    with netron_browser.new_page(consent="click", timeout=60) as netron:
        netron.open_file_url(page)
        netron.wait_title(" + companion")
        check_time_colours(painted(netron, 1), time_of(exported.companion))


def test_show_refuses_an_unknown_colour_scheme(tmp_path: Path) -> None:
    import tlnetron
    from tlnetron.errors import TlnetronError

    with pytest.raises(TlnetronError) as caught:
        tlnetron.show(tmp_path / "missing.onnx.json", colour_by="heat")
    assert caught.value.code == "invalid_colour_scheme" and "nonfinite" in str(caught.value)


def test_render_svg_is_netrons_export_coloured_and_deterministic(zoo_trace: Any, tmp_path: Path) -> None:
    """tlnetron render: the SVG Netron's export writes, one box per drawn node, coloured, the same bytes twice."""
    import subprocess
    import sys

    exported = export_quietly(zoo_trace("demo"), tmp_path / "demo.onnx.json")
    artifact = json.loads(exported.artifact.read_text("utf-8"))  # type: ignore[union-attr]
    pictures = [tmp_path / f"demo{i}.svg" for i in (1, 2)]
    for picture in pictures:  # a fresh process each (this session's Playwright is the driver's)
        subprocess.run([sys.executable, "-m", "tlnetron.cli", "render", str(exported.artifact), "--attachment",
                        str(exported.companion), "-o", str(picture), "--colour-by", "time"], check=True, timeout=300)
    text = pictures[0].read_text("utf-8")
    assert text.count('class="node graph-node') == len(artifact["graph"]["node"])
    assert 'rect class="tlnetron-heat"' in text
    assert pictures[0].read_bytes() == pictures[1].read_bytes()


def test_render_refuses_a_bad_format_and_scheme(tmp_path: Path) -> None:
    from tlnetron.errors import TlnetronError
    from tlnetron.pages.pictures import render

    with pytest.raises(TlnetronError) as caught:
        render(tmp_path / "m.onnx.json", tmp_path / "m.jpg")
    assert caught.value.code == "invalid_path" and not (tmp_path / "m.jpg").exists()
    with pytest.raises(TlnetronError) as caught:
        render(tmp_path / "m.onnx.json", tmp_path / "m.svg", colour_by="heat")
    assert caught.value.code == "invalid_colour_scheme"


def test_exported_page_opens_coloured_by_colour_by(netron_browser: Any, zoo_trace: Any, tmp_path: Path) -> None:
    """tlnetron.export(log, "x.html", colour_by="time"): the page from disk starts coloured, from the companion it holds."""
    result = export_quietly(zoo_trace("demo"), tmp_path / "demo.html", colour_by="time")
    assert result.page is not None and result.companion_bytes is not None
    companion = tmp_path / "companion.json"
    companion.write_bytes(result.companion_bytes)
    with netron_browser.new_page(consent="click", timeout=60) as netron:
        netron.open_file_url(result.page)
        netron.wait_title(" + companion")
        check_time_colours(painted(netron, 1), time_of(companion))
        assert netron._js("document.getElementById('tlnetron-colour').value") == "time"

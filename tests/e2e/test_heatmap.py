"""Heat map in the served page (issue 34): colours read back from the DOM against the companion."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

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
FLOP_ROWS = ("estimated FLOPs", "inclusive FLOPs", "all-pass FLOPs")
NEUTRAL, ZERO = "#d9d9d9", "#ffffff"  # heatmap.js: no value; a value known to be 0

_PAINTED = r"""(() => Array.from(document.querySelectorAll('#nodes > g.node.graph-node[id^="node-name-"]'))
.map((g) => ({
  name: g.id.slice('node-name-'.length),
  colour: g.getAttribute('data-tlnetron-colour'),
  value: g.getAttribute('data-tlnetron-value'),
  fill: (() => {
    const p = g.querySelector(':scope > g.node-item-type > path');
    return p ? getComputedStyle(p).fill : null;
  })()
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


def node_rows(companion: Path, names: tuple[str, ...]) -> dict[str, float]:
    """Each node's value under a scheme's rows (the first of ``names`` it has), as the page reads it."""
    rows: dict[str, dict[str, float]] = {}
    for row in json.loads(companion.read_text("utf-8"))["metrics"]:
        if row["kind"] == "node":
            rows.setdefault(row["target"], {})[row["name"]] = row["value"]
    return {t: next(r[n] for n in names if n in r) for t, r in rows.items() if any(n in r for n in names)}


def time_of(companion: Path) -> dict[str, float]:
    return node_rows(companion, TIME_ROWS)


def luminance(colour: str) -> float:
    r, g, b = (int(colour[i : i + 2], 16) for i in (1, 3, 5))
    return 0.299 * r + 0.587 * g + 0.114 * b


def check_time_colours(nodes: list[dict[str, Any]], times: dict[str, float]) -> None:
    valued = [n for n in nodes if n["name"] in times and times[n["name"]] > 0]
    assert valued, nodes
    for n in nodes:
        if n["name"] not in times:
            assert n["colour"] == NEUTRAL and n["value"] is None, n  # absent: neutral, never the scale's zero
        elif times[n["name"]] == 0:
            assert n["colour"] == ZERO and n["value"] == "0", n  # known to be 0: its own colour, not "no value"
        else:
            assert float(n["value"]) == pytest.approx(times[n["name"]]), n
            assert n["colour"] not in (NEUTRAL, ZERO), n
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


def test_a_known_zero_is_its_own_colour_apart_from_no_value(netron: NetronPage, served_demo: tuple[str, Path]) -> None:
    """Colour by FLOPs: a reshape's 0 FLOPs is a value (white, "0 FLOPs" in the legend), not the
    grey of a node with no FLOP row; both are told apart from the scale."""
    url, companion = served_demo
    flops = node_rows(companion, FLOP_ROWS)
    netron.open_url(url + "?colour=flops", frame="#netron")
    netron.wait_title(" + companion")
    shown = painted(netron, 1)
    for _ in range(3):  # down the first calls to where single ops (some of 0 FLOPs) are drawn
        if any(flops.get(n["name"]) == 0 for n in shown):
            break
        netron.drill_into(next(n for n in netron.drawn_nodes() if n["function"])["name"])
        shown = painted(netron, 1)
    assert any(flops.get(n["name"]) == 0 for n in shown), shown
    check_time_colours(shown, flops)
    legend = netron._top_js("document.getElementById('tlnetron-legend').textContent")
    assert "0 FLOPs" in legend and "no value" in legend, legend


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
        subprocess.run(
            [
                sys.executable,
                "-m",
                "tlnetron.cli",
                "render",
                str(exported.artifact),
                "--attachment",
                str(exported.companion),
                "-o",
                str(picture),
                "--colour-by",
                "time",
            ],
            check=True,
            timeout=300,
        )
    text = pictures[0].read_text("utf-8")
    assert text.count('class="node graph-node') == len(artifact["graph"]["node"])
    assert 'rect class="tlnetron-heat"' in text
    assert pictures[0].read_bytes() == pictures[1].read_bytes()
    # The picture says what its colours mean: the page's legend, drawn into the graph Netron exports.
    legend = ET.fromstring(text).find(".//{http://www.w3.org/2000/svg}g[@id='tlnetron-picture-legend']")
    assert legend is not None, "the legend is not in the exported picture"
    words = [t.text for t in legend.iter("{http://www.w3.org/2000/svg}text")]
    assert words[0] == "colour by observed time" and words[-1] == "no value", words
    assert re.fullmatch(r"[0-9.e+-]+ – [0-9.e+-]+ µs( \(log scale\))?", words[1]), words
    fills = [r.get("fill") for r in legend.iter("{http://www.w3.org/2000/svg}rect")]
    assert fills[0] == "#440154" and "#fde725" in fills and fills[-1] == NEUTRAL, fills


def test_render_function_draws_the_first_calls_body(zoo_trace: Any, tmp_path: Path) -> None:
    """--function NAME: the body of the first call of NAME, drilled into from the root (its
    overload, not another block's of the same class); an unknown name is refused, nothing written."""
    import subprocess
    import sys

    from tlnetron.errors import TlnetronError
    from tlnetron.pages.pictures import render

    exported = export_quietly(zoo_trace("demo"), tmp_path / "demo.onnx.json")
    artifact = json.loads(exported.artifact.read_text("utf-8"))  # type: ignore[union-attr]
    functions = {(f.get("domain", ""), f["name"], f.get("overload", "")): f for f in artifact["functions"]}
    block = next(n for n in artifact["graph"]["node"] if n["opType"] == "Block")
    body = functions[(block.get("domain", ""), "Block", block.get("overload", ""))]["node"]
    call = next(n for n in body if n["opType"] == "SelfAttention")
    attention = functions[(call.get("domain", ""), "SelfAttention", call.get("overload", ""))]
    assert sum(f[1] == "SelfAttention" for f in functions) > 1  # two overloads: the first one's body is drawn
    picture = tmp_path / "attention.svg"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "tlnetron.cli",
            "render",
            str(exported.artifact),
            "--attachment",
            str(exported.companion),
            "-o",
            str(picture),
            "--function",
            "SelfAttention",
            "--colour-by",
            "time",
        ],
        check=True,
        timeout=300,
    )
    text = picture.read_text("utf-8")
    assert text.count('class="node graph-node') == len(attention["node"])
    assert all(f'id="node-name-{n["name"]}"' in text for n in attention["node"])
    with pytest.raises(TlnetronError) as caught:
        render(exported.artifact, tmp_path / "none.svg", function="Attention")  # type: ignore[arg-type]
    assert (
        caught.value.code == "invalid_option"
        and "'Attention'" in str(caught.value)
        and not (tmp_path / "none.svg").exists()
    )


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
    """tlnetron.export(log, "x.html", colour_by="time"): the page from disk starts coloured.

    The colours come from the companion the page holds.
    """
    result = export_quietly(zoo_trace("demo"), tmp_path / "demo.html", colour_by="time")
    assert result.page is not None and result.companion_bytes is not None
    companion = tmp_path / "companion.json"
    companion.write_bytes(result.companion_bytes)
    with netron_browser.new_page(consent="click", timeout=60) as netron:
        netron.open_file_url(result.page)
        netron.wait_title(" + companion")
        check_time_colours(painted(netron, 1), time_of(companion))
        assert netron._js("document.getElementById('tlnetron-colour').value") == "time"


# ------------------------------------------------------------------ every scheme, the control itself


def schemes() -> dict[str, dict[str, Any]]:
    from tlnetron._generated.vocab import COLOUR_SCHEMES

    return COLOUR_SCHEMES  # type: ignore[return-value]


def pick(netron: NetronPage, name: str) -> None:
    """Choose a scheme in the control as a person does (the control sits in the top page)."""
    netron._top_js(
        "(() => { const s = document.getElementById('tlnetron-colour'); s.value = %s;"
        " s.dispatchEvent(new Event('change')); })()" % json.dumps(name)
    )


def nodes_of(artifact: Path) -> dict[str, dict[str, Any]]:
    doc = json.loads(artifact.read_text("utf-8"))
    return {n["name"]: n for g in (doc["graph"], *doc.get("functions", [])) for n in g.get("node", []) if n.get("name")}


def check_categories(nodes: list[dict[str, Any]], expected: dict[str, str | None], scheme: str) -> None:
    colours = {label: colour for _, label, colour in schemes()[scheme]["categories"]}
    for n in nodes:
        want = expected.get(n["name"])
        assert n["colour"] == (colours[want] if want else "#d9d9d9"), (n, want)
        assert n["value"] == want, n


def check_sequential(nodes: list[dict[str, Any]], expected: dict[str, float]) -> None:
    valued = [n for n in nodes if expected.get(n["name"])]
    assert valued, nodes
    for n in nodes:
        if not expected.get(n["name"]):
            assert n["colour"] == "#d9d9d9" and n["value"] is None, n
        else:
            assert float(n["value"]) == pytest.approx(expected[n["name"]]), n
    ranked = sorted(valued, key=lambda n: expected[n["name"]])
    lums = [luminance(n["colour"]) for n in ranked]
    assert lums == sorted(lums), [(n["name"], n["colour"]) for n in ranked]


def test_the_control_leaves_netrons_toolbar_free(netron: NetronPage, served_demo: tuple[str, Path]) -> None:
    """Netron's zoom, back and model buttons (bottom left) stay clickable beside the control."""
    url, _ = served_demo
    netron.open_url(url + "?colour=time", frame="#netron")
    netron.wait_title(" + companion")
    painted(netron, 1)
    buttons = netron._js(
        "Array.from(document.querySelectorAll('.toolbar > *')).filter((b) => b.getBoundingClientRect().width > 0)"
        ".map((b) => { const r = b.getBoundingClientRect(); return [b.id || b.className, r.left + r.width / 2, "
        "r.top + r.height / 2]; })"
    )
    assert len(buttons) >= 3, buttons
    for name, x, y in buttons:
        on_top = netron._top_js(
            f"(() => {{ const at = document.elementFromPoint({x}, {y}); return at ? at.id : null; }})()"
        )
        assert on_top == "netron", (name, on_top)  # the app's frame, not the control, takes the click
    box = netron._top_js(
        "(() => { const r = document.getElementById('tlnetron-heatmap').getBoundingClientRect();"
        " return [r.left, r.top, r.right, r.bottom, innerWidth, innerHeight]; })()"
    )
    assert box[0] >= 0 and box[1] >= 0 and box[2] <= box[4] and box[3] <= box[5], box


def test_an_unknown_colour_in_the_url_is_named_and_nothing_is_painted(
    netron: NetronPage, served_demo: tuple[str, Path]
) -> None:
    """?colour=heat: the page says so in the control, with the schemes there are (as --colour-by
    refuses it), draws Netron's own colours, and a pick there clears the notice and paints."""
    url, companion = served_demo
    netron.open_url(url + "?colour=heat", frame="#netron")
    netron.wait_title(" + companion")
    deadline = time.monotonic() + 10
    while not netron._top_js("!!document.getElementById('tlnetron-heatmap')"):
        assert time.monotonic() < deadline, "the control never came"
        time.sleep(0.05)
    time.sleep(1.0)  # the notice sits a moment, as a person reads it
    notice = netron._top_js(
        "(() => { const n = document.getElementById('tlnetron-colour-notice'); return n ? n.textContent : null; })()"
    )
    assert notice is not None and '"heat"' in notice and all(s in notice for s in ("none", *schemes())), notice
    assert all(n["colour"] is None for n in netron._js(_PAINTED))
    pick(netron, "time")
    check_time_colours(painted(netron, 1), time_of(companion))
    assert netron._top_js("document.getElementById('tlnetron-colour-notice')") is None


def test_params_and_nonfinite_colour_what_the_files_say_and_survive_zoom(
    netron: NetronPage, served_demo: tuple[str, Path]
) -> None:
    url, companion = served_demo
    artifact = companion.with_name(companion.name.replace(".attachment.json", ".json"))
    by_name = nodes_of(artifact)
    netron.open_url(url + "?colour=params", frame="#netron")
    netron.wait_title(" + companion")
    params = {
        name: float(a["i"])
        for name, n in by_name.items()
        for a in n.get("attribute", [])
        if a["name"] == "num_params" and int(a["i"]) > 0
    }
    check_sequential(painted(netron, 1), params)

    rows: dict[str, dict[str, float]] = {}
    for row in json.loads(companion.read_text("utf-8"))["metrics"]:
        if row["kind"] == "value":
            rows.setdefault(row["target"], {})[row["name"]] = row["value"]
    wanted = schemes()["nonfinite"]["value_rows"]
    labels = [label for _, label, _ in schemes()["nonfinite"]["categories"]]

    def nonfinite(name: str) -> str | None:
        seen = [rows[o] for o in by_name[name].get("output", []) if o in rows and any(r in rows[o] for r in wanted)]
        return (labels[1] if any(s.get(r, 0) for s in seen for r in wanted) else labels[0]) if seen else None

    pick(netron, "nonfinite")
    shown = painted(netron, 1)
    check_categories(shown, {n["name"]: nonfinite(n["name"]) for n in shown}, "nonfinite")
    # Down the first calls to where the causal mask's -inf is drawn.
    for _ in range(3):
        if labels[1] in {nonfinite(n["name"]) for n in shown}:
            break
        netron.drill_into(next(n for n in netron.drawn_nodes() if n["function"])["name"])
        shown = painted(netron, 1)
    expected = {n["name"]: nonfinite(n["name"]) for n in shown}
    assert labels[1] in expected.values() and labels[0] in expected.values(), expected
    check_categories(shown, expected, "nonfinite")
    for _ in range(3):
        netron._js("document.getElementById('zoom-in-button').click()")
    time.sleep(0.5)
    check_categories(painted(netron, len(shown)), expected, "nonfinite")


def test_diff_status_colours_each_node_by_its_status(netron: NetronPage, tmp_path: Path) -> None:
    """A subject against its baseline: changed and added ops in their category, the rest neutral."""
    import copy

    import torch
    import torchlens

    class Net(torch.nn.Module):
        def __init__(self, extra: bool = False) -> None:
            super().__init__()
            self.a = torch.nn.Linear(6, 6)
            self.b = torch.nn.Linear(6, 6)
            self.extra = extra

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            y = self.b(torch.relu(self.a(x)))
            return y * 2 if self.extra else y

    torch.manual_seed(0)
    base, x = Net().eval(), torch.randn(2, 6)
    subject = Net(extra=True).eval()
    subject.load_state_dict(copy.deepcopy(base.state_dict()))
    with torch.no_grad():
        subject.b.weight.add_(0.25)
    result = export_quietly(
        torchlens.trace(subject, x), tmp_path / "diff.onnx.json", granularity="op", baseline=torchlens.trace(base, x)
    )
    assert result.artifact is not None and result.companion is not None
    served = serve_files(result.artifact, result.companion, browse=False)
    try:
        netron.open_url(served.url + "?colour=diff", frame="#netron")
        netron.wait_title(" + companion")
        categories = {value: label for value, label, _ in schemes()["diff"]["categories"]}
        key = schemes()["diff"]["node_meta"]
        status = {
            name: categories.get(next((p["value"] for p in n.get("metadataProps", []) if p["key"] == key), ""))
            for name, n in nodes_of(result.artifact).items()
        }
        root = painted(netron, 1)
        expected = {n["name"]: status.get(n["name"]) for n in root}
        assert {"added", "changed"} <= set(expected.values()), expected
        check_categories(root, expected, "diff")
    finally:
        served.server.stop()

"""Self-tests of the real-browser Netron driver, on small hand-written ONNX protobuf-JSON models.

They need no tlnetron exporter: each test writes its model (camelCase protobuf JSON, the
form Netron 9.3.3 reads through ``onnx.ProtoReader``) and companion into ``tmp_path``.
Positive tests pin what a person sees; negative tests prove the driver fails for real.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from netron_driver import (
    AgeGateError,
    ConsentGateError,
    DropIgnoredError,
    ErrorDialogError,
    LayoutTimeoutError,
    NetronAppServer,
    NetronBrowser,
    NetronDriverError,
    NetronPage,
    netron_app_dir,
)

pytestmark = pytest.mark.e2e

# Written out, not imported from tlnetron: these self-tests check the driver against Netron
# alone, on hand-written models and companions (Netron's own "netron:attachment" word).
LOSSY = "ai.torchlens.lossy"
MODULE = "ai.torchlens.module"


# --------------------------------------------------------------------------- models


def _tensor(*shape: int) -> dict[str, Any]:
    return {"tensorType": {"elemType": 1, "shape": {"dim": [{"dimValue": str(d)} for d in shape]}}}


def _value(name: str, *shape: int) -> dict[str, Any]:
    return {"name": name, "type": _tensor(*shape)}


def _node(name: str, op: str, inputs: list[str], domain: str = LOSSY) -> dict[str, Any]:
    return {"name": name, "opType": op, "domain": domain, "input": inputs, "output": [name]}


def chain_model() -> dict[str, Any]:
    """x[1,3] -> relu -> linear[1,4] -> sigmoid -> out: 3 op boxes, 4 labelled edges."""
    return {
        "irVersion": "10",
        "producerName": "test",
        "opsetImport": [{"domain": LOSSY, "version": "1"}],
        "graph": {
            "name": "g",
            "node": [
                _node("relu_1_1", "relu", ["x"]),
                _node("linear_1_2", "linear", ["relu_1_1"]),
                _node("sigmoid_1_3", "sigmoid", ["linear_1_2"]),
            ],
            "input": [_value("x", 1, 3)],
            "output": [_value("sigmoid_1_3", 1, 4)],
            "valueInfo": [_value("relu_1_1", 1, 3), _value("linear_1_2", 1, 4)],
        },
    }


def function_model() -> dict[str, Any]:
    """Top: relu -> block_1 (calls Block) -> tanh.  Block: inner_1 (calls Inner) -> relu.  Inner: sigmoid."""
    inner = {
        "name": "Inner",
        "domain": MODULE,
        "input": ["a"],
        "output": ["inner_sig"],
        "node": [_node("inner_sig", "sigmoid", ["a"])],
        "opsetImport": [{"domain": LOSSY, "version": "1"}],
        "valueInfo": [_value("a", 1, 3), _value("inner_sig", 1, 3)],
    }
    block = {
        "name": "Block",
        "domain": MODULE,
        "input": ["p"],
        "output": ["block_relu"],
        "node": [_node("inner_1", "Inner", ["p"], MODULE), _node("block_relu", "relu", ["inner_1"])],
        "opsetImport": [{"domain": LOSSY, "version": "1"}, {"domain": MODULE, "version": "1"}],
        "valueInfo": [_value("p", 1, 3), _value("inner_1", 1, 2, 3), _value("block_relu", 1, 3)],
    }
    return {
        "irVersion": "10",
        "producerName": "test",
        "opsetImport": [{"domain": LOSSY, "version": "1"}, {"domain": MODULE, "version": "1"}],
        "graph": {
            "name": "g",
            "node": [
                _node("relu_1_1", "relu", ["x"]),
                _node("block_1", "Block", ["relu_1_1"], MODULE),
                _node("tanh_1_2", "tanh", ["block_1"]),
            ],
            "input": [_value("x", 1, 3)],
            "output": [_value("tanh_1_2", 1, 3)],
            "valueInfo": [_value("relu_1_1", 1, 3), _value("block_1", 1, 3)],
        },
        "functions": [block, inner],
    }


COMPANION = {
    "signature": "netron:attachment",
    "metadata": [{"kind": "node", "target": "relu_1_1", "name": "x", "value": "y"}],
    "metrics": [
        {"kind": "node", "target": "relu_1_1", "name": "observed duration (µs)", "value": 12.5},
        {"kind": "model", "target": "", "name": "total", "value": 3},
    ],
}


def _write(path: Path, data: Any) -> Path:
    path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    return path


@pytest.fixture
def chain(tmp_path: Path) -> Path:
    return _write(tmp_path / "chain.onnx.json", chain_model())


@pytest.fixture
def companion(tmp_path: Path) -> Path:
    return _write(tmp_path / "chain.companion.json", COMPANION)


def _op_boxes(netron: NetronPage) -> list[dict[str, Any]]:
    return [n for n in netron.drawn_nodes() if n["kind"] == "node"]


# --------------------------------------------------------------------------- positive


def test_served_chain_shows_boxes_and_shapes(netron: NetronPage, chain: Path, tmp_path: Path) -> None:
    seconds = netron.open_served(chain)
    assert 0 < seconds < 30
    nodes = netron.drawn_nodes()
    assert [n["kind"] for n in nodes].count("node") == 3
    assert len(nodes) == 5  # graph input + 3 ops + graph output
    assert {n["id"] for n in _op_boxes(netron)} == {
        "node-name-relu_1_1",
        "node-name-linear_1_2",
        "node-name-sigmoid_1_3",
    }
    assert {n["name"]: n["header"] for n in _op_boxes(netron)} == {
        "relu_1_1": "relu",
        "linear_1_2": "linear",
        "sigmoid_1_3": "sigmoid",
    }
    assert next(n for n in nodes if n["kind"] == "input")["classes"] == ["node", "graph-input"]
    assert sorted(netron.edge_labels()) == ["1×3", "1×3", "1×4", "1×4"]
    assert netron.edge_path_count() == 4
    props = netron.open_model_properties()
    assert ("format", "ONNX v10") in props["Model Properties"]
    assert "Metrics" not in props  # no companion can reach a served model
    with pytest.raises(NetronDriverError, match="no drawn node box with id 'node-name-nope'"):
        netron.open_node_properties("nope")
    shot = netron.screenshot(tmp_path / "chain.png", clip={"x": 0, "y": 0, "width": 400, "height": 300})
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert netron.console_errors() == []
    # Netron's analytics beacons were attempted and all aborted; nothing else left loopback.
    assert all("analytics.google.com" in url for url in netron.blocked_requests())


@pytest.mark.parametrize("via", ["drop", "input"])
def test_dropped_companion_rows_show_in_sidebars(netron: NetronPage, chain: Path, companion: Path, via: str) -> None:
    netron.open_dropped(chain, via=via)
    before = netron.open_node_properties("relu_1_1")
    assert before["Node Properties"][:3] == [("type", "relu"), ("module", LOSSY), ("name", "relu_1_1")]
    assert "Metadata" not in before and "Metrics" not in before

    netron.drop_companion(companion, via=via)
    assert len(_op_boxes(netron)) == 3  # the graph stayed
    props = netron.open_node_properties("relu_1_1")
    assert props["Metadata"] == [("x", "y")]
    assert props["Metrics"] == [("observed duration (µs)", "12.5")]
    assert props["Inputs"] == [("0", "name: x")]
    assert "Metadata" not in netron.open_node_properties("linear_1_2")

    expanded = netron.open_node_properties("relu_1_1", expand=True)  # clicks every "+"
    assert expanded["Inputs"] == [("0", "name: x\ntensor: float32[1,3]")]
    assert expanded["Metrics"] == props["Metrics"]

    model = netron.open_model_properties()
    assert model["Metrics"] == [("total", "3")]
    assert ("producer", "test") in model["Model Properties"]
    assert netron.console_errors() == []


def test_drill_down_two_levels(netron: NetronPage, tmp_path: Path) -> None:
    model = _write(tmp_path / "func.onnx.json", function_model())
    rows = {
        "signature": "netron:attachment",
        "metadata": [{"kind": "node", "target": "inner_sig", "name": "where", "value": "inside Inner"}],
        "metrics": [],
    }
    netron.open_dropped(model, _write(tmp_path / "func.companion.json", rows))
    top = {n["name"]: n for n in _op_boxes(netron)}
    assert set(top) == {"relu_1_1", "block_1", "tanh_1_2"}
    assert top["block_1"]["function"] and top["block_1"]["header"] == "Block"
    assert not top["relu_1_1"]["function"]
    assert netron.breadcrumb() == []

    assert netron.drill_into("block_1") < 30
    assert netron.breadcrumb() == ["Block"]
    assert {n["name"] for n in _op_boxes(netron)} == {"inner_1", "block_relu"}
    assert sorted(netron.edge_labels()) == ["1×2×3", "1×3", "1×3"]  # body labels come from Function valueInfo

    netron.drill_into("inner_1")
    assert netron.breadcrumb() == ["Block", "Inner"]
    assert [n["name"] for n in _op_boxes(netron)] == ["inner_sig"]
    assert netron.open_node_properties("inner_sig")["Metadata"] == [("where", "inside Inner")]

    netron.go_up()
    assert netron.breadcrumb() == ["Block"]
    netron.go_up()
    assert netron.breadcrumb() == []
    assert {n["name"] for n in _op_boxes(netron)} == {"relu_1_1", "block_1", "tanh_1_2"}
    with pytest.raises(NetronDriverError, match="not a function call"):
        netron.drill_into("relu_1_1")
    assert netron.console_errors() == []


def test_consent_click_instead_of_cookie(netron_browser: NetronBrowser, chain: Path) -> None:
    with netron_browser.new_page(consent="click") as page:
        page.open_served(chain)
        assert len(_op_boxes(page)) == 3
        assert page.console_errors() == []


def test_file_named_model_json_opens(netron: NetronPage, tmp_path: Path) -> None:
    """Measurement: Netron 9.3.3 opens a valid ONNX protobuf-JSON file named exactly model.json."""
    path = _write(tmp_path / "model.json", chain_model())
    netron.open_served(path)
    assert len(_op_boxes(netron)) == 3
    assert ("format", "ONNX v10") in netron.open_model_properties()["Model Properties"]
    netron.open_dropped(path)
    assert len(_op_boxes(netron)) == 3
    assert ("format", "ONNX v10") in netron.open_model_properties()["Model Properties"]
    assert netron.console_errors() == []


# --------------------------------------------------------------------------- negative


def _broken_elem_type() -> dict[str, Any]:
    model = chain_model()
    model["graph"]["input"][0]["type"]["tensorType"]["elemType"] = "FLOAT"
    return model


def _broken_base64() -> dict[str, Any]:
    model = chain_model()
    model["graph"]["node"][0]["attribute"] = [{"name": "note", "type": "STRING", "s": "not base64!!"}]
    return model


@pytest.mark.parametrize(
    ("make", "dialog", "mode"),
    [
        (_broken_elem_type, "Unsupported data type 'null'", "served"),
        (_broken_base64, "File JSON format is not onnx.ModelProto", "dropped"),
    ],
    ids=["elemType-string-served", "invalid-base64-dropped"],
)
def test_broken_artifact_raises_with_dialog_text(
    netron: NetronPage, tmp_path: Path, make: Any, dialog: str, mode: str
) -> None:
    path = _write(tmp_path / "broken.onnx.json", make())
    opener = netron.open_served if mode == "served" else netron.open_dropped
    with pytest.raises(ErrorDialogError, match=r"\[error dialog\].*" + dialog) as info:
        opener(path)
    assert dialog in info.value.message
    assert "alert" in info.value.classes.split()


def test_unmatched_companion_rows_show_nowhere(netron: NetronPage, chain: Path, tmp_path: Path) -> None:
    rows = {
        "signature": "netron:attachment",
        "metadata": [
            {"kind": "node", "target": "relu_9_9", "name": "ghost", "value": "names no node"},
            {"kind": "node", "target": "x", "name": "on input", "value": "x is a graph input, not a node"},
        ],
        "metrics": [{"kind": "node", "target": "Relu_1_1", "name": "case", "value": 1}],
    }
    netron.open_dropped(chain, _write(tmp_path / "ghost.companion.json", rows))  # loads "successfully"
    for name in ("relu_1_1", "linear_1_2", "sigmoid_1_3"):
        props = netron.open_node_properties(name)
        assert "Metadata" not in props and "Metrics" not in props, (name, props)
    assert "Metrics" not in netron.open_model_properties()
    assert netron.console_errors() == []


def test_companion_without_signature_is_refused(netron: NetronPage, chain: Path, tmp_path: Path) -> None:
    netron.open_dropped(chain)
    bad = _write(tmp_path / "plain.json", {"metadata": [], "metrics": []})
    with pytest.raises(NetronDriverError, match="netron:attachment"):
        netron.drop_companion(bad)
    netron.open_served(chain)
    with pytest.raises(NetronDriverError, match="served mode"):
        netron.drop_companion(_write(tmp_path / "c.json", COMPANION))


def test_age_gate_is_detected_not_hung(netron: NetronPage, chain: Path) -> None:
    t0 = time.monotonic()
    with pytest.raises(AgeGateError, match=r"\[age gate\].*Please update to the newest version") as info:
        netron.open_dropped(chain, app_date="2020-01-01 00:00:00")
    assert time.monotonic() - t0 < 15
    assert "2020-01-01" in str(info.value)


def test_bare_app_server_serves_installed_files() -> None:
    root = netron_app_dir()
    import urllib.request

    with NetronAppServer(app_date=None) as server:
        with urllib.request.urlopen(server.origin + "/") as response:  # noqa: S310 (loopback)
            assert response.read() == (root / "index.html").read_bytes()
        with urllib.request.urlopen(server.origin + "/view.js") as response:  # noqa: S310
            assert response.read() == (root / "view.js").read_bytes()
        with pytest.raises(urllib.error.HTTPError):
            urllib.request.urlopen(server.origin + "/../server.py")  # noqa: S310
    with NetronAppServer(app_date="2020-01-01 00:00:00") as server:
        with urllib.request.urlopen(server.origin + "/") as response:  # noqa: S310
            assert b'<meta name="date" content="2020-01-01 00:00:00">' in response.read()


def test_consent_gate_is_reported(netron_browser: NetronBrowser, chain: Path) -> None:
    with netron_browser.new_page(consent="none", timeout=10) as page:
        with pytest.raises(ConsentGateError, match=r"\[cookie consent\]"):
            page.open_served(chain)


def test_layout_timeout_names_body_classes(netron: NetronPage, chain: Path) -> None:
    with pytest.raises(LayoutTimeoutError, match=r"\[layout\] nothing drawn .*body class 'welcome spinner'"):
        netron.open_served(chain, timeout=0.001)


def test_unaccepted_drop_is_reported(netron: NetronPage, tmp_path: Path) -> None:
    junk = tmp_path / "notes.tlnetron-unknown"
    junk.write_text("hello", encoding="utf-8")
    netron.reaction_timeout = 1.5
    with pytest.raises(DropIgnoredError, match=r"\[drop ignored\]"):
        netron.open_dropped(junk)


def _live_in_group(pgid: int) -> list[int]:
    """Pids in process group ``pgid`` that are not zombies (PID 1 here may not reap orphans)."""
    live = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        if int(fields[2]) == pgid and fields[0] != "Z":
            live.append(int(entry.name))
    return live


def test_browser_and_servers_are_gone_after_failure(chain: Path) -> None:
    import netron as netron_pkg

    with pytest.raises(RuntimeError, match="boom"):
        with NetronBrowser() as browser, browser.new_page() as page:
            pid = browser.pid
            assert pid is not None
            page.open_served(chain)
            served = page._served
            raise RuntimeError("boom")
    assert browser.pid is None
    assert _live_in_group(pid) == []  # the whole process group we started is dead
    deadline = time.monotonic() + 2
    while netron_pkg.status(served) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not netron_pkg.status(served)

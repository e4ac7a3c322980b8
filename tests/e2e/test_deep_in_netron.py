"""Real-depth task-head models in the real Netron: the root is a diagram, a run drills in.

* Each root (GPT-2 24, Llama 32 and 80, BERT and ViT 24, T5 and Whisper 12+12, Mixtral 8;
  three by default, all with ``--deep-zoo``) is drawn exactly as the artifact says, with at
  most eight output nodes named by the returned fields, at least two boxes to drill into, and
  a canvas no wider than two screens at Netron's default zoom.
* Llama-32's run box says ``LlamaDecoderLayer ×32`` on the canvas; drilling in shows its
  groups of calls, drilling into a group its ten calls; Backspace-style going up returns.
* The sidebar reads as Netron shows it: the run's inclusive facts say over how many calls,
  its description says it is a run of calls, not a call; the cache's structure node states
  its count.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from netron_driver import NetronPage
from test_artifacts import body_of, check_drawn_body, export_quietly
from tlnetron._generated.vocab import Domain
from zoo import ZooTrace, deep_models

pytestmark = pytest.mark.e2e

MAX_OUTPUT_NODES = 8
MAX_CANVAS_WIDTH = 3200  # about two screens at Netron's default zoom


def _open(netron: NetronPage, zoo_trace: ZooTrace, tmp_path: Path, name: str) -> dict[str, Any]:
    result = export_quietly(zoo_trace(name), tmp_path / f"{name}.onnx.json")
    assert result.artifact is not None and result.companion is not None
    netron.open_dropped(result.artifact, result.companion)
    model: dict[str, Any] = json.loads(result.artifact_json)
    return model


def _canvas_width(netron: NetronPage) -> float:
    box = netron._js("document.querySelector('#canvas').getAttribute('viewBox')")
    return float(str(box).split()[2])


@pytest.mark.parametrize("name", deep_models())
def test_a_real_depth_root_is_a_diagram_in_netron(
    netron: NetronPage, zoo_trace: ZooTrace, tmp_path: Path, name: str
) -> None:
    model = _open(netron, zoo_trace, tmp_path, name)
    check_drawn_body(netron, model["graph"], f"{name} root")
    drawn = netron.drawn_nodes()
    outputs = [n for n in drawn if n["kind"] == "output"]
    assert len(outputs) <= MAX_OUTPUT_NODES
    assert "logits" in {n["header"] for n in outputs}
    assert sum(n["function"] for n in drawn) >= 2
    assert _canvas_width(netron) <= MAX_CANVAS_WIDTH
    assert netron.console_errors() == []


def test_a_run_drills_into_its_groups_and_calls(netron: NetronPage, zoo_trace: ZooTrace, tmp_path: Path) -> None:
    model = _open(netron, zoo_trace, tmp_path, "llama_32")
    (run,) = [n for n in model["graph"]["node"] if n["domain"] == Domain.RUN]
    box = next(n for n in netron.drawn_nodes() if n["name"] == run["name"])
    assert box["header"] == "LlamaDecoderLayer ×32" and box["function"]

    props = netron.open_node_properties(run["name"])
    top = dict(props["Node Properties"])
    assert top["module"] == Domain.RUN and "not a call" in top["description"]
    meta = dict(props["Metadata"])
    assert "summed over 32 calls" in meta["inclusive_time"]
    assert dict(props["Attributes"])["run_calls"] == "32"

    netron.drill_into(run["name"])
    body = body_of(model, run)
    assert body is not None
    check_drawn_body(netron, body, "the opened run")
    groups = [n for n in netron.drawn_nodes() if n["function"]]
    assert [g["header"] for g in groups] == ["LlamaDecoderLayer 0–9", "layers 10–19", "layers 20–29", "layers 30–31"]
    assert _canvas_width(netron) <= MAX_CANVAS_WIDTH

    group = next(n for n in body["node"] if n["name"] == "model.layers[10..19]")
    netron.drill_into(group["name"])
    inner = body_of(model, group)
    assert inner is not None
    check_drawn_body(netron, inner, "a group of the run")
    calls = [n for n in netron.drawn_nodes() if n["function"]]
    assert [c["name"] for c in calls] == [f"model.layers.{i}:1" for i in range(10, 20)]
    assert all(c["header"] == "LlamaDecoderLayer" for c in calls)
    assert len(netron.breadcrumb()) == 2

    netron.go_up()
    netron.go_up()
    assert netron.breadcrumb() == []
    assert netron.console_errors() == []


def test_the_cache_structure_states_its_count(netron: NetronPage, zoo_trace: ZooTrace, tmp_path: Path) -> None:
    model = _open(netron, zoo_trace, tmp_path, "gpt2_24")
    (cache,) = [n for n in model["graph"]["node"] if n["domain"] == Domain.STRUCTURE]
    box = next(n for n in netron.drawn_nodes() if n["name"] == cache["name"])
    assert box["header"] == "cache ×48"
    props = netron.open_node_properties(cache["name"])
    top = dict(props["Node Properties"])
    assert top["module"] == Domain.STRUCTURE and "Not a traced op" in top["description"]
    attrs = dict(props["Attributes"])
    assert attrs["tensor_count"] == "48" and "cache.layers.0..23.keys" in attrs["paths"]

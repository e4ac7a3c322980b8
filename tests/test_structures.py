"""What a model returns is drawn one output per returned field, in every view.

TorchLens says where each output tensor sits (``io_role``). A field of one tensor is that
tensor's value under the field's name; a field of several is one structure value, gathered
by a node of ``ai.torchlens.structure`` (it computes nothing) that states the count, the
paths and the shapes. Values the model returns twice, or returns from its inputs, keep an
``output`` node of their own. The companion states a renamed tensor under the name Netron
shows; ``tlnetron validate`` knows structure nodes.
"""

from __future__ import annotations

import json
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import pytest
import torch
import torchlens
from torch import nn

import tlnetron
from test_runs import attrs
from tlnetron import TlnetronWarning
from tlnetron._generated.vocab import DOMAIN, GRANULARITY, NODE_ROLE, Domain, NodeRole


class Fields(nn.Module):
    def forward(self, x: torch.Tensor) -> dict[str, Any]:
        return {"a": x * 2, "b": [x + 1, x + 2, x + 3], "c": (x * 3,)}


class Pair(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(3, 3)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        h = self.fc(x)
        return h, torch.relu(h)


class Echo(nn.Module):
    """Returns its input and one tensor twice."""

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        y = x * 2
        return x, y, y


def export(model: nn.Module, path: Path, **kwargs: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    torch.manual_seed(0)
    log = torchlens.trace(model.eval(), torch.randn(2, 3))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TlnetronWarning)
        result = tlnetron.export(log, path, **kwargs)
    assert result.companion_bytes is not None
    return json.loads(result.artifact_json), json.loads(result.companion_bytes)


@pytest.mark.parametrize("granularity", GRANULARITY)
def test_each_returned_field_is_one_output_named_by_the_field(tmp_path: Path, granularity: str) -> None:
    model, companion = export(Fields(), tmp_path / "m.onnx.json", granularity=granularity)
    graph = model["graph"]
    assert [v["name"] for v in graph["output"]] == ["a", "b", "c"]
    types = {v["name"]: v["type"] for v in graph["output"]}
    assert types["a"]["tensorType"]["shape"]["dim"] == [{"dimValue": "2"}, {"dimValue": "3"}]
    seq = types["b"]["sequenceType"]["elemType"]["tensorType"]
    assert seq["elemType"] == 1 and seq["shape"]["dim"] == [{"dimValue": "2"}, {"dimValue": "3"}]
    (structure,) = [n for n in graph["node"] if n["domain"] == Domain.STRUCTURE]
    assert structure["name"] == "b" and structure["opType"] == "b ×3" and structure["output"] == ["b"]
    assert len(structure["input"]) == 3
    a = attrs(structure)
    assert a["structure_field"] == "b" and a["tensor_count"] == 3
    assert a["paths"] == "b.0..2" and a["shapes"] == "float32 [2, 3] ×3"
    assert "Not a traced op" in structure["docString"]
    assert not any(r["target"] == "b" for r in companion["metrics"] if r["kind"] == "node")
    # The renamed tensors' statistics are stated under the names Netron shows.
    values = {r["target"] for r in companion["metrics"] if r["kind"] == "value"}
    assert {"a", "c"} <= values


def test_tuple_fields_are_numbered(tmp_path: Path) -> None:
    model, _ = export(Pair(), tmp_path / "m.onnx.json", granularity="op")
    assert [v["name"] for v in model["graph"]["output"]] == ["output[0]", "output[1]"]
    linear = next(n for n in model["graph"]["node"] if n["opType"] == "linear")
    assert linear["output"] == ["output[0]"]  # the value is the field; the node keeps its label
    relu = next(n for n in model["graph"]["node"] if n["opType"] == "relu")
    assert relu["input"] == ["output[0]"]


def test_an_input_or_a_repeat_keeps_an_output_node(tmp_path: Path) -> None:
    model, _ = export(Echo(), tmp_path / "m.onnx.json", granularity="op")
    graph = model["graph"]
    assert [v["name"] for v in graph["output"]] == ["output[0]", "output[1]", "output[2]"]
    outs = [n for n in graph["node"] if n["opType"] == "output"]
    assert [(n["input"], n["output"]) for n in outs] == [(["input_1"], ["output[0]"]), (["output[1]"], ["output[2]"])]


def test_the_schema_lists_the_structure_and_run_domains() -> None:
    assert {Domain.STRUCTURE, Domain.RUN} <= set(DOMAIN)
    assert {NodeRole.STRUCTURE, NodeRole.MODULE_RUN} <= set(NODE_ROLE)


def test_validate_knows_structure_nodes_and_refuses_a_bad_one(tmp_path: Path) -> None:
    path = tmp_path / "m.onnx.json"
    model, _ = export(Fields(), path)
    run = [sys.executable, "-m", "tlnetron.cli", "validate", str(path)]
    ok = subprocess.run(run, capture_output=True, text=True)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    # A structure node whose count is not a positive integer breaks its schema row.
    (node,) = [n for n in model["graph"]["node"] if n["domain"] == Domain.STRUCTURE]
    for a in node["attribute"]:
        if a["name"] == "tensor_count":
            a["i"] = "0"
    path.write_text(json.dumps(model), encoding="utf-8")
    bad = subprocess.run(run, capture_output=True, text=True)
    assert bad.returncode == 1 and "tensor_count" in bad.stdout, bad.stdout + bad.stderr

"""Runs of repeated module calls, on small real models traced with TorchLens.

* A chain of calls of one class under an uncalled container (a ``ModuleList``) is one box,
  ``Block ×5``, in ``ai.torchlens.run``, named by the container; drilling in shows the calls.
* A called container whose body is exactly such a run (an ``nn.Sequential`` stage) says so
  on its own box; a run too long for one chain opens on groups of calls.
* Calls that repeat but do not chain (branches, skip connections, a layer of another class,
  ops between calls) are drawn one by one, or as separate runs, and the description says why.
* Facts of a run are inclusive sums over its calls, worded as such, and the companion
  targets the run box like a module call.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import pytest
import torch
import torchlens
from test_export_zoo import flat_dataflow
from torch import nn

import tlnetron
from tlnetron import TlnetronWarning
from tlnetron._generated.vocab import Domain, Granularity
from tlnetron.views.runs import GROUP_SIZE, MIN_RUN_BOX, RUN_CHAIN_MAX
from tlnetron.words.model import unwrapped


class Block(nn.Module):
    def __init__(self, dim: int = 4) -> None:
        super().__init__()
        self.fc = nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out: torch.Tensor = torch.tanh(self.fc(x)) + x
        return out


class Other(Block):
    """Another class, same shape: breaks a run."""


class Stack(nn.Module):
    """``n`` blocks in a ModuleList (never called itself), between an input and an output layer."""

    def __init__(self, n: int, middle: type[nn.Module] | None = None, between: bool = False) -> None:
        super().__init__()
        self.inp = nn.Linear(4, 4)
        self.layers = nn.ModuleList([(middle or Block)() if middle and i == n // 2 else Block() for i in range(n)])
        self.out = nn.Linear(4, 2)
        self.between = between

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.inp(x)
        for i, layer in enumerate(self.layers):
            h = layer(h)
            if self.between and i == 2:
                h = h * 0.5
        out: torch.Tensor = self.out(h)
        return out


class Branches(nn.Module):
    """Four blocks applied to the same input, summed: repeated, but not a chain."""

    def __init__(self) -> None:
        super().__init__()
        self.inp = nn.Linear(4, 4)
        self.heads = nn.ModuleList([Block() for _ in range(4)])
        self.out = nn.Linear(4, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.inp(x)
        outs = [head(h) for head in self.heads]
        out: torch.Tensor = self.out(torch.stack(outs).sum(0))
        return out


class Skips(nn.Module):
    """Down blocks whose outputs are read again after the chain (U-Net style skip connections)."""

    def __init__(self) -> None:
        super().__init__()
        self.inp = nn.Linear(4, 4)
        self.down = nn.ModuleList([Block() for _ in range(4)])
        self.out = nn.Linear(4, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.inp(x)
        kept = []
        for block in self.down:
            h = block(h)
            kept.append(h)
        out: torch.Tensor = self.out(h + kept[0] + kept[1])
        return out


class Staged(nn.Module):
    """A called ``nn.Sequential`` of three blocks beside other layers."""

    def __init__(self) -> None:
        super().__init__()
        self.inp = nn.Linear(4, 4)
        self.stage = nn.Sequential(Block(), Block(), Block())
        self.mid = nn.Linear(4, 4)
        self.stage2 = nn.Sequential(Block(), Block())
        self.out = nn.Linear(4, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out: torch.Tensor = self.out(self.stage2(torch.relu(self.mid(self.stage(self.inp(x))))))
        return out


def trace(model: nn.Module) -> torchlens.Trace:
    torch.manual_seed(0)
    log: torchlens.Trace = torchlens.trace(model.eval(), torch.randn(2, 4))
    return log


def export(log: torchlens.Trace, path: Path, **kwargs: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TlnetronWarning)
        result = tlnetron.export(log, path, **kwargs)
    assert result.companion_bytes is not None
    return json.loads(result.artifact_json), json.loads(result.companion_bytes)


def attrs(node: dict[str, Any]) -> dict[str, Any]:
    import base64

    out: dict[str, Any] = {}
    for a in node.get("attribute", []):
        out[a["name"]] = base64.b64decode(a["s"]).decode() if "s" in a else int(a["i"])
    return out


def function(model: dict[str, Any], node: dict[str, Any]) -> dict[str, Any]:
    (f,) = [
        f
        for f in model["functions"]
        if (f["domain"], f["name"], f.get("overload", "")) == (node["domain"], node["opType"], node.get("overload", ""))
    ]
    return f


def root(model: dict[str, Any]) -> list[dict[str, Any]]:
    nodes: list[dict[str, Any]] = model["graph"]["node"]
    return nodes


def meta(model: dict[str, Any]) -> dict[str, str]:
    return {p["key"]: p["value"] for p in model["metadataProps"]}


def test_a_chain_of_calls_is_one_box_named_by_its_container(tmp_path: Path) -> None:
    log = trace(Stack(5))
    model, companion = export(log, tmp_path / "m.onnx.json", depth=1)
    (run,) = [n for n in root(model) if n["domain"] == Domain.RUN]
    assert run["name"] == "layers" and run["opType"] == "Block ×5"
    a = attrs(run)
    assert a["run_calls"] == 5 and a["run_first"] == "layers.0:1" and a["run_last"] == "layers.4:1"
    assert a["class_name"] == "Block" and a["module_path"] == "layers"
    assert "never called" in run["docString"] and "a run of calls, not a call" in run["docString"]
    assert "layers" not in {m.address for m in log.modules}  # the container has no call of its own
    body = function(model, run)
    assert body["domain"] == Domain.RUN and "a run of calls, not a call" in body["docString"]
    assert [n["name"] for n in body["node"]] == [f"layers.{i}:1" for i in range(5)]
    assert all(n["domain"] == Domain.MODULE and n["opType"] == "Block" for n in body["node"])
    # Inclusive facts over the calls, worded as such; the companion targets the box.
    rows = {p["key"]: p["value"] for p in run.get("metadataProps", [])}
    assert "summed over 5 calls" in rows["inclusive_flops"] and "inclusive" in rows["inclusive_time"]
    flops = sum(
        int(op.flops_forward or 0) for op in log.ops if any(c.startswith("layers.") for c in op.module_call_stack or ())
    )
    mine = {r["name"]: r["value"] for r in companion["metrics"] if r["target"] == "layers"}
    assert mine["inclusive FLOPs"] == flops and mine["inclusive ops"] == 5 * 3
    assert any(r["target"] == "layers" and r["name"] == "share of time" for r in companion["metadata"])
    assert int(meta(model)["torchlens.run_count"]) == 1
    assert "(1 run of repeated calls drawn as one box each)" in unwrapped(model["docString"])


def test_runs_keep_the_dataflow_and_the_op_view_keeps_every_op(tmp_path: Path) -> None:
    log = trace(Stack(5))
    module, _ = export(log, tmp_path / "m.onnx.json", depth=1)
    op_view, _ = export(log, tmp_path / "o.onnx.json", granularity=Granularity.OP)
    assert flat_dataflow(module) == flat_dataflow(op_view)


def test_two_calls_are_drawn_side_by_side() -> None:
    assert MIN_RUN_BOX == 3


def test_a_called_stage_says_what_it_repeats_on_its_own_box(tmp_path: Path) -> None:
    model, _ = export(trace(Staged()), tmp_path / "m.onnx.json", depth=1)
    boxes = {n["name"]: n for n in root(model) if n["domain"] == Domain.MODULE}
    stage, stage2 = boxes["stage:1"], boxes["stage2:1"]
    assert stage["opType"] == "Block ×3" and stage2["opType"] == "Block ×2"
    assert attrs(stage)["class_name"] == "Sequential" and attrs(stage)["run_calls"] == 3
    assert "Its body is a run of 3 Block calls" in stage["docString"]
    body = function(model, stage)
    assert [n["name"] for n in body["node"]] == ["stage.0:1", "stage.1:1", "stage.2:1"]
    assert not [n for n in root(model) if n["domain"] == Domain.RUN]  # no extra level to drill through


def test_a_long_run_opens_on_groups_of_calls(tmp_path: Path) -> None:
    n = RUN_CHAIN_MAX + 9
    model, _ = export(trace(Stack(n)), tmp_path / "m.onnx.json", depth=1)
    (run,) = [x for x in root(model) if x["domain"] == Domain.RUN]
    assert run["opType"] == f"Block ×{n}"
    body = function(model, run)
    groups = body["node"]
    assert [g["name"] for g in groups] == [
        f"layers[{a}..{min(a + GROUP_SIZE, n) - 1}]" for a in range(0, n, GROUP_SIZE)
    ]
    assert groups[0]["opType"] == f"Block 0–{GROUP_SIZE - 1}" and all(g["domain"] == Domain.RUN for g in groups)
    assert "groups of consecutive calls" in body["docString"]
    inner = function(model, groups[1])
    assert [c["name"] for c in inner["node"]] == [f"layers.{i}:1" for i in range(GROUP_SIZE, 2 * GROUP_SIZE)]
    assert "Calls 10–19 of the run `layers`" in groups[1]["docString"]


@pytest.mark.parametrize(
    ("model", "why"),
    [
        (Branches(), "the calls branch rather than chain"),
        (Skips(), "skip connections"),
    ],
    ids=["branches", "skips"],
)
def test_calls_that_do_not_chain_are_drawn_one_by_one_and_say_why(tmp_path: Path, model: nn.Module, why: str) -> None:
    exported, _ = export(trace(model), tmp_path / "m.onnx.json", depth=1)
    assert not [n for n in root(exported) if n["domain"] == Domain.RUN]
    calls = [n for n in root(exported) if n["domain"] == Domain.MODULE]
    assert len(calls) == 4
    doc = exported["graph"]["docString"]
    assert "drawn one by one, not as a run" in doc and why in doc, doc


def test_a_layer_of_another_class_splits_the_run_and_says_so(tmp_path: Path) -> None:
    exported, _ = export(trace(Stack(7, middle=Other)), tmp_path / "m.onnx.json", depth=1)
    runs = [n for n in root(exported) if n["domain"] == Domain.RUN]
    assert [(r["name"], r["opType"]) for r in runs] == [("layers[0..2]", "Block ×3"), ("layers[4..6]", "Block ×3")]
    assert "`layers.3` is a Other, not a Block" in exported["graph"]["docString"]
    assert any(n["name"] == "layers.3:1" and n["opType"] == "Other" for n in root(exported))


def test_ops_between_calls_split_the_run_and_say_so(tmp_path: Path) -> None:
    exported, _ = export(trace(Stack(7, between=True)), tmp_path / "m.onnx.json", depth=1)
    runs = [n for n in root(exported) if n["domain"] == Domain.RUN]
    assert [r["opType"] for r in runs] == ["Block ×3", "Block ×4"]
    assert "ops run between `layers.2` and `layers.3`" in exported["graph"]["docString"]


def test_depth_still_counts_modules_not_runs(tmp_path: Path) -> None:
    log = trace(Stack(5))
    shallow, _ = export(log, tmp_path / "a.onnx.json", depth=1)
    deeper, _ = export(log, tmp_path / "b.onnx.json", depth=2)
    assert meta(shallow)["torchlens.depth"] == "1" and meta(deeper)["torchlens.depth"] == "2"
    # depth=2 groups at the blocks' children: no block is a box, so no run either.
    assert not [n for n in root(deeper) if n["domain"] in (Domain.RUN, Domain.MODULE)]

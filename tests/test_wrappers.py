"""The default module view is a real diagram even for wrapped models.

Issue: a model that reaches TorchLens wrapped (``Wrapper(model)``, whose forward only calls
``self.model``) drew one lonely box at module depth 1, and so did task-head models around
their backbone. Left without ``depth=``, the module view starts at depth 1 and, while the
root draws fewer than five boxes of substance, opens the calls holding a third or more of
the ops (a wrapper, a backbone, an encoder and a decoder, a module called twice), and says
so (``torchlens.depth_reason`` in the model metadata and in the root graph's docString). An
explicit ``depth=`` is obeyed exactly, with no reason recorded.

A "box of substance" at the root is a module-call node (domain ``ai.torchlens.module``) or
an op that is not a trivial view / reshape / output pseudo-op. Every export here also
passes ``onnx.checker.check_model(full_check=True)`` after a strict protobuf parse, and
every companion row targets something the artifact shows.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import onnx
import pytest
import torch
import torchlens
from google.protobuf import json_format
from torch import nn

import tlnetron
from tlnetron import TlnetronWarning
from tlnetron._generated.vocab import COMPANION_SIGNATURE, Domain
from tlnetron.cli import main as cli_main
from zoo import ZooTrace

TRIVIAL = frozenset(
    {
        "getitem", "getattr", "view", "reshape", "contiguous", "to", "type", "identity",
        "clone", "detach", "flatten", "squeeze", "unsqueeze", "output", "buffer",
    }
)  # fmt: skip
DESCENDED = "descended through single-call wrapper"


# ------------------------------------------------------------------ models


class Block(nn.Module):
    def __init__(self, c: int) -> None:
        super().__init__()
        self.conv = nn.Conv2d(c, c, 3, padding=1)
        self.relu = nn.ReLU()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out: torch.Tensor = self.relu(self.conv(x) + x)
        return out


class SmallCnn(nn.Module):
    """Resnet-like: stem, two residual blocks, pool, classifier (a diagram at depth 1)."""

    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Conv2d(3, 4, 3, padding=1)
        self.blocks = nn.Sequential(Block(4), Block(4))
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(4, 5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.blocks(torch.relu(self.stem(x)))
        out: torch.Tensor = self.fc(torch.flatten(self.pool(x), 1))
        return out


class Inner(nn.Module):
    def __init__(self, net: nn.Module) -> None:
        super().__init__()
        self.net = net

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out: torch.Tensor = self.net(x)
        return out


class Outer(nn.Module):
    """A wrapper around a wrapper; the trailing reshape is a trivial op at the root."""

    def __init__(self, inner: nn.Module) -> None:
        super().__init__()
        self.inner = inner

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out: torch.Tensor = self.inner(x).reshape(x.shape[0], -1)
        return out


class CallsTwice(nn.Module):
    """Not a single-call wrapper: the held model runs twice."""

    def __init__(self, inner: nn.Module) -> None:
        super().__init__()
        self.inner = inner

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out: torch.Tensor = self.inner(self.inner(x))
        return out


class Scaled(nn.Module):
    """Not a pure wrapper: a substantive op (mul) sits beside the one call."""

    def __init__(self, inner: nn.Module) -> None:
        super().__init__()
        self.inner = inner

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out: torch.Tensor = self.inner(x) * 2
        return out


@pytest.fixture(scope="module")
def chain_trace() -> torchlens.Trace:
    torch.manual_seed(0)
    model = Outer(Inner(SmallCnn())).eval()
    log: torchlens.Trace = torchlens.trace(model, torch.randn(1, 3, 8, 8))
    return log


# ------------------------------------------------------------------ helpers


def export(log: torchlens.Trace, path: Path, **kwargs: Any) -> dict[str, Any]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TlnetronWarning)
        result = tlnetron.export(log, path, **kwargs)
    assert result.artifact is not None and result.companion is not None
    return check_pair(result.artifact, result.companion)


def check_pair(artifact: Path, companion_path: Path) -> dict[str, Any]:
    """Strict-parse + full checker; every companion row resolves. Returns the artifact JSON."""
    text = artifact.read_text(encoding="utf-8")
    proto = json_format.Parse(text, onnx.ModelProto())
    onnx.checker.check_model(proto, full_check=True)
    model: dict[str, Any] = json.loads(text)
    nodes = {n["name"] for n in model["graph"].get("node", [])}
    functions = set()
    values = {o for n in model["graph"].get("node", []) for o in n.get("output", [])}
    values |= {v["name"] for v in (*model["graph"].get("input", []), *model["graph"].get("output", []))}
    for f in model.get("functions", []):
        nodes |= {n["name"] for n in f.get("node", [])}
        functions.add(f["name"])
        values |= {o for n in f.get("node", []) for o in n.get("output", [])} | {
            *f.get("input", []),
            *f.get("output", []),
        }
    companion = json.loads(companion_path.read_text(encoding="utf-8"))
    assert companion["signature"] == COMPANION_SIGNATURE
    for row in (*companion["metadata"], *companion["metrics"]):
        kind, target = row["kind"], row.get("target")
        if kind == "node":
            assert target in nodes, row
        elif kind == "model":
            assert target == "", row
        elif kind == "graph":
            assert target == "" or target in functions, row
        elif kind == "value":
            assert target in values, row
        else:
            raise AssertionError(f"companion row of a kind Netron never shows: {row}")
    return model


def meta(model: dict[str, Any]) -> dict[str, str]:
    return {p["key"]: p["value"] for p in model.get("metadataProps", [])}


def root_calls(model: dict[str, Any]) -> list[str]:
    return [n["name"] for n in model["graph"]["node"] if n["domain"] == Domain.MODULE]


def substance(model: dict[str, Any]) -> list[str]:
    """Root boxes that make a diagram: module calls and non-trivial ops."""
    return [n["name"] for n in model["graph"]["node"] if n["domain"] == Domain.MODULE or n["opType"] not in TRIVIAL]


# ------------------------------------------------------------------ automatic depth


@pytest.mark.parametrize(("name", "wrapper"), [("wrapped_t5", "model"), ("wrapped_cnn", "backbone")])
def test_wrapped_model_default_view_is_a_diagram(zoo_trace: ZooTrace, tmp_path: Path, name: str, wrapper: str) -> None:
    model = export(zoo_trace(name), tmp_path / "m.onnx.json")
    boxes = substance(model)
    assert len(boxes) > 1, boxes
    assert f"{wrapper}:1" not in root_calls(model), "the wrapper itself is still the one box"
    m = meta(model)
    assert int(m["torchlens.depth"]) > 1
    reason = m["torchlens.depth_reason"]
    assert DESCENDED in reason and f"`{wrapper}`" in reason, reason
    assert reason in model["graph"]["docString"]
    assert DESCENDED in model["graph"]["docString"]


@pytest.mark.parametrize("name", ["resnet", "demo"])
def test_model_already_a_diagram_stays_at_depth_one(zoo_trace: ZooTrace, tmp_path: Path, name: str) -> None:
    model = export(zoo_trace(name), tmp_path / "m.onnx.json")
    m = meta(model)
    assert int(m["torchlens.depth"]) == 1
    assert "torchlens.depth_reason" not in m
    assert DESCENDED not in model["graph"].get("docString", "")
    assert len(substance(model)) > 1


def test_chain_of_two_wrappers_descends_two_levels(chain_trace: torchlens.Trace, tmp_path: Path) -> None:
    model = export(chain_trace, tmp_path / "m.onnx.json")
    m = meta(model)
    # Two wrappers, then the blocks: below them the root would have one box to drill into.
    assert int(m["torchlens.depth"]) == 4
    reason = m["torchlens.depth_reason"]
    assert DESCENDED in reason
    assert "`inner`" in reason and "`inner.net`" in reason, reason
    assert reason.index("`inner`") < reason.index("`inner.net`"), "outermost wrapper first"
    assert "`inner.net.blocks`" in reason.split(OPENED)[1], reason
    assert reason in model["graph"]["docString"]
    calls = root_calls(model)
    assert "inner:1" not in calls and "inner.net:1" not in calls and "inner.net.blocks:1" not in calls
    assert {"inner.net.blocks.0:1", "inner.net.blocks.1:1"} <= set(calls)
    assert len(substance(model)) > 1


OPENED = "opened the blocks holding most of the model"


@pytest.mark.parametrize(("wrapper", "boxes"), [(CallsTwice, 6), (Scaled, 4)], ids=["calls-twice", "substantive-op"])
def test_a_root_of_two_boxes_opens_the_calls_holding_the_model(
    tmp_path: Path, wrapper: type[nn.Module], boxes: int
) -> None:
    """Not single-call wrappers, but two boxes are no diagram: the call(s) holding a third or
    more of the ops are opened (both calls of a module called twice, the block beside a mul)."""
    torch.manual_seed(0)
    inner = nn.Sequential(nn.Linear(5, 5), nn.ReLU(), nn.Linear(5, 5))
    log = torchlens.trace(wrapper(inner).eval(), torch.randn(2, 5))
    model = export(log, tmp_path / "m.onnx.json")
    m = meta(model)
    assert int(m["torchlens.depth"]) == 2
    reason = m["torchlens.depth_reason"]
    assert OPENED in reason and "`inner`" in reason and DESCENDED not in reason, reason
    assert reason in model["graph"]["docString"]
    assert root_calls(model) == []
    assert len(substance(model)) == boxes
    # depth=1 still draws the calls as boxes.
    assert len(substance(export(log, tmp_path / "d1.onnx.json", depth=1))) == 2


def test_an_encoder_decoder_opens_both_halves(zoo_trace: ZooTrace, tmp_path: Path) -> None:
    """T5: encoder and decoder (each a third or more of the ops) open together, not one alone."""
    model = export(zoo_trace("t5"), tmp_path / "m.onnx.json")
    reason = meta(model)["torchlens.depth_reason"]
    assert OPENED in reason and "`encoder`" in reason and "`decoder`" in reason, reason
    calls = root_calls(model)
    assert "encoder:1" not in calls and "decoder:1" not in calls
    assert any(c.startswith("encoder.") for c in calls) and any(c.startswith("decoder.") for c in calls), calls
    assert len(substance(model)) >= 5


# ------------------------------------------------------------------ explicit depth


@pytest.mark.parametrize(("name", "wrapper"), [("wrapped_t5", "model"), ("wrapped_cnn", "backbone")])
def test_explicit_depth_one_shows_the_wrapper_as_one_box(
    zoo_trace: ZooTrace, tmp_path: Path, name: str, wrapper: str
) -> None:
    model = export(zoo_trace(name), tmp_path / "m.onnx.json", depth=1)
    assert root_calls(model) == [f"{wrapper}:1"]
    assert substance(model) == [f"{wrapper}:1"], "only trivial ops beside the one call box"
    m = meta(model)
    assert int(m["torchlens.depth"]) == 1
    assert "torchlens.depth_reason" not in m
    assert DESCENDED not in model["graph"].get("docString", "")


def test_explicit_depth_one_on_a_chain(chain_trace: torchlens.Trace, tmp_path: Path) -> None:
    model = export(chain_trace, tmp_path / "m.onnx.json", depth=1)
    assert root_calls(model) == ["inner:1"]
    assert substance(model) == ["inner:1"]
    assert int(meta(model)["torchlens.depth"]) == 1


def test_explicit_depth_two_is_obeyed_even_on_a_wrapper(chain_trace: torchlens.Trace, tmp_path: Path) -> None:
    # depth 2 is still the inner wrapper: explicit depth is obeyed, never auto-descended.
    model = export(chain_trace, tmp_path / "m.onnx.json", depth=2)
    assert root_calls(model) == ["inner.net:1"]
    m = meta(model)
    assert int(m["torchlens.depth"]) == 2
    assert "torchlens.depth_reason" not in m


def test_explicit_depth_two_on_wrapped_cnn(zoo_trace: ZooTrace, tmp_path: Path) -> None:
    model = export(zoo_trace("wrapped_cnn"), tmp_path / "m.onnx.json", depth=2)
    assert int(meta(model)["torchlens.depth"]) == 2
    assert {"backbone.layer1:1", "backbone.layer2:1"} <= set(root_calls(model))
    assert "torchlens.depth_reason" not in meta(model)


def test_explicit_depth_three_on_wrapped_cnn(zoo_trace: ZooTrace, tmp_path: Path) -> None:
    model = export(zoo_trace("wrapped_cnn"), tmp_path / "m.onnx.json", depth=3)
    assert int(meta(model)["torchlens.depth"]) == 3
    calls = set(root_calls(model))
    assert "backbone.layer1:1" not in calls
    assert {"backbone.layer1.0:1", "backbone.layer2.1:1"} <= calls


# ------------------------------------------------------------------ the command line


def test_cli_export_of_a_saved_wrapped_model(
    zoo_trace: ZooTrace, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = zoo_trace("wrapped_cnn")
    saved = tmp_path / "run.tlspec"
    # Withhold what torchlens.save would otherwise warn about (warnings are errors here).
    torchlens.save(log, saved, include_custom_attributes=False, include_buffer_values=False)
    out = tmp_path / "cli.onnx.json"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TlnetronWarning)
        code = cli_main(["export", str(saved), "-o", str(out), "--granularity", "module", "--no-progress"])
    assert code == 0, capsys.readouterr().err
    via_cli = check_pair(out, out.with_name("cli.onnx.attachment.json"))
    via_api = export(log, tmp_path / "api.onnx.json")
    for key in ("torchlens.depth", "torchlens.depth_reason"):
        assert meta(via_cli)[key] == meta(via_api)[key]
    assert [n["name"] for n in via_cli["graph"]["node"]] == [n["name"] for n in via_api["graph"]["node"]]
    assert via_cli["graph"]["docString"] == via_api["graph"]["docString"]
    assert DESCENDED in meta(via_cli)["torchlens.depth_reason"]

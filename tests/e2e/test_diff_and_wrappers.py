"""In the real Netron: diff facts show in a node's sidebar, and a wrapped model's default
module view draws a real diagram at the root (more than one box)."""

from __future__ import annotations

import copy
import json
import warnings
from pathlib import Path
from typing import Any

import pytest
import torch
import torchlens

import tlnetron
from tlnetron._generated.vocab import DiffStatus, Granularity, MetaKey, NodeMeta
from netron_driver import NetronPage
from zoo import ZooTrace

pytestmark = pytest.mark.e2e


class _Net(torch.nn.Module):
    def __init__(self, extra: bool = False) -> None:
        super().__init__()
        self.a = torch.nn.Linear(6, 6)
        self.block = torch.nn.Sequential(torch.nn.Linear(6, 6), torch.nn.ReLU())
        self.extra = extra

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.block(torch.relu(self.a(x)))
        return y * 2 if self.extra else y


def _export(log: Any, path: Path, **kwargs: Any) -> tlnetron.ExportResult:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", tlnetron.TlnetronWarning)
        return tlnetron.export(log, path, **kwargs)


def _top_meta(artifact: Path) -> dict[str, dict[str, str]]:
    """Metadata rows of every node of the top graph (the ones drawn without drilling in)."""
    doc = json.loads(artifact.read_text(encoding="utf-8"))
    return {n["name"]: {p["key"]: p["value"] for p in n.get("metadataProps", [])} for n in doc["graph"]["node"]}


@pytest.mark.parametrize("granularity", [Granularity.OP, Granularity.MODULE])
def test_diff_rows_show_in_the_sidebar(netron: NetronPage, tmp_path: Path, granularity: str) -> None:
    torch.manual_seed(0)
    base = _Net().eval()
    x = torch.randn(2, 6)
    subject = _Net(extra=True).eval()
    subject.load_state_dict(copy.deepcopy(base.state_dict()))
    with torch.no_grad():
        subject.a.weight.add_(0.25)
    ref_log, sub_log = torchlens.trace(base, x), torchlens.trace(subject, x)
    # depth=1 keeps `block` a box (left to itself, the view opens a call holding half so small a model).
    depth = {"depth": 1} if granularity == Granularity.MODULE else {}
    result = _export(sub_log, tmp_path / "diff.onnx.json", granularity=granularity, baseline=ref_log, **depth)
    assert result.artifact is not None and result.companion is not None
    netron.open_dropped(result.artifact, result.companion)
    top = _top_meta(result.artifact)
    status = {name: meta.get(NodeMeta.DIFF_STATUS) for name, meta in top.items()}
    # The perturbed linear changed, the extra op was added: both carry their rows.
    picks = [
        next(n for n, s in status.items() if s == DiffStatus.CHANGED),
        next(n for n, s in status.items() if s == DiffStatus.ADDED),
    ]
    if granularity == Granularity.MODULE:
        picks.append(next(n for n, meta in top.items() if NodeMeta.DIFF_ROW_COUNTS in meta))
    for name in picks:
        shown = dict(netron.open_node_properties(name)["Metadata"])
        diff_rows = {k: v for k, v in top[name].items() if k.startswith("torchlens.diff.")}
        assert diff_rows
        for key, value in diff_rows.items():
            assert shown.get(key) == value, (name, key, shown)
    model_rows = dict(netron.open_model_properties()["Metadata"])
    summary = json.loads(model_rows[MetaKey.BASELINE])
    assert summary["row_counts"][DiffStatus.ADDED] == 1 and summary["row_counts"][DiffStatus.CHANGED] >= 1
    assert not netron.console_errors()


def test_wrapped_model_draws_a_diagram_at_the_root(netron: NetronPage, zoo_trace: ZooTrace, tmp_path: Path) -> None:
    log = zoo_trace("wrapped_t5")
    default = _export(log, tmp_path / "wrapped.onnx.json")
    netron.open_dropped(default.artifact, default.companion)
    boxes = [n for n in netron.drawn_nodes() if n["kind"] == "node"]
    calls = [n for n in boxes if any(title == "Show Function Definition" for _, title in n["items"])]
    assert len(boxes) > 1 and len(calls) >= 2, boxes
    one = _export(log, tmp_path / "one.onnx.json", depth=1)
    netron.open_dropped(one.artifact, one.companion)
    boxes = [n for n in netron.drawn_nodes() if n["kind"] == "node"]
    assert len(boxes) == 1, boxes
    assert not netron.console_errors()

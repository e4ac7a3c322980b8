"""Task-head models, as people load them, in the real Netron: the default root is a diagram,
and the sidebar reads in Netron's ~16-character name column.

* GPT2LMHeadModel, LlamaForCausalLM, BertForMaskedLM, ViT and ResNet classifiers and
  Whisper open on their main blocks (at least five boxes of substance, the head among them),
  drawn exactly as the artifact says.
* Model Properties: the metadata rows' names are cut (``torchlens.captur…``), so the
  description, shown at full width, says the view, depth, capture, counts and totals.
* A diffed node says its status and largest delta in its description; the model's
  description says what was compared.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import pytest
import torch
import torchlens

import tlnetron
from netron_driver import NetronPage
from test_artifacts import check_drawn_body, export_quietly
from tlnetron._generated.vocab import Granularity
from tlnetron.views.module_depth import TRIVIAL_OP_TYPES
from tlnetron.words.model import unwrapped
from zoo import build

pytestmark = pytest.mark.e2e

NAME_COLUMN = 16  # characters of a row name Netron shows before cutting it with "…"


def description(props: dict[str, list[tuple[str, str]]], title: str) -> str:
    # The description is wrapped for Netron's narrow sidebar; the facts are read with each on one line.
    return unwrapped(dict(props[title]).get("description", ""))


@pytest.mark.parametrize("name", ["gpt2", "llama_lm", "bert_mlm", "vit_cls", "resnet_cls", "whisper"])
def test_default_root_is_a_diagram_in_netron(netron: NetronPage, zoo_trace: Any, tmp_path: Path, name: str) -> None:
    result = export_quietly(zoo_trace(name), tmp_path / f"{name}.onnx.json")
    assert result.artifact is not None and result.companion is not None
    model = json.loads(result.artifact_json)
    netron.open_dropped(result.artifact, result.companion)
    check_drawn_body(netron, model["graph"], f"{name} default root")
    boxes = [
        n
        for n in netron.drawn_nodes()
        if n["kind"] == "node" and (n["function"] or n["header"] not in TRIVIAL_OP_TYPES)
    ]
    assert len(boxes) >= 5, [n["name"] for n in boxes]

    props = netron.open_model_properties()
    text = description(props, "Model Properties")
    meta = {k: v for k, v in props["Metadata"]}
    # What Netron shows of the row names is cut; every fact is in the description instead.
    cut = [k for k in meta if len(k) > NAME_COLUMN]
    assert "torchlens.capture_outcome" in cut and "torchlens.node_count" in cut
    cls = zoo_trace(name).model_class_qualname.rsplit(".", 1)[-1]
    assert f"What you see: {cls}, module view at module depth {meta['torchlens.depth']}." in text
    assert f"Capture: {meta['torchlens.capture_outcome']}" in text
    assert f"Drawn: {int(meta['torchlens.node_count']):,} nodes" in text
    assert meta["torchlens.estimated_flops_total"] in text
    if int(meta.get("torchlens.side_op_count", "0")):
        assert f"{meta['torchlens.side_op_count']} side computation" in text
    assert netron.console_errors() == []


def _perturbed_pair() -> tuple[torchlens.Trace, torchlens.Trace]:
    """The demo model traced, and traced again with one weight nudged (a real 'changed' diff)."""
    model, inputs = build("demo")
    reference = torchlens.trace(model, inputs.args)
    with torch.no_grad():
        next(model.parameters()).add_(1e-3)
    subject = torchlens.trace(model, inputs.args)
    return subject, reference


def test_a_diff_is_said_in_netron(netron: NetronPage, tmp_path: Path) -> None:
    subject, reference = _perturbed_pair()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", tlnetron.TlnetronWarning)
        result = tlnetron.export(subject, tmp_path / "diff.onnx.json", granularity=Granularity.OP, baseline=reference)
    assert result.artifact is not None and result.companion is not None
    model = json.loads(result.artifact_json)
    netron.open_dropped(result.artifact, result.companion)
    text = description(netron.open_model_properties(), "Model Properties")
    assert "Compared with the baseline capture" in text and "diff row" in text and "need not add up" in text
    diffed = next(
        n
        for n in model["graph"]["node"]
        if any(p["key"] == "torchlens.diff.status" for p in n.get("metadataProps", []))
    )
    status = next(p["value"] for p in diffed["metadataProps"] if p["key"] == "torchlens.diff.status")
    node_text = description(netron.open_node_properties(diffed["name"]), "Node Properties")
    assert f"Diff against the baseline: {status}" in node_text, node_text
    assert netron.console_errors() == []


def test_a_question_mark_edge_says_why_in_netron(netron: NetronPage, zoo_trace: Any, tmp_path: Path) -> None:
    # GPT-2's cache starts from empty tensors; Netron labels their edges "?" (a 0 dimension).
    result = export_quietly(zoo_trace("gpt2"), tmp_path / "gpt2.onnx.json", granularity=Granularity.OP)
    assert result.artifact is not None and result.companion is not None
    model = json.loads(result.artifact_json)
    empty = [
        v["name"]
        for v in model["graph"]["valueInfo"]
        if any(d.get("dimValue") == "0" for d in v["type"]["tensorType"]["shape"].get("dim", []))
    ]
    assert empty
    netron.open_dropped(result.artifact, result.companion)
    assert "?" in netron.edge_labels()
    props = netron.open_connection_properties(empty[0])
    shown = dict(props["Connection Properties"])["type"]
    assert "float32[?]" in shown and "Netron prints a dimension of size 0 as ?" in shown, shown
    assert netron.console_errors() == []

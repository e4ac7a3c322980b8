"""The default module view of task-head models is an architecture diagram.

Issue: ``GPT2LMHeadModel``, ``LlamaForCausalLM``, ``ViTForImageClassification``,
``BertForMaskedLM``, ``WhisperForConditionalGeneration``, ``ResNetForImageClassification``
opened on a root of 2-3 boxes (the backbone, a ``getitem``, a ``linear``). With no
``depth=``, the root now shows the main blocks: at least five boxes of substance, the head
among them, within the legibility budget, with the choice and the reason recorded. Side
computations (the attention-mask checks that feed no output) are not drawn and are counted.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import pytest

import tlnetron
from tlnetron import TlnetronWarning
from tlnetron._generated.vocab import Domain, Granularity
from tlnetron.views.module_depth import TRIVIAL_OP_TYPES
from zoo import TASK_HEADS, ZooTrace


# Where each model's head is: its module path (a call box) or the op type it inlines to.
HEAD = {
    "gpt2": "lm_head", "gpt2_small": "lm_head", "t5": "lm_head", "llama_lm": "lm_head", "bert_mlm": "cls",
    "vit_cls": "classifier", "resnet_cls": "classifier", "whisper": "proj_out",
}  # fmt: skip


def export(log: Any, path: Path, **kwargs: Any) -> dict[str, Any]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TlnetronWarning)
        result = tlnetron.export(log, path, **kwargs)
    data: dict[str, Any] = json.loads(result.artifact_json)
    return data


def meta(model: dict[str, Any]) -> dict[str, str]:
    return {p["key"]: p["value"] for p in model["metadataProps"]}


def attrs(node: dict[str, Any]) -> dict[str, str]:
    import base64

    return {a["name"]: base64.b64decode(a["s"]).decode() for a in node.get("attribute", []) if "s" in a}


def boxes(model: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        n
        for n in model["graph"]["node"]
        if n["domain"] == Domain.MODULE or n["opType"] not in (*TRIVIAL_OP_TYPES, "output", "buffer")
    ]


@pytest.mark.parametrize("name", TASK_HEADS)
def test_the_default_root_is_a_diagram_with_the_head(zoo_trace: ZooTrace, tmp_path: Path, name: str) -> None:
    model = export(zoo_trace(name), tmp_path / "m.onnx.json")
    m = meta(model)
    drawn = boxes(model)
    assert len(drawn) >= 5, [n["name"] for n in drawn]
    assert int(m["torchlens.root_ranks"]) <= tlnetron.LEGIBILITY_BUDGET
    # The head is on the root: a call box of its own, or (a single Linear) the op it inlines to.
    head = HEAD[name]
    paths = {attrs(n).get("module_path", "") for n in model["graph"]["node"]}
    assert any(p == head or p.startswith(head + ".") for p in paths), sorted(paths)
    # The backbone is open: no root box holds most of the model.
    one_box = [
        n
        for n in model["graph"]["node"]
        if n["domain"] == Domain.MODULE and n["name"].split(":")[0].count(".") == 0 and n["name"].split(":")[0] != head
    ]
    assert one_box == [], [n["name"] for n in one_box]
    if int(m["torchlens.depth"]) > 1:
        reason = m["torchlens.depth_reason"]
        assert reason in model["graph"]["docString"] and "depth=1" in reason


@pytest.mark.parametrize("name", ["llama_lm", "bert_mlm"])
def test_attention_mask_checks_are_counted_not_drawn(zoo_trace: ZooTrace, tmp_path: Path, name: str) -> None:
    log = zoo_trace(name)
    model = export(log, tmp_path / "m.onnx.json")
    op_view = export(log, tmp_path / "op.onnx.json", granularity=Granularity.OP)
    texts = [model["graph"].get("docString", "")] + [
        attrs(n).get("hidden", "") for f in [model["graph"], *model.get("functions", [])] for n in f["node"]
    ]
    told = sum(int(t.split("Not drawn")[1].split(": ")[1].split(" side")[0]) for t in texts if "side computation" in t)
    drawn = {
        n["name"]
        for f in [model["graph"], *model.get("functions", [])]
        for n in f["node"]
        if n["domain"] != Domain.MODULE
    }
    missing = {n["name"] for n in op_view["graph"]["node"]} - drawn
    assert told == len(missing) >= 1, (told, sorted(missing))
    # What is left out ends in a scalar nobody draws: a check, not data flow.
    scalars = [
        n
        for n in op_view["graph"]["node"]
        if n["name"] in missing and "output: " in n.get("docString", "") and "[]" in n["docString"].split("output: ")[1]
    ]
    assert scalars, sorted(missing)


@pytest.mark.parametrize("name", ["gpt2", "bert_mlm"])
def test_depth_one_still_draws_the_top_level_modules(zoo_trace: ZooTrace, tmp_path: Path, name: str) -> None:
    model = export(zoo_trace(name), tmp_path / "m.onnx.json", depth=1)
    assert int(meta(model)["torchlens.depth"]) == 1 and "torchlens.depth_reason" not in meta(model)
    assert len(boxes(model)) < 5


def _values(model: dict[str, Any]) -> list[dict[str, Any]]:
    graphs = [model["graph"], *model.get("functions", [])]
    return [
        v for g in graphs for key in ("input", "output", "valueInfo") for v in g.get(key, []) if isinstance(v, dict)
    ]


def _dims(value: dict[str, Any]) -> list[dict[str, str]]:
    tensor = value.get("type", {}).get("tensorType") or value.get("type", {}).get("sequenceType", {}).get(
        "elemType", {}
    ).get("tensorType", {})
    dims: list[dict[str, str]] = tensor.get("shape", {}).get("dim", [])
    return dims


@pytest.mark.parametrize("granularity", [Granularity.MODULE, Granularity.OP, Granularity.ROLLED])
def test_empty_kv_tensors_say_why_their_edge_reads_question_mark(
    zoo_trace: ZooTrace, tmp_path: Path, granularity: str
) -> None:
    # GPT-2 called as its docs show (use_cache on) starts its cache from empty tensors, which
    # Netron labels "?" (it prints a dimension of 0 so): each such value says why.
    model = export(zoo_trace("gpt2"), tmp_path / "m.onnx.json", granularity=granularity)
    empty = [v for v in _values(model) if any(d.get("dimValue") == "0" for d in _dims(v))]
    assert empty, "GPT-2 with its cache on draws no empty tensor any more: this test lost its subject"
    for value in empty:
        shape = ", ".join(d.get("dimValue", "?") for d in _dims(value))
        assert value.get("docString", "").endswith(
            f"an empty tensor, shape ({shape}{',' if len(_dims(value)) == 1 else ''}): Netron prints a "
            "dimension of size 0 as ?"
        ), value
    others = [v for v in _values(model) if v not in empty and "empty tensor" in v.get("docString", "")]
    assert others == []

"""Real-depth task-head models open on a readable diagram (module view, the default).

GPT-2 medium's 24 layers, Llama at 32 and 80, BERT-large and ViT-large at 24, T5 and Whisper
at 12+12 and Mixtral's MoE blocks, each called as its docs show (``use_cache`` left on, a
ModelOutput returned): the root has at least five boxes and two to drill into, within the
legibility budget, at most eight output nodes named by the returned fields; each layer
stack is one run box (or, where it is most of a root that would read as too few boxes, its
groups of calls); and the drawing keeps the op view's data flow exactly.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Callable
from typing import Any

import pytest

import tlnetron
from test_export_zoo import flat_dataflow, side_ops, trace_table
from test_runs import attrs
from tlnetron import TlnetronWarning
from tlnetron._generated.vocab import BufferPolicy, Domain, Granularity
from tlnetron.views.structures import field_key, field_name
from tlnetron.views.module_depth import MIN_MODULE_BOXES, MIN_ROOT_BOXES, TRIVIAL_OP_TYPES
from zoo import DEEP_LAYERS, ZooTrace, deep_models

MAX_OUTPUT_NODES = 8

Export = Callable[..., dict[str, Any]]


@pytest.fixture(scope="module")
def deep_export(zoo_trace: ZooTrace, tmp_path_factory: pytest.TempPathFactory) -> Export:
    cache: dict[tuple[Any, ...], dict[str, Any]] = {}
    base = tmp_path_factory.mktemp("deep")

    def get(name: str, **kwargs: Any) -> dict[str, Any]:
        key = (name, *sorted(kwargs.items()))
        if key not in cache:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", TlnetronWarning)
                result = tlnetron.export(zoo_trace(name), base / f"{name}.{len(cache)}.onnx.json", **kwargs)
            cache[key] = {
                "model": json.loads(result.artifact_json),
                "companion": json.loads(result.companion_bytes or b"{}"),
            }
        return cache[key]

    return get


def boxes(nodes: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Boxes of substance: calls, runs and ops other than views, reshapes and pseudo-ops."""
    return [
        n for n in nodes
        if n["domain"] in (Domain.MODULE, Domain.RUN)
        or (n["domain"] == Domain.LOSSY and n["opType"] not in (*TRIVIAL_OP_TYPES, "output", "input", "buffer"))
    ]  # fmt: skip


def all_nodes(model: dict[str, Any]) -> list[dict[str, Any]]:
    return [*model["graph"]["node"], *(n for f in model.get("functions", []) for n in f.get("node", []))]


@pytest.mark.parametrize("name", deep_models())
def test_the_default_root_reads_as_a_diagram(zoo_trace: ZooTrace, deep_export: Export, name: str) -> None:
    model = deep_export(name)["model"]
    graph = model["graph"]
    meta = {p["key"]: p["value"] for p in model["metadataProps"]}
    drawn = boxes(graph["node"])
    assert len(drawn) >= MIN_ROOT_BOXES, [n["opType"] for n in drawn]
    assert len([n for n in drawn if n["domain"] != Domain.LOSSY]) >= MIN_MODULE_BOXES, [n["opType"] for n in drawn]
    assert int(meta["torchlens.root_ranks"]) <= tlnetron.LEGIBILITY_BUDGET
    output_nodes = len(graph["output"]) + sum(1 for n in graph["node"] if n["opType"] == "output")
    assert output_nodes <= MAX_OUTPUT_NODES
    # Named by the returned fields TorchLens recorded, in order.
    fields: list[str] = []
    for op in zoo_trace(name).output_ops:
        key = field_key(op.io_role)
        assert key is not None
        if field_name(key) not in fields:
            fields.append(field_name(key))
    assert [v["name"] for v in graph["output"]] == fields
    assert "logits" in fields


@pytest.mark.parametrize("name", deep_models())
def test_each_layer_stack_is_one_run(deep_export: Export, name: str) -> None:
    model = deep_export(name)["model"]
    nodes = all_nodes(model)
    whole = sorted(attrs(n)["run_calls"] for n in nodes if n["domain"] == Domain.RUN and "×" in n["opType"])
    # A run most of a root that would read as too few boxes is drawn open there, on its groups.
    opened = [n for n in model["graph"]["node"] if n["domain"] == Domain.RUN and "×" not in n["opType"]]
    if opened:
        covered = sum(attrs(g)["run_calls"] for g in opened)
        whole = sorted([*whole, covered])
        assert "the run `" in model["graph"]["docString"]
    assert whole == sorted(DEEP_LAYERS[name]), whole
    for n in nodes:
        if n["domain"] == Domain.RUN and "×" in n["opType"]:
            assert n["opType"].startswith(attrs(n)["class_name"])
            assert "not a call" in n["docString"]


@pytest.mark.parametrize("name", deep_models())
def test_the_drawing_keeps_the_op_views_dataflow(zoo_trace: ZooTrace, deep_export: Export, name: str) -> None:
    module = deep_export(name)["model"]
    op_view = deep_export(name, granularity=Granularity.OP)["model"]
    module_pairs, module_outputs = flat_dataflow(module)
    op_pairs, op_outputs = flat_dataflow(op_view)
    side = side_ops(trace_table(zoo_trace(name)), BufferPolicy.MEANINGFUL)
    assert module_pairs == {(a, b) for a, b in op_pairs if b not in side}
    assert module_outputs == op_outputs
    # Every returned tensor is in exactly one field's output.
    leaves = sorted(leaf for _, held in module_outputs for leaf in held)
    assert len(leaves) == len(zoo_trace(name).output_ops)


@pytest.mark.parametrize("name", deep_models())
def test_the_cache_is_one_structure_with_its_count_and_shapes(
    zoo_trace: ZooTrace, deep_export: Export, name: str
) -> None:
    model = deep_export(name)["model"]
    cached = [op for op in zoo_trace(name).output_ops if field_key(op.io_role) == "cache"]
    if not cached:
        pytest.skip(f"{name} returns no cache")
    (out,) = [v for v in model["graph"]["output"] if v["name"] == "cache"]
    assert "sequenceType" in out["type"]
    structures = [n for n in all_nodes(model) if n["domain"] == Domain.STRUCTURE]
    top = max(structures, key=lambda n: attrs(n)["tensor_count"])
    assert attrs(top)["tensor_count"] == len(cached)
    assert f"×{len(cached)}" in attrs(top)["shapes"] or ";" in attrs(top)["shapes"]
    assert ".layers.0.." in attrs(top)["paths"] and top["opType"] == f"cache ×{len(cached)}"


@pytest.mark.parametrize("name", deep_models())
def test_an_explicit_depth_is_obeyed(deep_export: Export, name: str) -> None:
    model = deep_export(name, depth=1)["model"]
    meta = {p["key"]: p["value"] for p in model["metadataProps"]}
    assert meta["torchlens.depth"] == "1" and "torchlens.depth_reason" not in meta
    tops = {n["name"].split(":")[0] for n in model["graph"]["node"] if n["domain"] == Domain.MODULE}
    assert tops and all("." not in t for t in tops), tops


@pytest.mark.parametrize("name", deep_models())
def test_the_companion_targets_runs_like_module_calls(deep_export: Export, name: str) -> None:
    got = deep_export(name)
    runs = [n["name"] for n in all_nodes(got["model"]) if n["domain"] == Domain.RUN]
    rows = {(r["target"], r["name"]) for r in got["companion"]["metrics"]}
    for run in runs:
        assert (run, "inclusive µs") in rows and (run, "inclusive ops") in rows

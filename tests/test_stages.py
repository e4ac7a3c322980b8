"""Unit tests per pipeline stage, on hand-written IR and projection literals (no torch).

reader -> ``TraceIR`` -> buffer policy -> view (op / rolled / module) -> ``Projection`` ->
model metadata, companion, ONNX build -> validation -> writer. Each test builds a trace of
a handful of ops by hand and checks concrete values written out from the spec and the
schemas' wording, never recomputed by the code under test. Views are checked through what
reaches the artifact (:func:`export`); the two helpers at the top are the only places that
call a view or the export, so a change of their signatures is fixed there.

Nothing here imports torch: the last test proves it in a fresh interpreter.
"""

from __future__ import annotations

import base64
import json
import math
import subprocess
import sys
import warnings
from dataclasses import replace
from pathlib import Path
from typing import Any

import onnx
import pytest
from google.protobuf import json_format

from tlnetron import TlnetronWarning
from tlnetron._generated.vocab import (
    BUFFER_POLICY,
    COMPANION_SIGNATURE,
    GRANULARITY,
    SCHEMA_VERSION,
    BaselineKind,
    BufferPolicy,
    CaptureStatus,
    Domain,
    Granularity,
    NodeRole,
)
from tlnetron.pipeline import export_ir
from tlnetron.read.buffers import apply_buffer_policy
from tlnetron.build.companion import build_companion, companion_bytes
from tlnetron.build.export_id import PLACEHOLDER
from tlnetron.ir.facts import Facts
from tlnetron.ir.trace import ROLE_BUFFER, ROLE_INPUT, ROLE_OP, ROLE_OUTPUT, Honesty, ModuleCallIR, OpIR, TraceIR
from tlnetron.build.metadata import decode_metadata, encode_metadata, model_metadata
from tlnetron.build.artifact import build_model
from tlnetron.options import ExportOptions
from tlnetron.ir.drawing import PGraph, PNode, PValue, Projection, TensorType
from tlnetron.check.schemas import SchemaViolation, validate
from tlnetron.check.onnx_check import check_onnx
from tlnetron.check.pairs import Shown
from tlnetron.check.validation import companion_problems
from tlnetron.views import view
from tlnetron.write.pair import staged_files

FLOAT = 1  # onnx.TensorProto.FLOAT
INT64 = 7  # onnx.TensorProto.INT64
# Expected values are written out as the spec and the schemas word them; inputs use the generated names.
LOSSY = "ai.torchlens.lossy"
MODULE = "ai.torchlens.module"


# ------------------------------------------------------------------ the two helpers that call the pipeline


def project(
    ir: TraceIR, granularity: str, show_buffers: str = BufferPolicy.MEANINGFUL, depth: int | None = None
) -> Projection:
    """The view of ``ir``, through the views registry as the pipeline calls it."""
    options = ExportOptions(granularity=granularity, show_buffers=show_buffers, depth=depth)  # type: ignore[arg-type]
    return view(granularity).project(ir, options)


def export(
    ir: TraceIR, granularity: str, folder: Path, show_buffers: str = BufferPolicy.MEANINGFUL, depth: int | None = None
) -> tuple[dict[str, Any], dict[str, Any], tuple[str, ...]]:
    """Export ``ir`` into ``folder``: (artifact JSON, companion JSON, warning codes)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TlnetronWarning)
        result = export_ir(
            ir, folder / "m.onnx.json", granularity=granularity, depth=depth, show_buffers=show_buffers, attachment=None
        )
    assert result.companion_json is not None
    return json.loads(result.artifact_json), json.loads(result.companion_json), result.warnings


# ------------------------------------------------------------------ reading the artifact back


def nodes(body: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {n["name"]: n for n in body.get("node", [])}


def attrs(node: dict[str, Any]) -> dict[str, Any]:
    """Attribute name -> value (STRING attributes are base64 in ONNX JSON, INTs are strings)."""
    return {
        a["name"]: base64.b64decode(a["s"]).decode("utf-8") if "s" in a else int(a["i"])
        for a in node.get("attribute", [])
    }


def meta(node_or_model: dict[str, Any]) -> dict[str, str]:
    return {p["key"]: p["value"] for p in node_or_model.get("metadataProps", [])}


def value_type(value: dict[str, Any]) -> tuple[int, list[int]] | None:
    """(elemType, dims) of a valueInfo / graph input / graph output, or None when untyped."""
    tensor = value.get("type", {}).get("tensorType")
    if tensor is None:
        return None
    return tensor["elemType"], [int(d["dimValue"]) for d in tensor.get("shape", {}).get("dim", [])]


def typed(body: dict[str, Any], section: str) -> dict[str, tuple[int, list[int]] | None]:
    return {v["name"]: value_type(v) for v in body.get(section, [])}


def drawn_ops(model: dict[str, Any]) -> set[str]:
    """Names of the op nodes in every body (not module calls, not input / output nodes)."""
    bodies = [model["graph"], *model.get("functions", [])]
    return {
        n["name"]
        for b in bodies
        for n in b.get("node", [])
        if n["domain"] == LOSSY and n["opType"] not in ("input", "output")
    }


def rows(companion: dict[str, Any], section: str, target: str) -> dict[str, Any]:
    return {r["name"]: r["value"] for r in companion[section] if r["target"] == target}


# ------------------------------------------------------------------ IR literals


def op(
    name: str,
    op_type: str,
    *parents: str,
    role: str = ROLE_OP,
    shape: tuple[int, ...] | None = (2, 4),
    dtype: str | None = "float32",
    **kw: Any,
) -> OpIR:
    """One op of a literal trace: a single pass named by its layer unless ``layer`` says otherwise."""
    kw.setdefault("layer", name)
    kw.setdefault("pass_index", 1)
    kw.setdefault("num_passes", 1)
    return OpIR(
        name=name,
        op_type=op_type,
        role=role,
        shape=shape,
        dtype=dtype,
        parents=parents,
        ports=tuple(f"arg{i}" for i in range(len(parents))),
        **kw,
    )


def inp(name: str, shape: tuple[int, ...] = (2, 3)) -> OpIR:
    return op(name, "input", role=ROLE_INPUT, shape=shape)


def out(name: str, parent: str, shape: tuple[int, ...] = (2, 4)) -> OpIR:
    return op(name, "output", parent, role=ROLE_OUTPUT, shape=shape)


COMPLETE = Honesty(capture_status=CaptureStatus.COMPLETE, verified=True, trace_op_count=2)

# input_1 -> linear_1_1 -> relu_1_2 -> output_1
CHAIN = TraceIR(
    ops=(
        inp("input_1"),
        op(
            "linear_1_1",
            "linear",
            "input_1",
            function="torch.nn.functional.linear",
            duration_s=2e-6,
            flops=48,
            nbytes=32,
            num_params=16,
            params=(("weight", (4, 3)), ("bias", (4,))),
        ),
        op("relu_1_2", "relu", "linear_1_1", function="torch.relu", duration_s=1e-6, flops=8, nbytes=32),
        out("output_1", "relu_1_2"),
    ),
    model_class="Tiny",
    honesty=COMPLETE,
    torchlens_version="2.0",
    torch_version="2.13.0",
)

# BatchNorm in train mode: its bookkeeping buffers (running_mean, running_var, the
# num_batches_tracked counter and the add_ that bumps it), then a model buffer of its own.
BATCHNORM = TraceIR(
    ops=(
        inp("input_1"),
        op(
            "buffer_1",
            "buffer",
            role=ROLE_BUFFER,
            shape=(3,),
            buffer_address="bn.running_mean",
            buffer_access="read",
            module_calls=("bn:1",),
        ),
        op(
            "buffer_2",
            "buffer",
            role=ROLE_BUFFER,
            shape=(3,),
            buffer_address="bn.running_var",
            buffer_access="read",
            module_calls=("bn:1",),
        ),
        op(
            "buffer_3",
            "buffer",
            role=ROLE_BUFFER,
            shape=(),
            dtype="int64",
            buffer_address="bn.num_batches_tracked",
            buffer_access="read",
            module_calls=("bn:1",),
        ),
        op("add_1_1", "add_", "buffer_3", shape=(), dtype="int64", module_calls=("bn:1",), module_path="bn"),
        op(
            "buffer_4",
            "buffer",
            "add_1_1",
            role=ROLE_BUFFER,
            shape=(),
            dtype="int64",
            buffer_address="bn.num_batches_tracked",
            buffer_access="write (inplace)",
            module_calls=("bn:1",),
        ),
        op(
            "batch_norm_1_2",
            "batch_norm",
            "input_1",
            "buffer_1",
            "buffer_2",
            shape=(2, 3),
            module_calls=("bn:1",),
            module_path="bn",
        ),
        op("buffer_5", "buffer", role=ROLE_BUFFER, shape=(3,), buffer_address="scale", buffer_access="read"),
        op("mul_1_3", "mul", "batch_norm_1_2", "buffer_5", shape=(2, 3)),
        out("output_1", "mul_1_3", shape=(2, 3)),
    ),
    calls=(ModuleCallIR("bn:1", "bn", 1, "BatchNorm1d", None, 6),),
    honesty=COMPLETE,
)

# A loop running one cell twice: linear then tanh, each a layer of two passes; the second
# linear pass reads the first tanh pass (recurrent feedback).
LOOP = TraceIR(
    ops=(
        inp("input_1", (2, 4)),
        op("linear_1_1:1", "linear", "input_1", layer="linear_1_1", num_passes=2, duration_s=1e-6, flops=64, nbytes=32),
        op("tanh_1_2:1", "tanh", "linear_1_1:1", layer="tanh_1_2", num_passes=2, duration_s=1e-6, nbytes=32),
        op(
            "linear_1_1:2",
            "linear",
            "tanh_1_2:1",
            layer="linear_1_1",
            pass_index=2,
            num_passes=2,
            duration_s=1e-6,
            flops=64,
            nbytes=32,
        ),
        op(
            "tanh_1_2:2",
            "tanh",
            "linear_1_1:2",
            layer="tanh_1_2",
            pass_index=2,
            num_passes=2,
            duration_s=1e-6,
            nbytes=32,
        ),
        out("output_1", "tanh_1_2:2"),
    ),
    honesty=COMPLETE,
)

# block:1 (linear, relu) -> add at the root -> head:1, a one-op call.
CALLS = TraceIR(
    ops=(
        inp("input_1", (2, 4)),
        op(
            "linear_1_1",
            "linear",
            "input_1",
            duration_s=2e-6,
            flops=48,
            nbytes=32,
            module_calls=("block:1",),
            module_path="block",
        ),
        op(
            "relu_1_2",
            "relu",
            "linear_1_1",
            duration_s=1e-6,
            flops=8,
            nbytes=32,
            module_calls=("block:1",),
            module_path="block",
        ),
        op("add_1_3", "add", "relu_1_2", "input_1", duration_s=1e-6, flops=8, nbytes=32),
        op(
            "linear_1_4",
            "linear",
            "add_1_3",
            duration_s=4e-6,
            flops=16,
            nbytes=32,
            module_calls=("head:1",),
            module_path="head",
        ),
        out("output_1", "linear_1_4"),
    ),
    calls=(
        ModuleCallIR("block:1", "block", 1, "Block", None, 20),
        ModuleCallIR("head:1", "head", 1, "Linear", None, 20),
    ),
    honesty=COMPLETE,
)


# ------------------------------------------------------------------ stage 2a: the buffer policy


def test_meaningful_hides_exactly_the_batchnorm_bookkeeping_and_its_counter_op() -> None:
    kept = apply_buffer_policy(BATCHNORM.ops, BufferPolicy.MEANINGFUL)
    assert [o.name for o in kept.ops] == ["input_1", "batch_norm_1_2", "buffer_5", "mul_1_3", "output_1"]
    assert (kept.hidden_buffers, kept.hidden_ops) == (4, 1)
    assert kept.hidden_by_call == (("bn:1", 4, 1),)  # buffers, ops hidden inside bn:1
    batch_norm = next(o for o in kept.ops if o.name == "batch_norm_1_2")
    assert (batch_norm.parents, batch_norm.ports) == (("input_1",), ("arg0",))  # no edge from a hidden buffer


def test_never_hides_every_buffer_and_always_hides_nothing() -> None:
    never = apply_buffer_policy(BATCHNORM.ops, BufferPolicy.NEVER)
    assert [o.name for o in never.ops] == ["input_1", "batch_norm_1_2", "mul_1_3", "output_1"]
    assert (never.hidden_buffers, never.hidden_ops) == (5, 1)
    assert next(o for o in never.ops if o.name == "mul_1_3").parents == ("batch_norm_1_2",)
    always = apply_buffer_policy(BATCHNORM.ops, BufferPolicy.ALWAYS)
    assert always.ops == BATCHNORM.ops and (always.hidden_buffers, always.hidden_ops, always.hidden_by_call) == (
        0,
        0,
        (),
    )


HIDDEN = {  # policy -> (hidden buffers, hidden ops, op nodes drawn), from the spec's three policies
    "never": (5, 1, {"batch_norm_1_2", "mul_1_3"}),
    "meaningful": (4, 1, {"batch_norm_1_2", "buffer_5", "mul_1_3"}),
    "always": (
        0,
        0,
        {"buffer_1", "buffer_2", "buffer_3", "add_1_1", "buffer_4", "batch_norm_1_2", "buffer_5", "mul_1_3"},
    ),
}


@pytest.mark.parametrize("policy", BUFFER_POLICY)
@pytest.mark.parametrize("granularity", GRANULARITY)
def test_every_view_draws_what_the_policy_keeps_and_counts_what_it_hides(
    tmp_path: Path, granularity: str, policy: str
) -> None:
    buffers, ops, drawn = HIDDEN[policy]
    model, _, _ = export(BATCHNORM, granularity, tmp_path, show_buffers=policy)
    m = meta(model)
    assert (m["torchlens.show_buffers"], m["torchlens.hidden_buffer_count"], m["torchlens.hidden_op_count"]) == (
        policy,
        str(buffers),
        str(ops),
    )
    assert drawn_ops(model) == drawn


# ------------------------------------------------------------------ stage 2: the op view


def test_op_view_names_nodes_by_label_and_types_every_edge(tmp_path: Path) -> None:
    model, _, warned = export(CHAIN, Granularity.OP, tmp_path)
    assert warned == ()
    graph = model["graph"]
    assert graph["name"] == "Tiny"
    assert [(n["name"], n["opType"], n["domain"], n["input"], n["output"]) for n in graph["node"]] == [
        ("linear_1_1", "linear", LOSSY, ["input_1"], ["linear_1_1"]),
        ("relu_1_2", "relu", LOSSY, ["linear_1_1"], ["relu_1_2"]),
    ]
    assert typed(graph, "input") == {"input_1": (FLOAT, [2, 3])}
    assert typed(graph, "valueInfo") == {"linear_1_1": (FLOAT, [2, 4])}
    assert typed(graph, "output") == {"relu_1_2": (FLOAT, [2, 4])}


def test_op_view_properties_panel_words_the_facts(tmp_path: Path) -> None:
    model, _, _ = export(CHAIN, Granularity.OP, tmp_path)
    linear = nodes(model["graph"])["linear_1_1"]
    assert attrs(linear) == {"function": "torch.nn.functional.linear", "num_params": 16, "params": "weight 4×3, bias 4"}
    assert meta(linear) == {
        "observed_duration": "2 µs observed wall time",
        "estimated_flops": "48 FLOPs (estimate)",
        "captured_bytes": "32 B captured output tensor",
        "input_names": "['arg0']",
    }
    assert "log['linear_1_1']" in linear["docString"]  # the way back to the live API


def test_an_edge_without_an_onnx_type_stays_untyped_and_its_producer_says_why(tmp_path: Path) -> None:
    ir = TraceIR(
        ops=(
            inp("input_1", (2, 4)),
            op("view_1_1", "view", "input_1", dtype="complex32"),
            op("abs_1_2", "abs", "view_1_1"),
            out("output_1", "abs_1_2"),
        ),
        honesty=COMPLETE,
    )
    model, _, warned = export(ir, Granularity.OP, tmp_path)
    assert warned == ("dtype_not_representable",)
    view = nodes(model["graph"])["view_1_1"]
    assert attrs(view)["untyped_output"] == "torch.complex32 has no ONNX element type; shape [2, 4] kept here"
    assert typed(model["graph"], "valueInfo").get("view_1_1") is None
    assert meta(model)["torchlens.omitted_value_count"] == "1"


# ------------------------------------------------------------------ stage 2: the rolled view


def test_rolled_view_merges_passes_into_one_node_per_layer(tmp_path: Path) -> None:
    model, companion, _ = export(LOOP, Granularity.ROLLED, tmp_path)
    graph = model["graph"]
    assert [(n["name"], n["input"]) for n in graph["node"]] == [
        ("linear_1_1", ["input_1"]),
        ("tanh_1_2", ["linear_1_1"]),
    ]
    assert attrs(nodes(graph)["linear_1_1"]) == {
        "passes": 2,
        "recurrence": "tanh_1_2 feeds back (pass 2) (not drawn: a drawn feedback edge would be a cycle)",
    }
    assert attrs(nodes(graph)["tanh_1_2"]) == {"passes": 2}
    assert typed(graph, "output") == {"tanh_1_2": (FLOAT, [2, 4])}
    assert meta(nodes(graph)["linear_1_1"]) == {
        "observed_duration": "2 µs observed over 2 passes (1 µs per pass)",
        "estimated_flops": "128 FLOPs estimated, summed over 2 passes",
        "captured_bytes": "64 B captured, summed over 2 passes",
        "input_names": "['arg0']",
    }
    assert rows(companion, "metrics", "linear_1_1") == {
        "all-pass µs": 2.0,
        "per-pass µs": 1.0,
        "all-pass FLOPs": 128,
        "all-pass bytes": 64,
        "passes": 2,
    }
    assert rows(companion, "metrics", "tanh_1_2") == {
        "all-pass µs": 2.0,
        "per-pass µs": 1.0,
        "all-pass bytes": 64,
        "passes": 2,
    }


def test_rolled_view_nodes_are_layers_and_the_op_view_keeps_every_pass(tmp_path: Path) -> None:
    assert [(n.name, n.role) for n in project(LOOP, Granularity.ROLLED).graph.nodes] == [
        ("linear_1_1", "layer"),
        ("tanh_1_2", "layer"),
    ]
    model, _, _ = export(LOOP, Granularity.OP, tmp_path)
    graph = nodes(model["graph"])
    assert list(graph) == ["linear_1_1:1", "tanh_1_2:1", "linear_1_1:2", "tanh_1_2:2"]
    assert attrs(graph["linear_1_1:2"]) == {"layer": "linear_1_1", "pass": 2, "passes": 2}
    assert graph["linear_1_1:2"]["input"] == ["tanh_1_2:1"]


def test_rolled_view_leaves_an_edge_untyped_when_passes_disagree_on_its_shape(tmp_path: Path) -> None:
    drifting = TraceIR(
        ops=tuple(replace(o, shape=(3, 4)) if o.name == "linear_1_1:2" else o for o in LOOP.ops), honesty=COMPLETE
    )
    model, _, _ = export(drifting, Granularity.ROLLED, tmp_path)
    linear = attrs(nodes(model["graph"])["linear_1_1"])
    assert linear["shape_variants"] == "pass 1: [2, 4]; pass 2: [3, 4]"
    assert linear["untyped_output"] == "passes disagree on shape or dtype (see shape_variants / dtype_variants)"
    assert "dtype_variants" not in linear
    assert typed(model["graph"], "valueInfo").get("linear_1_1") is None


# ------------------------------------------------------------------ stage 2: the module view


def test_module_view_nests_a_call_as_a_function_with_the_calls_inputs_and_outputs(tmp_path: Path) -> None:
    model, _, _ = export(CALLS, Granularity.MODULE, tmp_path, depth=1)
    graph = model["graph"]
    assert [(n["name"], n["opType"], n["domain"], n["input"], n["output"]) for n in graph["node"]] == [
        ("block:1", "Block", MODULE, ["input_1"], ["relu_1_2"]),
        ("add_1_3", "add", LOSSY, ["relu_1_2", "input_1"], ["add_1_3"]),
        ("linear_1_4", "linear", LOSSY, ["add_1_3"], ["linear_1_4"]),  # head:1 holds one op: inlined
    ]
    call = nodes(graph)["block:1"]
    assert call["overload"] == "block:1"
    assert attrs(call) == {"class_name": "Block", "module_path": "block", "call_index": 1, "num_params": 20}
    (function,) = model["functions"]
    assert (function["name"], function["domain"], function["overload"]) == ("Block", MODULE, "block:1")
    assert (function["input"], function["output"]) == (["input_1"], ["relu_1_2"])
    assert [(n["name"], n["input"]) for n in function["node"]] == [
        ("linear_1_1", ["input_1"]),
        ("relu_1_2", ["linear_1_1"]),
    ]
    # A function's inputs and outputs are bare names: the body types them, and the edge inside.
    assert typed(function, "valueInfo") == {
        "input_1": (FLOAT, [2, 4]),
        "linear_1_1": (FLOAT, [2, 4]),
        "relu_1_2": (FLOAT, [2, 4]),
    }
    assert typed(graph, "valueInfo")["relu_1_2"] == (FLOAT, [2, 4])  # the call's output edge is typed at the root
    m = meta(model)
    assert (m["torchlens.granularity"], m["torchlens.depth"], m["torchlens.function_count"]) == ("module", "1", "1")


def test_module_call_totals_are_inclusive_and_worded_so(tmp_path: Path) -> None:
    model, companion, _ = export(CALLS, Granularity.MODULE, tmp_path, depth=1)
    assert {k: v for k, v in meta(nodes(model["graph"])["block:1"]).items() if k.startswith("inclusive")} == {
        "inclusive_time": "3 µs observed, inclusive of every op inside",
        "inclusive_flops": "56 FLOPs estimated, inclusive",
        "inclusive_bytes": "64 B of captured tensors, inclusive",
        "inclusive_ops": "2 ops, inclusive",
    }
    assert rows(companion, "metrics", "block:1") == {
        "inclusive µs": 3.0,
        "inclusive FLOPs": 56,
        "inclusive bytes": 64,
        "inclusive ops": 2,
    }
    # 3 of the model's 8 µs, 56 of its 80 FLOPs
    assert rows(companion, "metadata", "block:1") == {"share of time": "37.50 %", "share of FLOPs": "70.00 %"}


# ------------------------------------------------------------------ stage 3a: model metadata


def _two_node_projection() -> Projection:
    """The op view of CHAIN, written by hand."""
    linear = PNode(
        "linear_1_1",
        "linear",
        Domain.LOSSY,
        NodeRole.OP,
        ("input_1",),
        ("linear_1_1",),
        attributes=(("function", "torch.nn.functional.linear"),),
        facts=Facts(duration_s=2e-6, flops=48, nbytes=32, op_count=1),
    )
    relu = PNode(
        "relu_1_2",
        "relu",
        Domain.LOSSY,
        NodeRole.OP,
        ("linear_1_1",),
        ("relu_1_2",),
        facts=Facts(duration_s=1e-6, nbytes=32, op_count=1),
    )
    graph = PGraph(
        name="Tiny",
        nodes=(linear, relu),
        inputs=(PValue("input_1", TensorType(FLOAT, (2, 3))),),
        outputs=(PValue("relu_1_2", TensorType(FLOAT, (2, 4))),),
        values=(PValue("linear_1_1", TensorType(FLOAT, (2, 4))),),
    )
    return Projection(
        granularity=Granularity.OP,
        graph=graph,
        show_buffers=BufferPolicy.MEANINGFUL,
        root_ranks=4,
        totals=Facts(duration_s=3e-6, flops=48, nbytes=64, op_count=2),
    )


def test_model_metadata_states_the_honesty_block_and_the_totals() -> None:
    ir = TraceIR(
        ops=CHAIN.ops,
        honesty=Honesty(capture_status=CaptureStatus.HALTED, reason="stopped at relu", verified=None, trace_op_count=5),
        torchlens_version="2.0",
        torch_version="2.13.0",
    )
    counts = {"nodes": 2, "edges": 3, "functions": 0, "omitted_values": 0}
    decoded = model_metadata(
        _two_node_projection(),
        ir,
        counts=counts,
        warnings=["capture_incomplete"],
        baseline=(BaselineKind.IDENTIFIER, "run-7"),
    )
    validate("model-metadata", decoded)
    assert {k: v for k, v in decoded.items() if k != "torchlens.disclaimer"} == {
        "torchlens.schema_version": SCHEMA_VERSION,
        "torchlens.export_id": "0" * 32,
        "torchlens.capture_outcome": "halted",
        "torchlens.capture_outcome_reason": "stopped at relu",
        "torchlens.capture_verified": "no_verdict",
        "torchlens.structure_only": False,
        "torchlens.granularity": "op",
        "torchlens.show_buffers": "meaningful",
        "torchlens.hidden_buffer_count": 0,
        "torchlens.hidden_op_count": 0,
        "torchlens.node_count": 2,
        "torchlens.edge_count": 3,
        "torchlens.function_count": 0,
        "torchlens.omitted_value_count": 0,
        "torchlens.trace_op_count": 5,
        "torchlens.interventions": [],
        "torchlens.warnings": ["capture_incomplete"],
        "torchlens.root_ranks": 4,
        "torchlens.observed_duration_total": "3 µs (observed op wall times, summed)",
        "torchlens.estimated_flops_total": "48 FLOPs (estimate, summed over ops with a FLOP rule)",
        "torchlens.captured_bytes_total": "64 B (captured output tensors, summed)",
        "torchlens.baseline_kind": "identifier",
        "torchlens.baseline": "run-7",
        "torchlens.torchlens_version": "2.0",
        "torchlens.torch_version": "2.13.0",
    }
    assert "not a runnable model" in decoded["torchlens.disclaimer"]


def test_metadata_rows_encode_json_keys_as_json_text_in_schema_order_and_decode_back() -> None:
    decoded = {
        "torchlens.granularity": "module",
        "torchlens.depth": 2,
        "torchlens.structure_only": False,
        "torchlens.interventions": [{"kind": "set", "edit": "zero", "selection": "relu_1_2", "sites": 1}],
        "torchlens.baseline_kind": "trace",
        "torchlens.baseline": {"row_counts": {"changed": 1}},
    }
    encoded = encode_metadata(decoded)
    assert encoded == [
        ("torchlens.structure_only", "false"),
        ("torchlens.granularity", "module"),
        ("torchlens.depth", "2"),
        ("torchlens.interventions", '[{"edit":"zero","kind":"set","selection":"relu_1_2","sites":1}]'),
        ("torchlens.baseline_kind", "trace"),
        ("torchlens.baseline", '{"row_counts":{"changed":1}}'),
    ]
    assert decode_metadata(encoded) == (decoded, [])


def test_decoding_metadata_reports_a_repeated_key_and_json_that_is_not() -> None:
    decoded, problems = decode_metadata([("torchlens.depth", "two"), ("torchlens.depth", "2"), ("other.tool", "[1]")])
    assert decoded == {"torchlens.depth": "two", "other.tool": "[1]"}  # another tool's row is kept as text
    assert [key for key, _ in problems] == ["torchlens.depth", "torchlens.depth"]
    assert problems[0][1].startswith("not JSON text") and problems[1][1] == "the key appears more than once"


# ------------------------------------------------------------------ stage 3b: the companion


def test_companion_of_a_two_node_projection_has_exactly_its_rows() -> None:
    companion = build_companion(_two_node_projection(), artifact_name="tiny.onnx.json", producer_version="9.9")
    model_row = {"kind": "model", "target": ""}
    assert companion == {
        "signature": "netron:attachment",
        "metadata": [
            {**model_row, "name": "torchlens.export_id", "value": "0" * 32},
            {**model_row, "name": "companion of", "value": "tiny.onnx.json"},
            {**model_row, "name": "generated by", "value": f"tlnetron 9.9 (schema {SCHEMA_VERSION})"},
        ],
        "metrics": [
            {"kind": "node", "target": "linear_1_1", "name": "observed µs", "value": 2.0},
            {"kind": "node", "target": "linear_1_1", "name": "estimated FLOPs", "value": 48},
            {"kind": "node", "target": "linear_1_1", "name": "captured bytes", "value": 32},
            {"kind": "node", "target": "relu_1_2", "name": "observed µs", "value": 1.0},  # no FLOP rule: no FLOPs row
            {"kind": "node", "target": "relu_1_2", "name": "captured bytes", "value": 32},
            {**model_row, "name": "Σ observed µs", "value": 3.0},
            {**model_row, "name": "Σ FLOPs (est.)", "value": 48},
            {**model_row, "name": "Σ captured bytes", "value": 64},
            {**model_row, "name": "exported nodes", "value": 2},
        ],
    }
    assert companion_bytes(companion).endswith(b"}\n") and json.loads(companion_bytes(companion)) == companion


# ------------------------------------------------------------------ validation: schemas and the rows Netron would drop


SHOWN = Shown(
    nodes=frozenset({"linear_1_1", "relu_1_2"}),
    values=frozenset({"input_1", "linear_1_1", "relu_1_2"}),
    functions=frozenset(),
)


def test_a_built_companion_validates_and_every_row_reaches_something_shown() -> None:
    companion = build_companion(_two_node_projection(), artifact_name="tiny.onnx.json", producer_version="9.9")
    validate("companion", companion)
    assert list(companion_problems(companion, SHOWN)) == []


def test_rows_netron_would_drop_are_problems() -> None:
    row = {"kind": "node", "target": "linear_1_1", "name": "observed µs", "value": 2.0}
    companion = {
        "signature": COMPANION_SIGNATURE,
        "metadata": [],
        "metrics": [row, {**row, "target": "nowhere"}, row, {**row, "name": "captured bytes", "value": math.nan}],
    }
    problems = list(companion_problems(companion, SHOWN))
    assert [(p.code, p.where) for p in problems] == [
        ("netron_attachment_invalid", "metrics[3]"),  # NaN is not JSON
        ("netron_attachment_invalid", "metrics[1]"),  # no such node
        ("netron_attachment_invalid", "metrics[2]"),  # a repeat: Netron keeps only the last
    ]
    assert "targets 'nowhere'" in problems[1].what and "duplicates metrics[0]" in problems[2].what


def test_the_companion_schema_refuses_a_row_without_a_value() -> None:
    with pytest.raises(SchemaViolation):
        validate(
            "companion",
            {
                "signature": COMPANION_SIGNATURE,
                "metadata": [],
                "metrics": [{"kind": "node", "target": "x", "name": "n"}],
            },
        )


# ------------------------------------------------------------------ stage 3c: the ONNX builder


def test_build_model_gives_a_model_the_full_checker_accepts() -> None:
    rows = [("torchlens.export_id", PLACEHOLDER), ("torchlens.granularity", "op")]
    companion = companion_bytes(
        build_companion(_two_node_projection(), artifact_name="tiny.onnx.json", producer_version="9.9")
    )
    built = build_model(
        _two_node_projection(), rows, producer_version="9.9", graph_doc="two nodes", companion=companion
    )
    model = onnx.ModelProto.FromString(built.proto)
    onnx.checker.check_model(model, full_check=True)
    assert check_onnx(built.proto) is None
    assert json_format.Parse(built.json, onnx.ModelProto()) == model  # the text is the checked proto
    assert (
        len(built.export_id) == 32
        and set(built.export_id) <= set("0123456789abcdef")
        and built.export_id != PLACEHOLDER
    )
    assert {p.key: p.value for p in model.metadata_props} == {
        "torchlens.export_id": built.export_id,
        "torchlens.granularity": "op",
    }
    assert built.companion is not None and json.loads(built.companion)["metadata"][0]["value"] == built.export_id
    assert (model.ir_version, model.producer_name, model.graph.doc_string) == (10, "tlnetron", "two nodes")
    assert {(o.domain, o.version) for o in model.opset_import} == {(LOSSY, 1), (MODULE, 1)}
    assert [(n.name, n.domain, list(n.input), list(n.output)) for n in model.graph.node] == [
        ("linear_1_1", LOSSY, ["input_1"], ["linear_1_1"]),
        ("relu_1_2", LOSSY, ["linear_1_1"], ["relu_1_2"]),
    ]
    (attribute,) = model.graph.node[0].attribute
    assert (attribute.name, attribute.type, attribute.s) == (
        "function",
        onnx.AttributeProto.STRING,
        b"torch.nn.functional.linear",
    )


def test_the_checker_refuses_a_node_reading_a_value_nothing_produces() -> None:
    projection = _two_node_projection()
    relu = projection.graph.nodes[1]
    broken = PNode(relu.name, relu.op_type, relu.domain, relu.role, ("nowhere",), relu.outputs)
    graph = PGraph(
        projection.graph.name,
        (projection.graph.nodes[0], broken),
        projection.graph.inputs,
        projection.graph.outputs,
        projection.graph.values,
    )
    built = build_model(
        Projection(granularity=Granularity.OP, graph=graph),
        [("torchlens.export_id", PLACEHOLDER)],
        producer_version="9.9",
        graph_doc="",
    )
    failure = check_onnx(built.proto)
    assert failure is not None and "nowhere" in failure


# ------------------------------------------------------------------ stage 4: the writer


def test_staged_files_put_every_file_in_place_together_or_none(tmp_path: Path) -> None:
    a, b = tmp_path / "m.onnx.json", tmp_path / "m.onnx.attachment.json"
    with staged_files([a, b]) as staged:
        staged.stage(a, b"artifact")
        staged.stage(b, b"companion")
        assert not a.exists() and not b.exists()  # nothing replaced before commit
        staged.commit()
    assert (a.read_bytes(), b.read_bytes()) == (b"artifact", b"companion")
    with pytest.raises(RuntimeError), staged_files([a, b]) as staged:
        staged.stage(a, b"new artifact")
        raise RuntimeError("a refusal after staging")
    assert (a.read_bytes(), b.read_bytes()) == (b"artifact", b"companion")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.onnx.attachment.json", "m.onnx.json"]  # no temporary left


# ------------------------------------------------------------------ the file itself


def test_these_unit_tests_run_without_torch() -> None:
    code = (
        "import sys; sys.path.insert(0, sys.argv[1]); import test_stages; "
        "bad = sorted(m for m in ('torch', 'torchlens') if m in sys.modules); print(bad); sys.exit(1 if bad else 0)"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, str(Path(__file__).parent)], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr

"""The semantic half of the oracle: what an artifact says must be what the trace says.

* typed edges: every value named after a traced op carries exactly the trace's type (a
  *loose* type, stating only what the trace agrees on, only on graph inputs / outputs), and
  the producer of an untyped edge says why;
* facts: companion metrics state the trace's facts (sums over known facts; an unknown or
  impossible fact -- None, NaN, infinite, negative -- is absent, never 0) and no worded
  fact says ``nan`` or ``inf``;
* views: the op, module and rolled views of one trace draw the same ops and agree on the
  hidden counts and the model totals.

Used by :mod:`oracle`; written from the trace and the reader contract, not from tlnetron.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from typing import Any

import onnx
from google.protobuf import json_format

from tlnetron._generated.vocab import CompanionRow, NodeAttr
from tlnetron.ir.trace import ROLE_BUFFER, ROLE_OP, ROLE_OUTPUT, Dim, TraceIR

__all__ = [
    "DOMAIN_LOSSY",
    "DOMAIN_MODULE",
    "bodies",
    "check_facts",
    "check_no_nonfinite_text",
    "check_types",
    "check_view_totals_agree",
    "check_views_agree",
    "expected_type",
    "known",
]

# The spec's domains, written here rather than imported: the oracle checks tlnetron's output with them.
DOMAIN_LOSSY = "ai.torchlens.lossy"
DOMAIN_MODULE = "ai.torchlens.module"

# torch dtype name -> ONNX element type name, written from the ONNX enum (IR version 10),
# independently of tlnetron's own table. Missing: no faithful ONNX element type.
_ONNX_ELEM = {
    "float32": "FLOAT",
    "float16": "FLOAT16",
    "bfloat16": "BFLOAT16",
    "float64": "DOUBLE",
    "int8": "INT8",
    "int16": "INT16",
    "int32": "INT32",
    "int64": "INT64",
    "uint8": "UINT8",
    "uint16": "UINT16",
    "uint32": "UINT32",
    "uint64": "UINT64",
    "bool": "BOOL",
    "complex64": "COMPLEX64",
    "complex128": "COMPLEX128",
    "float8_e4m3fn": "FLOAT8E4M3FN",
    "float8_e4m3fnuz": "FLOAT8E4M3FNUZ",
    "float8_e5m2": "FLOAT8E5M2",
    "float8_e5m2fnuz": "FLOAT8E5M2FNUZ",
    "uint4": "UINT4",
    "int4": "INT4",
}


def bodies(model: onnx.ModelProto) -> Iterator[tuple[str, Any]]:
    yield "graph", model.graph
    for f in model.functions:
        yield f"function {f.name!r} ({f.overload})", f


# --------------------------------------------------------------------------------------
# typed edges
# --------------------------------------------------------------------------------------

Expected = tuple[int, tuple[int, ...]] | None


def expected_type(shape: tuple[Dim, ...] | None, dtype: str | None) -> Expected:
    """The ONNX type a traced value must carry, or None when it has no faithful one."""
    if shape is None or dtype is None or dtype not in _ONNX_ELEM:
        return None
    dims: list[int] = []
    for d in shape:
        if isinstance(d, bool) or not isinstance(d, int) or d < 0:
            return None
        dims.append(d)
    return onnx.TensorProto.DataType.Value(_ONNX_ELEM[dtype]), tuple(dims)


Declared = tuple[int, tuple[int | None, ...]]


def _declared(v: onnx.ValueInfoProto) -> Declared | None:
    """(element type, dims with None for a dim without a value), or None when untyped."""
    if not v.HasField("type"):
        return None
    if v.type.HasField("sequence_type"):  # a structure: a sequence of the tensors it gathers
        tt = v.type.sequence_type.elem_type.tensor_type
        return tt.elem_type, tuple(d.dim_value if d.HasField("dim_value") else None for d in tt.shape.dim)
    tt = v.type.tensor_type
    assert tt.HasField("shape"), f"value {v.name!r}: a tensor type without a shape"
    return tt.elem_type, tuple(d.dim_value if d.HasField("dim_value") else None for d in tt.shape.dim)


def _honest_loose(name: str, got: Declared, seen: list[tuple[tuple[Dim, ...] | None, str | None]]) -> None:
    """A graph input/output with no faithful type may state only what every pass agrees on."""
    elem, dims = got
    dtypes = {d for _, d in seen}
    allowed = {onnx.TensorProto.UNDEFINED}
    if len(dtypes) == 1:
        (dtype,) = dtypes
        if dtype in _ONNX_ELEM:
            allowed.add(onnx.TensorProto.DataType.Value(_ONNX_ELEM[dtype]))
    assert elem in allowed, f"graph value {name!r}: element type {elem} but the trace saw {sorted(map(str, dtypes))}"
    shapes = [s for s, _ in seen]
    assert all(s is not None for s in shapes), f"graph value {name!r} states a shape the trace does not know"
    ranks = {len(s) for s in shapes if s is not None}
    assert ranks == {len(dims)}, f"graph value {name!r}: rank {len(dims)} but the trace saw ranks {ranks}"
    for i, d in enumerate(dims):
        if d is None:
            continue
        assert all(s is not None and s[i] == d for s in shapes), (
            f"graph value {name!r}: dim {i} = {d} but the trace saw {shapes}"
        )


def check_types(ir: TraceIR, model: onnx.ModelProto, opts: dict[str, Any]) -> None:
    """Every value named after a traced op carries exactly the type the trace states.

    Inside the graph (valueInfo, function bodies) only faithful types appear; graph inputs
    and outputs, which ONNX requires to be typed, may carry a *loose* type stating only what
    the trace agrees on (known dims, UNDEFINED element type).
    """
    granularity = opts["granularity"]
    seen: dict[str, list[tuple[tuple[Dim, ...] | None, str | None]]] = {}
    # Which views name values after ops, and which policy keeps every pass, are the spec's rules: named literally.
    if granularity in ("op", "module"):
        for op in ir.ops:
            if op.role != ROLE_OUTPUT:
                seen[op.name] = [(op.shape, op.dtype)]
    elif opts["show_buffers"] == "always":  # rolled: the kept passes are all passes
        for op in ir.ops:
            if op.role != ROLE_OUTPUT:
                seen.setdefault(op.layer, []).append((op.shape, op.dtype))
    else:
        return
    expect: dict[str, Expected] = {}
    for name, passes in seen.items():
        agree = len(set(passes)) == 1
        expect[name] = expected_type(*passes[0]) if agree else None
    for where, body in bodies(model):
        graph_io: dict[str, Declared | None] = {}
        inner: dict[str, Declared | None] = {}
        if isinstance(body, onnx.GraphProto):
            for v in (*body.input, *body.output):
                graph_io[v.name] = _declared(v)
            infos = list(body.value_info)
        else:
            infos = list(body.value_info)
        for v in infos:
            got = _declared(v)
            assert v.name not in inner or inner[v.name] == got, f"{where}: value {v.name!r} declared twice differently"
            inner[v.name] = got
        used: set[str] = set()
        for node in body.node:
            used.update(node.input)
            used.update(node.output)
            out = node.output[0] if len(node.output) == 1 else None
            if (
                out is not None
                and out in graph_io
                and out not in expect
                and node.name in expect
                and node.domain == DOMAIN_LOSSY
            ):
                # a model output drawn under its returned field's name: its op's tensor, typed as such
                graph_io[node.name] = graph_io.pop(out)
                out = node.name
            if node.domain == DOMAIN_LOSSY and out == node.name and out in expect:
                # the producer of an untyped edge says why, in the sidebar
                says = NodeAttr.UNTYPED_OUTPUT in {a.name for a in node.attribute}
                assert says == (expect[out] is None), (
                    f"{where} node {node.name!r}: untyped_output {'missing' if not says else 'on a typed value'}"
                )
        if not isinstance(body, onnx.GraphProto):
            used.update(body.input)
            used.update(body.output)
        for name in used | set(inner) | set(graph_io):
            if name not in expect:
                continue
            want = expect[name]
            if name in graph_io:
                got = graph_io[name]
                assert got is not None, f"{where}: graph value {name!r} has no type"
                if want is None:
                    _honest_loose(name, got, seen[name])
                else:
                    assert got == want, f"{where}: graph value {name!r} should be typed {want}, declared {got}"
                assert name not in inner or inner[name] == got, f"{where}: {name!r} declared differently in valueInfo"
                continue
            got = inner.get(name)
            if want is None:
                assert got is None, f"{where}: value {name!r} is typed {got} but the trace states no faithful type"
            else:
                assert got == want, f"{where}: value {name!r} should be typed {want}, declared {got}"


# --------------------------------------------------------------------------------------
# the companion's facts are the trace's facts
# --------------------------------------------------------------------------------------


def _close(got: Any, want: float | int) -> bool:
    """``got`` states ``want``: exactly for integers (past 2**53 as a digit string, so
    Netron's doubles do not round it), to a nanosecond for microsecond durations."""
    if isinstance(got, str):
        assert isinstance(want, int) and abs(want) > 2**53, f"{got!r} is text but {want!r} is a safe number"
        return got == str(want)
    if isinstance(want, int) and not isinstance(want, bool):
        return isinstance(got, int) and got == want
    return math.isclose(got, want, rel_tol=1e-9, abs_tol=1e-3)


def _attrs(node: onnx.NodeProto) -> dict[str, Any]:
    return {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}


def known(value: float | int | None) -> float | int | None:
    """A fact as it may be stated: None, NaN, infinite or negative means unknown (absent)."""
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value if value >= 0 else None


def _sum_known(values: list[float | int | None]) -> float | int | None:
    facts = [v for v in map(known, values) if v is not None]
    return sum(facts) if facts else None


def check_facts(ir: TraceIR, model: onnx.ModelProto, companion: dict[str, Any], opts: dict[str, Any]) -> None:
    """Node metrics state exactly the trace's facts; absent facts give no row (never 0).

    A fact the trace does not know, or knows to be impossible (NaN, infinite, negative), is
    absent; sums are over the known facts.

    Op view: every traced-op node's observed µs / FLOPs / captured bytes. Module view: each
    call's inclusive op count, FLOPs and µs over the compute ops drawn inside its body (nested
    calls included). Rolled view (nothing hidden): each layer's pass count and summed facts.
    Every view: the model's ``exported nodes`` counts the root graph and function bodies.
    """
    rows: dict[str, dict[str, Any]] = {}
    for row in companion["metrics"]:
        rows.setdefault(row["target"] if row["kind"] == "node" else "\0model", {})[row["name"]] = row["value"]
    n_nodes = len(model.graph.node) + sum(len(f.node) for f in model.functions)
    assert rows["\0model"][CompanionRow.EXPORTED_NODES] == n_nodes
    by_name = {op.name: op for op in ir.ops}
    granularity = opts["granularity"]

    def expect_rows(target: str, wanted: dict[str, float | int | None]) -> None:
        got = rows.get(target, {})
        for name, value in wanted.items():
            if value is None:
                assert name not in got, f"node {target!r}: a {name!r} row for an absent fact"
            else:
                assert name in got, f"node {target!r}: no {name!r} row (the trace says {value})"
                assert _close(got[name], value), f"node {target!r}: {name!r} is {got[name]}, the trace says {value}"

    # Each view's rows (and the policy keeping every pass) follow the spec's rules: named literally.
    if granularity == "op":
        for node in model.graph.node:
            op = by_name.get(node.name)
            if op is None or node.op_type in ("input", "output") or "\n" in node.name or "\r" in node.name:
                continue
            duration = known(op.duration_s)
            expect_rows(
                node.name,
                {
                    CompanionRow.OBSERVED_US: None if duration is None else duration * 1e6,
                    CompanionRow.ESTIMATED_FLOPS: known(op.flops),
                    CompanionRow.CAPTURED_BYTES: known(op.nbytes),
                },
            )
    elif granularity == "module":
        by_overload = {f.overload: f for f in model.functions}

        def compute_leaves(label: str) -> list[Any]:
            out: list[Any] = []
            for n in by_overload[label].node:
                if n.domain == DOMAIN_MODULE:
                    out.extend(compute_leaves(n.overload))
                elif n.op_type not in ("input", "output") and NodeAttr.BUFFER_ACCESS not in _attrs(n):
                    out.append(by_name[n.name])
            return out

        for _, body in bodies(model):
            for node in body.node:
                if node.domain != DOMAIN_MODULE or "\n" in node.name or "\r" in node.name:
                    continue
                leaves = compute_leaves(node.overload)
                duration = _sum_known([op.duration_s for op in leaves])
                expect_rows(
                    node.name,
                    {
                        CompanionRow.INCLUSIVE_OPS: len(leaves) or None,
                        CompanionRow.INCLUSIVE_FLOPS: _sum_known([op.flops for op in leaves]),
                        CompanionRow.INCLUSIVE_US: None if duration is None else duration * 1e6,
                    },
                )
    elif opts["show_buffers"] == "always":
        layers: dict[str, list[Any]] = {}
        for op in ir.ops:
            layers.setdefault(op.layer, []).append(op)
        for node in model.graph.node:
            passes = layers.get(node.name)
            if not passes or node.op_type in ("input", "output") or "\n" in node.name or "\r" in node.name:
                continue
            if len(passes) > 1:
                expect_rows(
                    node.name,
                    {
                        CompanionRow.PASSES: len(passes),
                        CompanionRow.ALL_PASS_FLOPS: _sum_known([op.flops for op in passes]),
                        CompanionRow.ALL_PASS_BYTES: _sum_known([op.nbytes for op in passes]),
                    },
                )
            else:
                expect_rows(
                    node.name,
                    {
                        CompanionRow.ESTIMATED_FLOPS: known(passes[0].flops),
                        CompanionRow.CAPTURED_BYTES: known(passes[0].nbytes),
                    },
                )


_NONFINITE_TEXT = re.compile(r"^-?(nan|inf)\b")


def check_no_nonfinite_text(model: onnx.ModelProto) -> None:
    """No worded fact (node or model metadata) states NaN or infinity: an unknown fact is absent."""
    for p in model.metadata_props:
        if p.key.endswith("_total"):
            assert not _NONFINITE_TEXT.match(p.value), f"model metadata {p.key}: {p.value!r}"
    for where, body in bodies(model):
        for n in body.node:
            for p in n.metadata_props:
                if p.key != "input_names":
                    assert not _NONFINITE_TEXT.match(p.value), f"{where} node {n.name!r}: {p.key} = {p.value!r}"


# --------------------------------------------------------------------------------------
# the three views of one trace agree
# --------------------------------------------------------------------------------------


def _leaves(model: onnx.ModelProto) -> list[str]:
    """Names of the traced-op nodes (not module calls, not input/output nodes) in every body."""
    out: list[str] = []
    for _, body in bodies(model):
        for n in body.node:
            if n.domain == DOMAIN_LOSSY and n.op_type not in ("input", "output"):
                out.append(n.name)
    return out


def _metadata(model: onnx.ModelProto) -> dict[str, str]:
    return {p.key: p.value for p in model.metadata_props}


def _models(outcomes: dict[str, Any]) -> dict[str, onnx.ModelProto] | None:
    """Parsed artifacts of every view, or None unless every view exported."""
    models = {
        g: json_format.Parse(o.result.artifact_json, onnx.ModelProto())
        for g, o in outcomes.items()
        if o.result is not None
    }
    return models if len(models) == len(outcomes) else None


def check_views_agree(ir: TraceIR, outcomes: dict[str, Any]) -> None:
    """Op, module and rolled exports (``Outcome``s by granularity) of one trace agree.

    * the module view draws exactly the op view's ops, each once, grouped into calls, but
      for side computations (ops none of whose results reach an output or a drawn buffer);
    * the rolled view draws one node per layer of those ops;
    * the buffer policy hid the same number of buffers and ops in every view.
    """
    models = _models(outcomes)
    if models is None:
        return
    layer_of = {op.name: op.layer for op in ir.ops}
    # What each of the three views must draw is the spec's rule per view: they are named literally.
    op_leaves = _leaves(models["op"])
    module_leaves = _leaves(models["module"])
    drawn = set(op_leaves)
    parents = {op.name: op.parents for op in ir.ops}
    # Reaching an output or any buffer, hidden or drawn, through any op.
    reach = [op.name for op in ir.ops if op.role in (ROLE_OUTPUT, ROLE_BUFFER)]
    live = set(reach)
    while reach:
        for parent in parents[reach.pop()]:
            if parent not in live:
                live.add(parent)
                reach.append(parent)
    side = {op.name for op in ir.ops if op.role == ROLE_OP and op.name in drawn and op.name not in live}
    expected = [n for n in op_leaves if n not in side]
    assert sorted(module_leaves) == sorted(expected), (
        f"the module view draws {sorted(set(module_leaves) ^ set(expected))} differently from the op view"
        if set(module_leaves) != set(expected)
        else "the module view draws an op more than once"
    )
    rolled = sorted(_leaves(models["rolled"]))
    assert rolled == sorted({layer_of[n] for n in op_leaves}), "the rolled view's layers are not the op view's"
    meta = {g: _metadata(m) for g, m in models.items()}
    for key in ("torchlens.hidden_buffer_count", "torchlens.hidden_op_count"):
        values = {g: meta[g].get(key) for g in meta}
        assert len(set(values.values())) == 1, f"{key} differs between views: {values}"


def check_view_totals_agree(outcomes: dict[str, Any]) -> None:
    """The model totals (estimated FLOPs, captured bytes) are the same in every view."""
    models = _models(outcomes)
    if models is None:
        return
    meta = {g: _metadata(m) for g, m in models.items()}
    for key in ("torchlens.estimated_flops_total", "torchlens.captured_bytes_total"):
        values = {g: meta[g].get(key) for g in meta}
        assert len(set(values.values())) == 1, f"{key} differs between views: {values}"

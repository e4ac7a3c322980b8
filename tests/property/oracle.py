"""The oracle of the property tests: what every export must satisfy, checked independently.

:func:`run_export` runs ``export_ir`` with warnings captured; :func:`check_outcome` asserts
the export either

(a) succeeded -- the artifact strict-parses into ``onnx.ModelProto``, equals what
    ``MessageToDict`` gives for it, passes ``onnx.checker.check_model(full_check=True)``,
    its model metadata and every tlnetron node's properties validate with **jsonschema**
    against the checked-in ``schema/*.json`` (not tlnetron's generated validators), every
    companion row resolves to something Netron shows, no (kind, target, name) repeats in a
    section, every number is finite, and ``tlnetron.validation`` finds no problem; or

(b) refused with a :class:`~tlnetron.TlnetronError` whose code is in the ``error_code``
    vocabulary, and wrote nothing.

Vocabularies come from ``schema/vocabularies.schema.json``; nothing here retypes them.
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import re
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import onnx
from google.protobuf import json_format
from jsonschema import Draft7Validator
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT7

from tlnetron import TlnetronError, TlnetronWarning, cli
from tlnetron._generated.vocab import CompanionRow, NodeAttr
from tlnetron.api import ExportResult, export_ir
from tlnetron.ir import ROLE_INPUT, ROLE_OUTPUT, Dim, TraceIR
from tlnetron.validation import artifact_problems, companion_problems, parse_artifact, shown_in_model

__all__ = [
    "COMPANION_KINDS",
    "ERROR_CODES",
    "Outcome",
    "SCHEMAS",
    "VALIDATORS",
    "WARNING_CODES",
    "check_no_nonfinite_text",
    "check_outcome",
    "companion_name",
    "check_success",
    "ir_literal",
    "files_of",
    "run_export",
    "run_public_export",
    "strict_json",
    "vocabulary",
]

ROOT = Path(__file__).resolve().parents[2]
SCHEMA_DIR = ROOT / "schema"
ARTIFACT_NAME = "model.onnx.json"
COMPANION_NAME = "model.onnx.attachment.json"


def companion_name(artifact_name: str) -> str:
    """``<stem>.attachment.json``: where the companion of ``artifact_name`` is written."""
    return f"{Path(artifact_name).stem}.attachment.json"

SCHEMAS: dict[str, dict[str, Any]] = {
    p.name.removesuffix(".schema.json"): json.loads(p.read_text(encoding="utf-8"))
    for p in sorted(SCHEMA_DIR.glob("*.schema.json"))
}
_REGISTRY: Registry = Registry().with_resources(
    (s["$id"], Resource.from_contents(s, default_specification=DRAFT7)) for s in SCHEMAS.values()
)
VALIDATORS = {
    name: Draft7Validator(SCHEMAS[name], registry=_REGISTRY)
    for name in ("model-metadata", "node-properties", "companion", "baseline-summary")
}


def vocabulary(name: str) -> tuple[str, ...]:
    """Members of a closed vocabulary in schema order (``enum``, or ``oneOf`` of ``const``s)."""
    definition = SCHEMAS["vocabularies"]["definitions"][name]
    if "enum" in definition:
        return tuple(definition["enum"])
    return tuple(b["const"] for b in definition["oneOf"])


def _vocabulary(name: str) -> frozenset[str]:
    return frozenset(vocabulary(name))


ERROR_CODES = _vocabulary("error_code")
WARNING_CODES = _vocabulary("warning_code")
COMPANION_KINDS = _vocabulary("companion_kind")
NODE_ROLES = _vocabulary("node_role")
_JSON_KEYS = frozenset(
    k for k, v in SCHEMAS["model-metadata"]["properties"].items() if v.get("x-tlnetron-encoding") == "json"
)
DOMAIN_MODULE = "ai.torchlens.module"
# File names Netron hands to another format's reader first (reader contract, section 1).
_SHADOWED = {"model.json", "manifest.json", "metadata.json", "serialized_exported_program.json"}
DOMAIN_LOSSY = "ai.torchlens.lossy"

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


def ir_literal(ir: TraceIR) -> str:
    """A Python literal of ``ir`` (``from tlnetron.ir import *``; write NaN / infinity as ``math.nan`` / ``math.inf``)."""
    return repr(ir)


def _reject_constant(token: str) -> Any:
    raise ValueError(f"{token} is not JSON")


def strict_json(text: str) -> Any:
    """``json.loads`` that refuses NaN / Infinity (they are not JSON)."""
    return json.loads(text, parse_constant=_reject_constant)


@dataclass
class Outcome:
    result: ExportResult | None
    error: TlnetronError | None
    warnings: list[warnings.WarningMessage]
    directory: Path
    options: dict[str, Any]
    name: str = ARTIFACT_NAME

    @property
    def artifact(self) -> Path:
        return self.directory / self.name

    @property
    def companion(self) -> Path:
        return self.directory / companion_name(self.name)


def run_export(ir: TraceIR, directory: Path, options: dict[str, Any]) -> Outcome:
    """``export_ir(ir, ...)`` into ``directory``; only :class:`TlnetronError` is caught."""
    return _run(export_ir, ir, directory, options)


def run_public_export(trace: Any, directory: Path, options: dict[str, Any]) -> Outcome:
    """``tlnetron.export(trace, ...)`` into ``directory``; only :class:`TlnetronError` is caught."""
    from tlnetron import export

    return _run(export, trace, directory, options)


def _run(fn: Any, subject: Any, directory: Path, options: dict[str, Any]) -> Outcome:
    """Run ``fn(subject, directory / name, **options)``; ``options["name"]`` is the file name."""
    directory.mkdir(parents=True, exist_ok=True)
    opts = {"depth": None, "attachment": None, **options}
    name = opts.pop("name", ARTIFACT_NAME)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            result = fn(subject, directory / name, **opts)
        except TlnetronError as exc:
            return Outcome(None, exc, list(caught), directory, opts, name)
    return Outcome(result, None, list(caught), directory, opts, name)


def files_of(directory: Path) -> dict[str, bytes]:
    """Every file in ``directory`` by name (for determinism checks)."""
    return _files(directory)


def _files(directory: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(directory.iterdir())}


def check_outcome(ir: TraceIR | None, outcome: Outcome) -> None:
    """Assert (a) a fully valid success or (b) a documented refusal that wrote nothing."""
    for w in outcome.warnings:
        assert issubclass(w.category, TlnetronWarning), f"unexpected warning {w.category.__name__}: {w.message}"
        assert isinstance(w.message, TlnetronWarning) and w.message.code in WARNING_CODES, str(w.message)
    if outcome.error is not None:
        exc = outcome.error
        assert exc.code in ERROR_CODES, f"undocumented error code {exc.code!r}"
        assert str(exc).startswith(f"[{exc.code}]")
        leftovers = _files(outcome.directory)
        assert not leftovers, f"a refusal ({exc.code}) wrote {sorted(leftovers)}"
        return
    assert outcome.result is not None
    check_success(ir, outcome)


def check_success(ir: TraceIR | None, outcome: Outcome) -> None:
    result = outcome.result
    assert result is not None
    opts = outcome.options
    files = _files(outcome.directory)
    expect_companion = opts["attachment"] is not False
    artifact_name, cname = outcome.name, companion_name(outcome.name)
    assert sorted(files) == sorted([artifact_name] + ([cname] if expect_companion else [])), sorted(files)
    text = files[artifact_name].decode("utf-8")
    assert text == result.artifact_json
    assert result.artifact == outcome.artifact

    # --- the artifact: strict JSON, camelCase keys only, strict protobuf parse ---------
    data = strict_json(text)
    for key in _keys(data):
        assert "_" not in key, f"snake_case key {key!r}: Netron's ProtoReader JSON path refuses it"
    for value in _values_of(data, "elemType"):
        assert isinstance(value, int), f"elemType {value!r} must be numeric for Netron"
    model = json_format.Parse(text, onnx.ModelProto())
    assert json_format.MessageToDict(model) == data, "the artifact is not MessageToDict of its own proto"
    onnx.checker.check_model(model, full_check=True)
    assert model.ir_version == 10
    for field_text in (model.producer_name, model.producer_version):
        assert field_text.isascii() and field_text.isprintable(), f"Netron fails on producer {field_text!r}"

    # --- model metadata, validated with jsonschema -------------------------------------
    keys = [p.key for p in model.metadata_props]
    assert len(keys) == len(set(keys)), f"repeated metadata keys {keys}"
    decoded = {p.key: (strict_json(p.value) if p.key in _JSON_KEYS else p.value) for p in model.metadata_props}
    errors = sorted(VALIDATORS["model-metadata"].iter_errors(decoded), key=lambda e: list(e.path))
    assert not errors, f"model metadata: {errors[0].message} at {list(errors[0].path)}"
    assert decoded["torchlens.granularity"] == opts["granularity"]
    assert decoded["torchlens.show_buffers"] == opts["show_buffers"]
    assert decoded["torchlens.node_count"] == len(model.graph.node) == result.node_count
    assert decoded["torchlens.function_count"] == len(model.functions) == result.function_count
    assert set(result.warnings) <= WARNING_CODES
    emitted = {w.message.code for w in outcome.warnings if isinstance(w.message, TlnetronWarning)}
    assert emitted <= set(result.warnings)
    shadowed = artifact_name.lower() in _SHADOWED or artifact_name.lower().endswith(".metadata.json")
    assert ("netron_filename_shadowed" in emitted) == shadowed, f"{artifact_name!r}: {sorted(emitted)}"
    assert decoded.get("torchlens.warnings", []) == sorted(set(result.warnings))
    if ir is not None:
        assert decoded["torchlens.capture_outcome"] == ir.honesty.capture_status
        assert ("capture_incomplete" in emitted) == (ir.honesty.capture_status != "complete")
    if opts["granularity"] == "module" and opts.get("depth") is not None:
        assert decoded["torchlens.depth"] == opts["depth"]

    check_no_nonfinite_text(model)

    # --- every tlnetron node's properties, validated with jsonschema -------------------
    shown_nodes: set[str] = set()
    for where, body in _bodies(model):
        for node in body.node:
            shown_nodes.add(node.name.split("\n", 1)[0])
            if node.domain not in (DOMAIN_LOSSY, DOMAIN_MODULE):
                continue
            _check_node(where, node)

    # --- edge types agree with the trace -----------------------------------------------
    if ir is not None:
        _check_types(ir, model, opts)

    # --- tlnetron's own validation agrees ----------------------------------------------
    parsed, problems = parse_artifact(text)
    assert parsed is not None and not problems, [p.line() for p in problems]
    problems = list(artifact_problems(parsed))
    assert not problems, [p.line() for p in problems]

    # --- the companion -----------------------------------------------------------------
    if not expect_companion:
        assert result.companion is None and result.companion_json is None
        return
    assert result.companion == outcome.companion
    ctext = files[cname].decode("utf-8")
    assert ctext == result.companion_json
    companion = strict_json(ctext)
    errors = list(VALIDATORS["companion"].iter_errors(companion))
    assert not errors, f"companion: {errors[0].message} at {list(errors[0].path)}"
    assert companion["signature"] == "netron:attachment"
    assert {"kind": "model", "target": "", "name": CompanionRow.COMPANION_OF, "value": artifact_name} in companion["metadata"]
    functions = {f.name for f in model.functions}
    for section in ("metadata", "metrics"):
        seen: set[tuple[str, str, str]] = set()
        for i, row in enumerate(companion[section]):
            kind, target, name = row["kind"], row["target"], row["name"]
            assert kind in COMPANION_KINDS
            if kind == "model":
                assert target == "", f"{section}[{i}]: a model row must target ''"
            elif kind == "node":
                assert target in shown_nodes, f"{section}[{i}] targets {target!r}: no node has that name"
            elif kind == "graph":
                assert target in functions | {""}, f"{section}[{i}] targets {target!r}"
            else:
                raise AssertionError(f"{section}[{i}]: tlnetron writes no {kind} rows")
            row_key = (kind, target, name)
            assert row_key not in seen, f"{section}[{i}] repeats {row_key}"
            seen.add(row_key)
            _assert_finite(row["value"], f"{section}[{i}]")
    problems = list(companion_problems(companion, shown_in_model(parsed)))
    assert not problems, [p.line() for p in problems]
    if ir is not None:
        _check_facts(ir, model, companion, opts)

    # --- the command line agrees -----------------------------------------------------------
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        code = cli.main(["validate", str(outcome.artifact), "--attachment", str(outcome.companion)])
    assert code == cli.EXIT_OK, out.getvalue()


def _keys(data: Any) -> Iterator[str]:
    if isinstance(data, dict):
        for k, v in data.items():
            yield k
            yield from _keys(v)
    elif isinstance(data, list):
        for v in data:
            yield from _keys(v)


def _values_of(data: Any, key: str) -> Iterator[Any]:
    if isinstance(data, dict):
        for k, v in data.items():
            if k == key:
                yield v
            yield from _values_of(v, key)
    elif isinstance(data, list):
        for v in data:
            yield from _values_of(v, key)


def _assert_finite(value: Any, where: str) -> None:
    if isinstance(value, float):
        assert math.isfinite(value), f"{where}: {value!r} is not finite"
    elif isinstance(value, list):
        for v in value:
            _assert_finite(v, where)
    else:
        assert isinstance(value, (str, int, bool)), f"{where}: {value!r} is not a value Netron renders"


def _bodies(model: onnx.ModelProto) -> Iterator[tuple[str, Any]]:
    yield "graph", model.graph
    for f in model.functions:
        yield f"function {f.name!r} ({f.overload})", f


def _check_node(where: str, node: onnx.NodeProto) -> None:
    names = [a.name for a in node.attribute]
    assert len(names) == len(set(names)), f"{where} node {node.name!r}: repeated attributes {names}"
    attrs: dict[str, Any] = {}
    for a in node.attribute:
        assert a.type != onnx.AttributeProto.UNDEFINED, "Netron renders an attribute without type as FLOAT 0"
        value = onnx.helper.get_attribute_value(a)
        attrs[a.name] = value.decode("utf-8") if isinstance(value, bytes) else value
    meta_keys = [p.key for p in node.metadata_props]
    assert len(meta_keys) == len(set(meta_keys)), f"{where} node {node.name!r}: repeated metadata {meta_keys}"
    meta = {p.key: p.value for p in node.metadata_props}
    role = "module_call" if node.domain == DOMAIN_MODULE else "op"
    errors = list(VALIDATORS["node-properties"].iter_errors({"role": role, "attributes": attrs, "metadata": meta}))
    assert not errors, f"{where} node {node.name!r}: {errors[0].message} at {list(errors[0].path)}"


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
        assert all(s is not None and s[i] == d for s in shapes), f"graph value {name!r}: dim {i} = {d} but the trace saw {shapes}"


def _check_types(ir: TraceIR, model: onnx.ModelProto, opts: dict[str, Any]) -> None:
    """Every value named after a traced op carries exactly the type the trace states.

    Inside the graph (valueInfo, function bodies) only faithful types appear; graph inputs
    and outputs, which ONNX requires to be typed, may carry a *loose* type stating only what
    the trace agrees on (known dims, UNDEFINED element type).
    """
    granularity = opts["granularity"]
    seen: dict[str, list[tuple[tuple[Dim, ...] | None, str | None]]] = {}
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
    for where, body in _bodies(model):
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


def _check_facts(ir: TraceIR, model: onnx.ModelProto, companion: dict[str, Any], opts: dict[str, Any]) -> None:
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
        bodies = {f.overload: f for f in model.functions}

        def compute_leaves(label: str) -> list[Any]:
            out: list[Any] = []
            for n in bodies[label].node:
                if n.domain == DOMAIN_MODULE:
                    out.extend(compute_leaves(n.overload))
                elif n.op_type not in ("input", "output") and NodeAttr.BUFFER_ACCESS not in _attrs(n):
                    out.append(by_name[n.name])
            return out

        for _, body in _bodies(model):
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
                expect_rows(node.name, {CompanionRow.ESTIMATED_FLOPS: known(passes[0].flops), CompanionRow.CAPTURED_BYTES: known(passes[0].nbytes)})


_NONFINITE_TEXT = re.compile(r"^-?(nan|inf)\b")


def check_no_nonfinite_text(model: onnx.ModelProto) -> None:
    """No worded fact (node or model metadata) states NaN or infinity: an unknown fact is absent."""
    for p in model.metadata_props:
        if p.key.endswith("_total"):
            assert not _NONFINITE_TEXT.match(p.value), f"model metadata {p.key}: {p.value!r}"
    for where, body in _bodies(model):
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
    for _, body in _bodies(model):
        for n in body.node:
            if n.domain == DOMAIN_LOSSY and n.op_type not in ("input", "output"):
                out.append(n.name)
    return out


def _metadata(model: onnx.ModelProto) -> dict[str, str]:
    return {p.key: p.value for p in model.metadata_props}


def _models(outcomes: dict[str, Outcome]) -> dict[str, onnx.ModelProto] | None:
    models = {
        g: json_format.Parse(o.result.artifact_json, onnx.ModelProto())
        for g, o in outcomes.items()
        if o.result is not None
    }
    return models if set(models) == set(vocabulary("granularity")) else None


def check_views_agree(ir: TraceIR, outcomes: dict[str, Outcome]) -> None:
    """Op, module and rolled exports of one trace (same buffer policy) show the same ops.

    * the module view draws exactly the op view's ops, each once, grouped into calls;
    * the rolled view draws one node per layer of those ops;
    * the buffer policy hid the same number of buffers and ops in every view.
    """
    models = _models(outcomes)
    if models is None:
        return
    layer_of = {op.name: op.layer for op in ir.ops}
    op_leaves = _leaves(models["op"])
    module_leaves = _leaves(models["module"])
    assert sorted(module_leaves) == sorted(op_leaves), (
        f"the module view draws {sorted(set(module_leaves) ^ set(op_leaves))} differently from the op view"
        if set(module_leaves) != set(op_leaves)
        else "the module view draws an op more than once"
    )
    rolled = sorted(_leaves(models["rolled"]))
    assert rolled == sorted({layer_of[n] for n in op_leaves}), "the rolled view's layers are not the op view's"
    meta = {g: _metadata(m) for g, m in models.items()}
    for key in ("torchlens.hidden_buffer_count", "torchlens.hidden_op_count"):
        values = {g: meta[g].get(key) for g in meta}
        assert len(set(values.values())) == 1, f"{key} differs between views: {values}"


def check_view_totals_agree(outcomes: dict[str, Outcome]) -> None:
    """The model totals (estimated FLOPs, captured bytes) are the same in every view."""
    models = _models(outcomes)
    if models is None:
        return
    meta = {g: _metadata(m) for g, m in models.items()}
    for key in ("torchlens.estimated_flops_total", "torchlens.captured_bytes_total"):
        values = {g: meta[g].get(key) for g in meta}
        assert len(set(values.values())) == 1, f"{key} differs between views: {values}"

"""Every zoo model x granularity x buffer policy, exported and checked against the contract.

One module-scoped cache exports each (model, granularity, show_buffers) combination once
(to a temporary folder) and every test reads the cached ``ExportResult`` text. The checks
are independent of tlnetron's own validators: the artifact is strict-parsed by protobuf,
checked by ``onnx.checker``, its metadata and node properties are validated with
``jsonschema`` against the checked-in ``schema/`` files, and counts, function I/O, hidden
buffers and dataflow are recomputed from the TorchLens trace itself.
"""

from __future__ import annotations

import base64
import json
import re
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import onnx
import pytest
import torchlens
from google.protobuf import json_format
from jsonschema import Draft7Validator
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT7
from zoo import ALL_ZOO, ZooTrace

import tlnetron
from tlnetron import TlnetronWarning
from tlnetron._generated.vocab import (
    BUFFER_POLICY,
    COMPANION_SIGNATURE,
    GRANULARITY,
    BufferPolicy,
    Domain,
    Granularity,
    NodeRole,
)
from tlnetron.build.metadata import decode_metadata
from tlnetron.check.pairs import shown_in_model
from tlnetron.check.validation import artifact_problems, companion_problems
from tlnetron.words.model import DESCRIPTION_WIDTH, unwrapped

ROOT = Path(__file__).resolve().parent.parent
SCHEMA_DIR = ROOT / "schema"

COMBOS = [(n, g, b) for n in ALL_ZOO for g in GRANULARITY for b in BUFFER_POLICY]
COMBO_IDS = [f"{n}-{g}-{b}" for n, g, b in COMBOS]

BOOKKEEPING = ("running_mean", "running_var", "num_batches_tracked")
LEGIBILITY_CODE = "legibility_budget_exceeded"

# ------------------------------------------------------------------ schemas (jsonschema)

_SCHEMAS: dict[str, dict[str, Any]] = {
    p.name.removesuffix(".schema.json"): json.loads(p.read_text(encoding="utf-8"))
    for p in sorted(SCHEMA_DIR.glob("*.json"))
}
_REGISTRY: Registry = Registry().with_resources(
    (s["$id"], Resource.from_contents(s, default_specification=DRAFT7)) for s in _SCHEMAS.values()
)


def _validator(name: str) -> Draft7Validator:
    schema = _SCHEMAS[name]
    Draft7Validator.check_schema(schema)
    return Draft7Validator(schema, registry=_REGISTRY)


MODEL_METADATA = _validator("model-metadata")
NODE_PROPERTIES = _validator("node-properties")
COMPANION = _validator("companion")
ATTRIBUTE_TYPES: dict[str, str] = {
    name: spec["x-onnx-type"]
    for name, spec in _SCHEMAS["node-properties"]["properties"]["attributes"]["properties"].items()
}


def _errors(validator: Draft7Validator, instance: Any) -> list[str]:
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(instance)]


# ------------------------------------------------------------------ the trace, independently


@dataclass(frozen=True)
class TOp:
    """One trace op as the tests see it (names computed here, not by tlnetron)."""

    name: str
    label: str
    layer: str
    role: str
    parents: tuple[str, ...]
    children: tuple[str, ...]
    calls: tuple[str, ...]
    address: str


_TABLES: dict[int, list[TOp]] = {}


def trace_table(log: torchlens.Trace) -> list[TOp]:
    """Ops in execution order; a node name is the layer label for a single-pass layer,
    the pass-qualified label otherwise (the spec's ``log[name]`` convention)."""
    key = id(log)
    if key in _TABLES:
        return _TABLES[key]
    ops = list(log.ops)
    per_layer: dict[str, int] = {}
    for op in ops:
        per_layer[op.layer_label] = per_layer.get(op.layer_label, 0) + 1

    def name_of(op: Any) -> str:
        return op.layer_label if per_layer[op.layer_label] == 1 else op.label

    # References are labels: looked up among the labels first, since ``log.ops[key]`` also
    # matches capture-time labels (``raw_label``), which can name a different op.
    by_label: dict[str, Any] = {}
    for op in ops:
        by_label[op.label] = op
        if per_layer[op.layer_label] == 1:
            by_label[op.layer_label] = op

    def ref(r: Any) -> str:
        found = by_label.get(str(r))
        return name_of(found if found is not None else log.ops[str(r)])

    table: list[TOp] = []
    for op in ops:
        role = "input" if op.is_input else "output" if op.is_output else "buffer" if op.is_buffer else "op"
        table.append(
            TOp(
                name=name_of(op),
                label=op.label,
                layer=op.layer_label,
                role=role,
                parents=tuple(ref(p) for p in op.parents),
                children=tuple(ref(c) for c in op.children),
                calls=tuple(str(c) for c in (op.module_call_stack or ())),
                address=str(op.address or ""),
            )
        )
    _TABLES[key] = table
    return table


def hidden_by_policy(table: list[TOp], policy: str) -> tuple[set[str], set[str]]:
    """(hidden buffers, hidden compute ops) under the rule in ``tlnetron.read.buffers``' docstring:
    ``never`` drops every buffer, ``meaningful`` BatchNorm bookkeeping buffers, ``always``
    nothing; a compute op whose every neighbour is hidden is hidden too."""
    if policy == BufferPolicy.ALWAYS:
        return set(), set()
    buffers = {
        t.name
        for t in table
        if t.role == "buffer" and (policy == BufferPolicy.NEVER or t.address.rsplit(".", 1)[-1] in BOOKKEEPING)
    }
    ops: set[str] = set()
    changed = True
    while changed:
        changed = False
        for t in table:
            if t.role != "op" or t.name in ops:
                continue
            around = t.parents + t.children
            if around and all(n in buffers or n in ops for n in around):
                ops.add(t.name)
                changed = True
    return buffers, ops


def side_ops(table: list[TOp], policy: str) -> set[str]:
    """Compute ops none of whose results reach a model output or a buffer (hidden or drawn):
    the module view does not draw them (attention-mask checks)."""
    gone = set().union(*hidden_by_policy(table, policy))
    reach = {t.name for t in table if t.role in ("output", "buffer")}
    by_name = {t.name: t for t in table}
    stack = list(reach)
    while stack:
        for parent in by_name[stack.pop()].parents:
            if parent not in reach:
                reach.add(parent)
                stack.append(parent)
    return {t.name for t in table if t.role == "op" and t.name not in reach and t.name not in gone}


# ------------------------------------------------------------------ the artifact, read back


def _attr_value(attr: dict[str, Any]) -> Any:
    kind = attr["type"]
    if kind == "STRING":
        return base64.b64decode(attr["s"], validate=True).decode("utf-8")
    if kind == "INT":
        return int(attr["i"])
    raise AssertionError(f"attribute {attr['name']!r} has unexpected type {kind}")


def attrs_of(node: dict[str, Any]) -> dict[str, Any]:
    return {a["name"]: _attr_value(a) for a in node.get("attribute", [])}


def meta_of(node: dict[str, Any]) -> dict[str, str]:
    rows = node.get("metadataProps", [])
    out = {p["key"]: p["value"] for p in rows}
    assert len(out) == len(rows), f"node {node['name']!r} repeats a metadata key"
    return out


def _is_typed(info: dict[str, Any]) -> bool:
    kind = info.get("type", {})
    if "sequenceType" in kind:  # a structure: typed as a sequence of its tensors
        return "tensorType" in kind["sequenceType"].get("elemType", {})
    tensor = kind.get("tensorType")
    return bool(tensor) and tensor.get("elemType", 0) != 0 and "shape" in tensor


@dataclass
class Body:
    """The top graph or one function body: its nodes and what types its edges carry."""

    label: str
    nodes: list[dict[str, Any]]
    inputs: list[str]
    outputs: list[str]
    typed: set[str]


def bodies(data: dict[str, Any]) -> list[Body]:
    g = data["graph"]
    out = [
        Body(
            "graph",
            g.get("node", []),
            [v["name"] for v in g.get("input", [])],
            [v["name"] for v in g.get("output", [])],
            {v["name"] for v in (*g.get("input", []), *g.get("output", []), *g.get("valueInfo", [])) if _is_typed(v)},
        )
    ]
    for f in data.get("functions", []):
        out.append(
            Body(
                f"function {f['name']}:{f.get('overload', '')}",
                f.get("node", []),
                list(f.get("input", [])),
                list(f.get("output", [])),
                {v["name"] for v in f.get("valueInfo", []) if _is_typed(v)},
            )
        )
    return out


def all_nodes(data: dict[str, Any]) -> Iterator[dict[str, Any]]:
    for b in bodies(data):
        yield from b.nodes


def op_nodes(data: dict[str, Any]) -> Iterator[dict[str, Any]]:
    for n in all_nodes(data):
        if n["domain"] == Domain.LOSSY and n["opType"] not in ("output", "buffer"):
            yield n


def camel_keys(obj: Any, where: str = "") -> Iterator[str]:
    """Every JSON object key that is not lowerCamelCase (proto field names only)."""
    if isinstance(obj, dict):
        for k, v in obj.items():
            if not re.fullmatch(r"[a-z][A-Za-z0-9]*", k):
                yield f"{where}/{k}"
            yield from camel_keys(v, f"{where}/{k}")
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from camel_keys(v, f"{where}[{i}]")


@dataclass
class Flat:
    """A body with every function call inlined: op-level nodes, who produces each value,
    and what each structure value gathers."""

    nodes: list[tuple[str, list[str], list[str]]]
    producer: dict[str, str]
    bundles: dict[str, list[str]]

    def leaves(self, value: str) -> list[str]:
        """The ops producing the tensors a value stands for (a structure: all it gathers)."""
        if value in self.bundles:
            return [leaf for inner in self.bundles[value] for leaf in self.leaves(inner)]
        return [self.producer.get(value, value)]


def flatten(data: dict[str, Any], nodes: list[dict[str, Any]], inputs: list[str]) -> Flat:
    """Inline every call in ``nodes``: formal parameters are substituted by the caller's
    actual values; values internal to a body are scoped by the call node's name; a structure
    node stands for the tensors it gathers."""
    funcs = {(f["domain"], f["name"], f.get("overload", "")): f for f in data.get("functions", [])}
    flat: list[tuple[str, list[str], list[str]]] = []
    bundles: dict[str, list[str]] = {}

    def expand(nodes: list[dict[str, Any]], resolve: Callable[[str], str], depth: int) -> None:
        assert depth < 64, "function nesting does not terminate"
        for n in nodes:
            ins = [resolve(v) for v in n.get("input", [])]
            outs = [resolve(v) for v in n.get("output", [])]
            if n["domain"] == Domain.STRUCTURE:
                (out,) = outs
                bundles[out] = ins
            elif n["domain"] in (Domain.MODULE, Domain.RUN):
                f = funcs[(n["domain"], n["opType"], n.get("overload", ""))]
                formal = dict(zip(f.get("input", []), ins))
                formal.update(zip(f.get("output", []), outs))
                scope = n["name"]
                expand(f.get("node", []), lambda v, m=formal, s=scope: m.get(v, f"{s}/{v}"), depth + 1)
            else:
                flat.append((n["name"], ins, outs))

    expand(nodes, lambda v: v, 0)
    producer = {v: f"<input {v}>" for v in inputs}
    for name, _, outs in flat:
        for o in outs:
            assert o not in producer or producer[o].startswith("<input"), f"value {o!r} produced twice"
            producer[o] = name
    return Flat(flat, producer, bundles)


def flat_dataflow(data: dict[str, Any]) -> tuple[set[tuple[str, str]], list[tuple[str, tuple[str, ...]]]]:
    """(producer, consumer) pairs over op-level nodes with every function inlined, and each
    graph output with the ops producing its tensors."""
    graph = data["graph"]
    flat = flatten(data, graph.get("node", []), [v["name"] for v in graph.get("input", [])])
    pairs = set()
    for name, ins, _ in flat.nodes:
        for v in ins:
            assert v not in flat.bundles, f"{name!r} consumes the structure {v!r}: only graph outputs may"
            assert v in flat.producer, f"{name!r} consumes {v!r}, which nothing produces after inlining"
            pairs.add((flat.producer[v], name))
    outputs = [(v["name"], tuple(sorted(flat.leaves(v["name"])))) for v in graph.get("output", [])]
    return pairs, outputs


# ------------------------------------------------------------------ the cached exports


@dataclass
class Exported:
    name: str
    granularity: str
    policy: str
    result: tlnetron.ExportResult
    data: dict[str, Any]
    model: onnx.ModelProto
    companion: dict[str, Any]
    meta: dict[str, Any]
    log: torchlens.Trace


ExportFn = Callable[[str, str, str], Exported]


def _export(log: torchlens.Trace, path: Path, granularity: str, policy: str) -> tlnetron.ExportResult:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TlnetronWarning)
        return tlnetron.export(log, path, granularity=granularity, show_buffers=policy)


@pytest.fixture(scope="module")
def exported(zoo_trace: ZooTrace, tmp_path_factory: pytest.TempPathFactory) -> ExportFn:
    base = tmp_path_factory.mktemp("zoo_exports")
    cache: dict[tuple[str, str, str], Exported] = {}

    def get(name: str, granularity: str, policy: str) -> Exported:
        key = (name, granularity, policy)
        if key not in cache:
            log = zoo_trace(name)
            path = base / f"{name}.{granularity}.{policy}.onnx.json"
            result = _export(log, path, granularity, policy)
            assert result.artifact == path
            assert path.read_text(encoding="utf-8") == result.artifact_json
            assert result.companion is not None and result.companion_json is not None
            assert result.companion.read_text(encoding="utf-8") == result.companion_json
            model = onnx.ModelProto()
            json_format.Parse(result.artifact_json, model)  # strict: no ignore_unknown_fields
            data = json.loads(result.artifact_json)
            decoded, problems = decode_metadata([(p.key, p.value) for p in model.metadata_props])
            assert problems == []
            cache[key] = Exported(
                name, granularity, policy, result, data, model, json.loads(result.companion_json), decoded, log
            )
        return cache[key]

    return get


combos = pytest.mark.parametrize(("name", "granularity", "policy"), COMBOS, ids=COMBO_IDS)


# ------------------------------------------------------------------ the artifact contract


@combos
def test_artifact_parses_and_checks(exported: ExportFn, name: str, granularity: str, policy: str) -> None:
    e = exported(name, granularity, policy)
    onnx.checker.check_model(e.model, full_check=True)
    # Netron's ProtoReader JSON rule: camelCase keys only, irVersion "10".
    for snake in ("ir_version", "producer_name", "opset_import", "metadata_props"):
        assert snake not in e.data
    assert e.data["irVersion"] == "10"
    assert isinstance(e.data["opsetImport"], list) and isinstance(e.data["metadataProps"], list)
    assert list(camel_keys(e.data)) == []
    assert e.data["producerName"] == "tlnetron"
    assert e.model.ir_version == 10
    # tlnetron's own validator (what `tlnetron validate` runs) agrees.
    assert [p.line() for p in artifact_problems(e.model)] == []
    assert [p.line() for p in companion_problems(e.companion, shown_in_model(e.model))] == []


@combos
def test_metadata_and_node_properties_match_schemas(
    exported: ExportFn, name: str, granularity: str, policy: str
) -> None:
    e = exported(name, granularity, policy)
    assert _errors(MODEL_METADATA, e.meta) == []
    problems: list[str] = []
    for body in bodies(e.data):
        for node in body.nodes:
            for a in node.get("attribute", []):
                assert a["type"] == ATTRIBUTE_TYPES.get(a["name"]), f"{node['name']}: attribute {a['name']}"
            role = NodeRole.MODULE_CALL if node["domain"] == Domain.MODULE else NodeRole.OP
            props = {"role": role, "attributes": attrs_of(node), "metadata": meta_of(node)}
            problems += [f"{body.label} node {node['name']!r}: {p}" for p in _errors(NODE_PROPERTIES, props)]
    assert problems == []


@combos
def test_companion_validates_and_every_row_resolves(
    exported: ExportFn, name: str, granularity: str, policy: str
) -> None:
    e = exported(name, granularity, policy)
    assert _errors(COMPANION, e.companion) == []
    assert e.companion["signature"] == COMPANION_SIGNATURE
    node_names = {n["name"].split("\n", 1)[0] for n in all_nodes(e.data)}
    graph_inputs = {v["name"] for v in e.data["graph"].get("input", [])}
    functions = {f["name"] for f in e.data.get("functions", [])}
    # Values Netron draws, read from the written artifact: node outputs, and the inputs and
    # outputs of the graph and of every function body.
    values = {o for n in all_nodes(e.data) for o in n.get("output", [])}
    values |= graph_inputs | {v["name"] for v in e.data["graph"].get("output", [])}
    values |= {v for f in e.data.get("functions", []) for v in (*f.get("input", []), *f.get("output", []))}
    unmatched: list[dict[str, Any]] = []
    rows = [*e.companion["metadata"], *e.companion["metrics"]]
    assert rows
    for row in rows:
        kind, target = row["kind"], row["target"]
        if kind == "node":
            ok = target in node_names
            # The reference exporter's bug: graph inputs are not nodes; Netron never shows them.
            assert target not in graph_inputs or target in node_names, row
        elif kind == "value":
            ok = target in values
        elif kind == "model":
            ok = target == ""
        elif kind == "graph":
            ok = target == "" or target in functions
        else:
            ok = False
        if not ok:
            unmatched.append(row)
    assert unmatched == []
    seen = set()
    for section in ("metadata", "metrics"):
        for row in e.companion[section]:
            key = (section, row["kind"], row["target"], row["name"])
            assert key not in seen, f"duplicate row {key}"
            seen.add(key)


@combos
def test_every_consumed_value_is_typed_or_explained(
    exported: ExportFn, name: str, granularity: str, policy: str
) -> None:
    e = exported(name, granularity, policy)
    producers: dict[str, dict[str, Any]] = {}
    for n in all_nodes(e.data):
        if n["domain"] == Domain.LOSSY:
            for o in n.get("output", []):
                producers[o] = n
    typed_anywhere: set[str] = set()
    for body in bodies(e.data):
        typed_anywhere |= body.typed
        for node in body.nodes:
            for v in node.get("input", []):
                if v in body.typed:
                    continue
                producer = producers.get(v)
                assert producer is not None, (
                    f"{body.label}: untyped {v!r} (consumed by {node['name']!r}) has no producing op"
                )
                reason = attrs_of(producer).get("untyped_output", "")
                assert reason, (
                    f"{body.label}: {v!r} consumed by {node['name']!r} is untyped and {producer['name']!r} says nothing"
                )
        for v in body.outputs:
            if v not in body.typed:
                assert v in producers and attrs_of(producers[v]).get("untyped_output"), (
                    f"{body.label}: output {v!r} untyped"
                )
    # The converse: a producer that says its output is untyped does not type it anywhere.
    for v, node in producers.items():
        if attrs_of(node).get("untyped_output"):
            assert v not in typed_anywhere, f"{node['name']!r} says untyped but {v!r} is typed"

    # Typed edges of the root graph, counted the way Netron draws them: one edge per
    # producer -> consumer pair (labelled by the first value), plus graph outputs.
    graph = bodies(e.data)[0]
    producer_of = {v: v for v in graph.inputs}
    for n in graph.nodes:
        for o in n.get("output", []):
            producer_of[o] = n["name"]
    pairs: set[tuple[str, str]] = set()
    typed_edges = 0
    for n in graph.nodes:
        for v in n.get("input", []):
            pair = (producer_of.get(v, v), n["name"])
            if pair not in pairs:
                pairs.add(pair)
                typed_edges += v in graph.typed
    typed_edges += sum(1 for v in graph.outputs if v in graph.typed)
    assert e.result.typed_edge_count == typed_edges
    assert e.result.edge_count == len(pairs) + len(graph.outputs) == e.meta["torchlens.edge_count"]
    assert 0 < typed_edges <= e.result.edge_count


@combos
def test_metadata_counts_are_true(exported: ExportFn, name: str, granularity: str, policy: str) -> None:
    e = exported(name, granularity, policy)
    m = e.meta
    assert m["torchlens.granularity"] == granularity
    assert m["torchlens.show_buffers"] == policy
    assert m["torchlens.node_count"] == len(e.data["graph"].get("node", [])) == e.result.node_count
    assert m["torchlens.function_count"] == len(e.data.get("functions", [])) == e.result.function_count
    assert ("torchlens.depth" in m) is (granularity == Granularity.MODULE)
    if granularity == Granularity.MODULE:
        assert isinstance(m["torchlens.depth"], int) and m["torchlens.depth"] >= 1
    else:
        assert e.data.get("functions", []) == []
    table = trace_table(e.log)
    hidden_buffers, hidden_ops = hidden_by_policy(table, policy)
    assert m["torchlens.hidden_buffer_count"] == len(hidden_buffers)
    assert m["torchlens.hidden_op_count"] == len(hidden_ops)
    if policy == BufferPolicy.ALWAYS:
        assert m["torchlens.hidden_buffer_count"] == m["torchlens.hidden_op_count"] == 0
    assert m["torchlens.trace_op_count"] == e.log.num_ops
    # Nothing hidden is drawn, everything else is (somewhere, at some nesting level).
    drawn = {n["name"] for n in all_nodes(e.data) if n["domain"] == Domain.LOSSY}
    gone = hidden_buffers | hidden_ops
    if granularity == Granularity.MODULE:
        gone |= side_ops(table, policy)
    if granularity != Granularity.ROLLED:
        assert drawn.isdisjoint(gone)
        kept = {t.name for t in table if t.role in ("op", "buffer") and t.name not in gone}
        assert kept <= drawn
    # Untyped values, counted per body (inputs, node outputs and outputs without a type).
    omitted = 0
    for body in bodies(e.data):
        names = set(body.inputs) | set(body.outputs) | {o for n in body.nodes for o in n.get("output", [])}
        omitted += len(names - body.typed)
    assert m["torchlens.omitted_value_count"] == omitted
    # The root graph's longest path, counted in boxes (inputs and outputs included).
    graph = bodies(e.data)[0]
    depth = {v: 1 for v in graph.inputs}
    ranks = 1 if graph.inputs else 0
    for n in graph.nodes:
        d = 1 + max((depth.get(v, 0) for v in n.get("input", [])), default=0)
        for o in n.get("output", []):
            depth[o] = d
        ranks = max(ranks, d)
    for v in graph.outputs:
        ranks = max(ranks, depth.get(v, 0) + 1)
    assert m["torchlens.root_ranks"] == ranks
    # Warnings raised are recorded, and the legibility warning fires exactly past the budget.
    assert m.get("torchlens.warnings", []) == sorted(set(e.result.warnings))
    assert (LEGIBILITY_CODE in e.result.warnings) is (ranks > tlnetron.LEGIBILITY_BUDGET)


@combos
def test_the_model_description_says_the_facts_in_words(
    exported: ExportFn, name: str, granularity: str, policy: str
) -> None:
    """Model Properties cuts every row name to ~16 characters (``torchlens.captur…``): the
    description says the view, depth, capture, counts and totals, each line short enough
    for the sidebar to show whole (a fact's continuation lines are indented)."""
    e = exported(name, granularity, policy)
    m, wrapped_doc = e.meta, e.data["docString"]
    assert all(len(line) <= DESCRIPTION_WIDTH or " " not in line.strip() for line in wrapped_doc.split("\n"))
    doc = unwrapped(wrapped_doc)
    lines = doc.split("\n")
    assert lines[0] == m["torchlens.disclaimer"]
    view = f"{granularity} view" + (
        f" at module depth {m['torchlens.depth']}" if granularity == Granularity.MODULE else ""
    )
    assert f"What you see: {e.log.model_class_qualname.rsplit('.', 1)[-1]}, {view}." in doc
    assert m.get("torchlens.depth_reason", "") in doc
    assert f"Capture: {m['torchlens.capture_outcome']}, {m['torchlens.capture_verified'].replace('_', ' ')}" in doc
    nodes = m["torchlens.node_count"]
    assert f"Drawn: {nodes:,} node{'' if nodes == 1 else 's'} and " in doc
    assert f"from {m['torchlens.trace_op_count']:,} traced op" in doc
    for key in (
        "torchlens.observed_duration_total",
        "torchlens.estimated_flops_total",
        "torchlens.captured_bytes_total",
    ):
        assert (key in m) is (m.get(key, "\0") in doc), key
    side = m.get("torchlens.side_op_count", 0)
    assert ("side computation" in doc) is (side > 0)
    if granularity == Granularity.MODULE:
        assert side == len(side_ops(trace_table(e.log), policy))


@combos
def test_node_names_lead_back_to_the_trace(exported: ExportFn, name: str, granularity: str, policy: str) -> None:
    e = exported(name, granularity, policy)
    log = e.log
    for node in op_nodes(e.data):
        label = node["name"]
        found = log[label]  # must not raise
        if isinstance(found, torchlens.Op):
            assert found.label == label
        else:
            assert isinstance(found, torchlens.Layer), (label, type(found))
            assert found.layer_label == label
            assert [op.label for op in found.ops]  # the layer's ops include this node's op(s)
            if granularity != Granularity.ROLLED:
                assert [op.label for op in found.ops] == [f"{label}:1"]
    for node in all_nodes(e.data):
        if node["domain"] == Domain.MODULE:
            assert node["name"] in log.module_calls, node["name"]
            assert log.module_calls[node["name"]].call_label == node["name"]


# ------------------------------------------------------------------ module view

module_combos = pytest.mark.parametrize(
    ("name", "policy"),
    [(n, b) for n in ALL_ZOO for b in BUFFER_POLICY],
    ids=[f"{n}-{b}" for n in ALL_ZOO for b in BUFFER_POLICY],
)


def _covered_calls(log: torchlens.Trace, f: dict[str, Any], caller: dict[str, Any]) -> set[str]:
    """The module calls a function draws: its own call, or every call of a run (or group)."""
    if f["domain"] == Domain.MODULE:
        return {f["overload"]}
    attrs = attrs_of(caller)
    prefix = attrs["module_path"]
    first = int(str(attrs["run_first"]).split(":")[0].rsplit(".", 1)[1])
    last = int(str(attrs["run_last"]).split(":")[0].rsplit(".", 1)[1])
    wanted = {f"{prefix}.{i}" for i in range(first, last + 1)}
    return {str(c.call_label) for c in log.module_calls if str(c.address) in wanted}


@module_combos
def test_module_functions_match_calls_and_trace_io(exported: ExportFn, name: str, policy: str) -> None:
    e = exported(name, Granularity.MODULE, policy)
    functions = e.data.get("functions", [])
    keys = [(f["domain"], f["name"], f.get("overload", "")) for f in functions]
    assert len(keys) == len(set(keys)), "two FunctionProtos share (domain, name, overload)"
    callers: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    for node in all_nodes(e.data):
        if node["domain"] in (Domain.MODULE, Domain.RUN):
            callers.setdefault((node["domain"], node["opType"], node.get("overload", "")), []).append(node)
    for key in keys:
        assert len(callers.get(key, [])) == 1, f"function {key} is called by {callers.get(key)}"
    assert set(callers) == set(keys), "a call node resolves to no function"

    table = trace_table(e.log)
    gone = set().union(*hidden_by_policy(table, policy))
    kept = [t for t in table if t.name not in gone]
    kept_names = {t.name for t in kept}
    role = {t.name: t.role for t in kept}
    fields = {v["name"] for v in e.data["graph"].get("output", [])}
    root_callers = {n["name"] for n in e.data["graph"].get("node", [])}
    for f in functions:
        ((caller,),) = [callers[(f["domain"], f["name"], f.get("overload", ""))]]
        assert f["domain"] in (Domain.MODULE, Domain.RUN)
        covered = _covered_calls(e.log, f, caller)
        inside = {t.name for t in kept if t.role in ("op", "buffer") and covered & set(t.calls)}
        assert inside, f"function {f['overload']} draws no op of the trace"
        expected_in = {p for t in kept if t.name in inside for p in t.parents if p in kept_names and p not in inside}
        consumed_outside = {
            t.name for t in kept if t.name in inside
            and any(c in kept_names and c not in inside and role[c] != "output" for c in t.children)
        }  # fmt: skip
        returned = {t.name for t in kept if t.name in inside and any(role.get(c) == "output" for c in t.children)}
        outs = list(f.get("output", []))
        assert len(f.get("input", [])) == len(set(f.get("input", [])))
        assert len(outs) == len(set(outs))
        assert set(f.get("input", [])) == expected_in, f"function {f['overload']} inputs"
        body = flatten(e.data, f.get("node", []), list(f.get("input", [])))
        tensors = {o for o in outs if o not in body.bundles}
        assert consumed_outside <= tensors, f"function {f['overload']}: a value used outside is not an output"
        assert tensors <= consumed_outside | returned, f"function {f['overload']}: an output nothing outside uses"
        carried = {leaf for o in outs for leaf in body.leaves(o)}
        assert returned <= carried, f"function {f['overload']}: a returned tensor does not leave it"
        # The caller passes exactly these values (formal names are the actual ones, but where
        # the root names a model output by its returned field).
        assert caller["name"] == f["overload"]
        for actual, formal in zip([*caller.get("input", []), *caller.get("output", [])], [*f.get("input", []), *outs]):
            assert actual == formal or (caller["name"] in root_callers and actual in fields), (actual, formal)
        assert len(caller.get("input", [])) == len(f.get("input", [])) and len(caller.get("output", [])) == len(outs)


@module_combos
def test_module_dataflow_equals_op_dataflow(exported: ExportFn, name: str, policy: str) -> None:
    """The same data flow, but for side computations, which only the op view draws."""
    e = exported(name, Granularity.MODULE, policy)
    module_pairs, module_outputs = flat_dataflow(e.data)
    op_pairs, op_outputs = flat_dataflow(exported(name, Granularity.OP, policy).data)
    side = side_ops(trace_table(e.log), policy)
    op_pairs = {(a, b) for a, b in op_pairs if b not in side}
    assert module_pairs == op_pairs
    assert module_outputs == op_outputs


def _hidden_numbers(text: str) -> tuple[int, int]:
    buffers = sum(int(x) for x in re.findall(r"(\d+) buffer", text))
    ops = sum(int(x) for x in re.findall(r"(\d+) counter-update op", text))
    return buffers, ops


@module_combos
def test_module_view_discloses_every_hidden_node(exported: ExportFn, name: str, policy: str) -> None:
    """Spec: disclosures ride the owning module's docString (module-call ``hidden``
    attribute, or the root graph's docString at the root) plus the model metadata.
    (Regression: resnet's root-level bn1 buffers were once disclosed only in the totals.)"""
    e = exported(name, Granularity.MODULE, policy)
    buffers, ops = _hidden_numbers(e.data["graph"].get("docString", ""))
    for node in all_nodes(e.data):
        if node["domain"] == Domain.MODULE:
            b, o = _hidden_numbers(attrs_of(node).get("hidden", ""))
            buffers, ops = buffers + b, ops + o
    assert (buffers, ops) == (e.meta["torchlens.hidden_buffer_count"], e.meta["torchlens.hidden_op_count"])


# ------------------------------------------------------------------ rolled view


@module_combos
def test_rolled_has_one_node_per_layer(exported: ExportFn, name: str, policy: str) -> None:
    e = exported(name, Granularity.ROLLED, policy)
    table = trace_table(e.log)
    gone = set().union(*hidden_by_policy(table, policy))
    layers = {t.layer for t in table if t.role in ("op", "buffer") and t.name not in gone}
    drawn = [
        n["name"]
        for n in e.data["graph"].get("node", [])
        if n["opType"] != "output" and n["domain"] != Domain.STRUCTURE
    ]
    assert len(drawn) == len(set(drawn))
    assert set(drawn) == layers
    # Topological order: every input is a graph input or produced by an earlier node (a DAG).
    seen = {v["name"] for v in e.data["graph"].get("input", [])}
    for n in e.data["graph"].get("node", []):
        assert set(n.get("input", [])) <= seen, f"{n['name']!r} consumes a value produced later (a cycle)"
        seen.update(n.get("output", []))


def _graph_node(data: dict[str, Any], node_name: str) -> dict[str, Any]:
    (node,) = [n for n in data["graph"].get("node", []) if n["name"] == node_name]
    return node


def test_rolled_loop_merges_five_passes_without_a_cycle(exported: ExportFn) -> None:
    e = exported("loop", Granularity.ROLLED, BufferPolicy.MEANINGFUL)
    onnx.checker.check_model(e.model, full_check=True)
    five = [n for n in e.data["graph"]["node"] if attrs_of(n).get("passes") == 5]
    assert {n["opType"] for n in five} == {"linear", "tanh"}
    linear = next(n for n in five if n["opType"] == "linear")
    assert linear["name"] == "linear_1_1"
    # The tanh -> linear feedback is disclosed, not drawn.
    assert "tanh_1_2" in attrs_of(linear)["recurrence"]
    assert "tanh_1_2" not in linear.get("input", [])
    assert e.meta["torchlens.node_count"] == 2


def test_rolled_loop_growing_discloses_shape_drift(exported: ExportFn) -> None:
    e = exported("loop_growing", Granularity.ROLLED, BufferPolicy.MEANINGFUL)
    graph = bodies(e.data)[0]
    (lin,) = [n for n in graph.nodes if n["opType"] == "linear"]
    attrs = attrs_of(lin)
    assert attrs["passes"] == 4
    assert "shape_variants" in attrs and "pass 1" in attrs["shape_variants"]
    assert attrs.get("untyped_output")
    (value,) = lin["output"]
    assert value not in graph.typed
    assert value not in {v["name"] for v in e.data["graph"].get("valueInfo", [])}


# ------------------------------------------------------------------ determinism and warnings


@pytest.mark.parametrize("granularity", GRANULARITY)
@pytest.mark.parametrize("name", ALL_ZOO)
def test_export_is_deterministic(
    exported: ExportFn, zoo_trace: ZooTrace, tmp_path: Path, name: str, granularity: str
) -> None:
    first = exported(name, granularity, BufferPolicy.MEANINGFUL)
    again = _export(zoo_trace(name), tmp_path / first.result.artifact.name, granularity, BufferPolicy.MEANINGFUL)  # type: ignore[union-attr]
    assert again.artifact_json == first.result.artifact_json
    assert again.companion_json == first.result.companion_json
    assert again.artifact is not None and again.companion is not None
    assert again.artifact.read_bytes() == first.result.artifact.read_bytes()  # type: ignore[union-attr]
    assert again.companion.read_bytes() == first.result.companion.read_bytes()  # type: ignore[union-attr]


def _record(log: torchlens.Trace, path: Path, **kwargs: Any) -> tuple[tlnetron.ExportResult, list[TlnetronWarning]]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = tlnetron.export(log, path, **kwargs)
    others = [w for w in caught if not issubclass(w.category, TlnetronWarning)]
    assert others == [], [str(w.message) for w in others]
    return result, [w.message for w in caught if isinstance(w.message, TlnetronWarning)]


def test_legibility_warning_fires_for_gpt2_op_view(zoo_trace: ZooTrace, tmp_path: Path) -> None:
    result, caught = _record(zoo_trace("gpt2"), tmp_path / "gpt2.onnx.json", granularity=Granularity.OP)
    legibility = [w for w in caught if w.code == LEGIBILITY_CODE]
    assert len(legibility) == 1
    message = str(legibility[0])
    assert "Remedy:" in message
    assert f'granularity="{Granularity.MODULE}"' in message
    assert LEGIBILITY_CODE in result.warnings
    model = onnx.ModelProto()
    json_format.Parse(result.artifact_json, model)
    meta, _ = decode_metadata([(p.key, p.value) for p in model.metadata_props])
    assert meta["torchlens.root_ranks"] > tlnetron.LEGIBILITY_BUDGET == 27
    assert LEGIBILITY_CODE in meta["torchlens.warnings"]
    # The warning is raised (not only recorded): warnings-as-errors callers see it.
    with pytest.warns(TlnetronWarning, match=LEGIBILITY_CODE):
        tlnetron.export(zoo_trace("gpt2"), tmp_path / "again.onnx.json", granularity=Granularity.OP)


@pytest.mark.parametrize("name", ["gpt2", "gpt2_small", "bert", "t5"])
def test_legibility_warning_silent_for_module_view(zoo_trace: ZooTrace, tmp_path: Path, name: str) -> None:
    result, caught = _record(zoo_trace(name), tmp_path / f"{name}.onnx.json", granularity=Granularity.MODULE)
    assert [w.code for w in caught if w.code == LEGIBILITY_CODE] == []
    assert LEGIBILITY_CODE not in result.warnings
    model = onnx.ModelProto()
    json_format.Parse(result.artifact_json, model)
    meta, _ = decode_metadata([(p.key, p.value) for p in model.metadata_props])
    assert meta["torchlens.root_ranks"] <= tlnetron.LEGIBILITY_BUDGET

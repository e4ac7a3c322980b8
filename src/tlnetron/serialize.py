"""Stage 5a: JSON text, fast and deterministic.

:func:`dumps` writes the artifact and companion objects (compact UTF-8 through orjson,
which is an order of magnitude faster than the standard library on these sizes and refuses
nothing we write; non-finite numbers are checked before it is called).
:func:`model_to_dict` reads a tlnetron-built ModelProto into exactly what ``MessageToDict``
gives (int64 as strings, bytes as base64, enums by name): the builder emits this form
directly, and tests hold the two to equality; it refuses fields tlnetron never sets.
"""

from __future__ import annotations

import base64
from typing import Any

import onnx
import orjson

__all__ = ["dumps", "model_to_dict", "to_json"]

_ATTR_TYPE_NAMES = {v: k for k, v in onnx.AttributeProto.AttributeType.items()}

_KNOWN = {
    "ModelProto": {"ir_version", "producer_name", "producer_version", "domain", "doc_string", "opset_import", "metadata_props", "graph", "functions"},
    "GraphProto": {"name", "doc_string", "node", "input", "output", "value_info"},
    "NodeProto": {"name", "op_type", "domain", "overload", "input", "output", "attribute", "doc_string", "metadata_props"},
    "FunctionProto": {"name", "domain", "overload", "doc_string", "input", "output", "node", "opset_import", "value_info"},
    "ValueInfoProto": {"name", "type", "doc_string"},
    "AttributeProto": {"name", "type", "s", "i"},
}


def _meta(props: Any) -> list[dict[str, str]]:
    return [{"key": p.key, "value": p.value} for p in props]


def _value_info(v: onnx.ValueInfoProto) -> dict[str, Any]:
    out: dict[str, Any] = {"name": v.name}
    if v.HasField("type"):
        tt = v.type.tensor_type
        tensor: dict[str, Any] = {}
        if tt.HasField("elem_type"):
            tensor["elemType"] = tt.elem_type
        if tt.HasField("shape"):
            dims = [{"dimValue": str(d.dim_value)} if d.HasField("dim_value") else {} for d in tt.shape.dim]
            tensor["shape"] = {"dim": dims} if dims else {}
        out["type"] = {"tensorType": tensor}
    if v.doc_string:
        out["docString"] = v.doc_string
    return out


def _attribute(a: onnx.AttributeProto) -> dict[str, Any]:
    out: dict[str, Any] = {"name": a.name, "type": _ATTR_TYPE_NAMES[a.type]}
    if a.type == onnx.AttributeProto.STRING:
        out["s"] = base64.b64encode(a.s).decode("ascii")
    elif a.type == onnx.AttributeProto.INT:
        out["i"] = str(a.i)
    else:  # pragma: no cover - guarded by _check_known
        raise ValueError(f"attribute type {a.type} not serialised")
    return out


def _node(n: onnx.NodeProto) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if n.input:
        out["input"] = list(n.input)
    if n.output:
        out["output"] = list(n.output)
    out["name"] = n.name
    out["opType"] = n.op_type
    out["domain"] = n.domain
    if n.overload:
        out["overload"] = n.overload
    if n.attribute:
        out["attribute"] = [_attribute(a) for a in n.attribute]
    if n.doc_string:
        out["docString"] = n.doc_string
    if n.metadata_props:
        out["metadataProps"] = _meta(n.metadata_props)
    return out


def _graph(g: onnx.GraphProto) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if g.node:
        out["node"] = [_node(n) for n in g.node]
    out["name"] = g.name
    if g.doc_string:
        out["docString"] = g.doc_string
    if g.input:
        out["input"] = [_value_info(v) for v in g.input]
    if g.output:
        out["output"] = [_value_info(v) for v in g.output]
    if g.value_info:
        out["valueInfo"] = [_value_info(v) for v in g.value_info]
    return out


def _function(f: onnx.FunctionProto) -> dict[str, Any]:
    out: dict[str, Any] = {"name": f.name}
    if f.input:
        out["input"] = list(f.input)
    if f.output:
        out["output"] = list(f.output)
    if f.node:
        out["node"] = [_node(n) for n in f.node]
    if f.doc_string:
        out["docString"] = f.doc_string
    if f.opset_import:
        out["opsetImport"] = [{"domain": o.domain, "version": str(o.version)} for o in f.opset_import]
    out["domain"] = f.domain
    if f.overload:
        out["overload"] = f.overload
    if f.value_info:
        out["valueInfo"] = [_value_info(v) for v in f.value_info]
    return out


def _check_known(model: onnx.ModelProto) -> None:
    def check(msg: Any, kind: str) -> None:
        extra = {fd.name for fd, _ in msg.ListFields()} - _KNOWN[kind]
        if extra:
            raise ValueError(f"{kind} sets fields this serialiser does not write: {sorted(extra)}")

    check(model, "ModelProto")
    check(model.graph, "GraphProto")
    for f in model.functions:
        check(f, "FunctionProto")


def model_to_dict(model: onnx.ModelProto) -> dict[str, Any]:
    """The ``MessageToDict`` form of a tlnetron-built ModelProto."""
    _check_known(model)
    out: dict[str, Any] = {
        "irVersion": str(model.ir_version),
        "producerName": model.producer_name,
        "producerVersion": model.producer_version,
        "domain": model.domain,
        "docString": model.doc_string,
        "opsetImport": [{"domain": o.domain, "version": str(o.version)} for o in model.opset_import],
    }
    if model.metadata_props:
        out["metadataProps"] = _meta(model.metadata_props)
    out["graph"] = _graph(model.graph)
    if model.functions:
        out["functions"] = [_function(f) for f in model.functions]
    return out


def dumps(obj: Any) -> str:
    """Compact, deterministic JSON text (key order as built; UTF-8, not ASCII-escaped)."""
    return orjson.dumps(obj).decode("utf-8")


def to_json(model: onnx.ModelProto) -> str:
    """Deterministic camelCase protobuf JSON text of a tlnetron-built ``model``."""
    return dumps(model_to_dict(model))

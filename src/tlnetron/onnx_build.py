"""Stage 3, the ONNX builder: a projection becomes an ``onnx.ModelProto``.

Built with the onnx protobuf classes (never by hand-writing JSON), attributes sorted, so the
same projection always gives the same proto. The artifact is not runnable and says so.
"""

from __future__ import annotations

import onnx

from ._generated.vocab import NODE_ATTRIBUTE_TYPES
from .nodes import DOMAIN_LOSSY, DOMAIN_MODULE
from .projection import PGraph, PNode, PValue, Projection

__all__ = ["DISCLAIMER", "IR_VERSION", "build_model"]

IR_VERSION = 10
DISCLAIMER = (
    "A picture of a TorchLens trace, not a runnable model: ops keep their captured TorchLens "
    "names in the custom domain ai.torchlens.lossy, module calls are ai.torchlens.module "
    "functions, and shapes are what the traced run observed."
)

_AP = onnx.AttributeProto


def _attribute(name: str, value: str | int) -> onnx.AttributeProto:
    kind = NODE_ATTRIBUTE_TYPES[name]
    attr = onnx.AttributeProto(name=name)
    if kind == "STRING":
        attr.type = _AP.STRING
        attr.s = str(value).encode("utf-8")
    elif kind == "INT":
        attr.type = _AP.INT
        attr.i = int(value)
    else:  # pragma: no cover - the schema only declares STRING and INT today
        raise AssertionError(f"unsupported attribute type {kind} for {name}")
    return attr


def _value_info(value: PValue, *, graph_io: bool) -> onnx.ValueInfoProto:
    """A ValueInfoProto; graph inputs/outputs use the loose type when no faithful one exists."""
    info = onnx.ValueInfoProto(name=value.name)
    if value.doc:
        info.doc_string = value.doc
    tt = value.io_type if graph_io else value.type
    if tt is not None:
        tensor = info.type.tensor_type
        tensor.elem_type = tt.elem_type
        shape = tensor.shape
        shape.SetInParent()
        for d in tt.shape:
            dim = shape.dim.add()
            if d is not None:
                dim.dim_value = d
    return info


def _node(node: PNode) -> onnx.NodeProto:
    proto = onnx.NodeProto(
        name=node.name,
        op_type=node.op_type,
        domain=node.domain,
        input=list(node.inputs),
        output=list(node.outputs),
    )
    if node.overload:
        proto.overload = node.overload
    if node.doc:
        proto.doc_string = node.doc
    if node.attributes:
        proto.attribute.extend(_attribute(k, v) for k, v in node.attributes)
    for key, value in node.metadata:
        proto.metadata_props.add(key=key, value=value)
    for key, value in node.diff:
        proto.metadata_props.add(key=key, value=value)
    return proto


def _graph(graph: PGraph, doc: str) -> onnx.GraphProto:
    proto = onnx.GraphProto(name=graph.name, doc_string=doc)
    proto.node.extend(_node(n) for n in graph.nodes)
    proto.input.extend(_value_info(v, graph_io=True) for v in graph.inputs)
    proto.output.extend(_value_info(v, graph_io=True) for v in graph.outputs)
    proto.value_info.extend(_value_info(v, graph_io=False) for v in graph.values if v.type is not None)
    return proto


def _function(fn_name: str, domain: str, overload: str, body: PGraph) -> onnx.FunctionProto:
    proto = onnx.FunctionProto(name=fn_name, domain=domain, doc_string=body.doc)
    if overload:
        proto.overload = overload
    proto.input.extend(v.name for v in body.inputs)
    proto.output.extend(v.name for v in body.outputs)
    proto.node.extend(_node(n) for n in body.nodes)
    proto.opset_import.add(domain=DOMAIN_LOSSY, version=1)
    proto.opset_import.add(domain=DOMAIN_MODULE, version=1)
    typed = [v for v in (*body.inputs, *body.values, *body.outputs) if v.type is not None]
    proto.value_info.extend(_value_info(v, graph_io=False) for v in typed)
    return proto


def build_model(
    projection: Projection, metadata: list[tuple[str, str]], *, producer_version: str, graph_doc: str
) -> onnx.ModelProto:
    """Build the artifact's ModelProto.

    Args:
        projection: the view to draw.
        metadata: model ``metadataProps`` rows (already validated), in order.
        producer_version: tlnetron's version.
        graph_doc: the root graph's docString (disclaimer plus what the view shows).
    """
    model = onnx.ModelProto(
        ir_version=IR_VERSION,
        producer_name="tlnetron",
        producer_version=producer_version,
        domain="ai.torchlens",
        doc_string=DISCLAIMER,
    )
    model.opset_import.add(domain=DOMAIN_LOSSY, version=1)
    model.opset_import.add(domain=DOMAIN_MODULE, version=1)
    model.graph.CopyFrom(_graph(projection.graph, graph_doc))
    model.functions.extend(_function(f.name, f.domain, f.overload, f.body) for f in projection.functions)
    for key, value in metadata:
        model.metadata_props.add(key=key, value=value)
    return model

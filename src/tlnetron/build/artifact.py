"""The ONNX builder: a projection becomes a serialized ``onnx.ModelProto`` and its JSON text.

The proto is built with the onnx protobuf classes, attributes sorted, so the same projection
always gives the same proto; it is what ``onnx.checker`` checks. In the same pass the
builder writes the proto's camelCase protobuf-JSON form (exactly what
``json_format.MessageToDict`` gives for it: int64 as strings, bytes as base64, enums by
name), because reading a large proto back through protobuf reflection costs more than the
rest of the export. Both are made ``CHUNK_NODES`` nodes at a time and only their bytes are
kept (:func:`build_model`). ``tests/test_serialize.py`` and the property tests hold the two
to equality: the written JSON strict-parses back into the checked proto.
"""

from __future__ import annotations

from binascii import b2a_base64
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import orjson

from .._generated.vocab import NODE_ATTRIBUTE_TYPES, Domain, MetaKey
from .._records import record
from ..ir.drawing import PFunction, PGraph, PNode, Projection, PValue, SequenceType, ValueType
from ..progress import every_share, report_every
from ..words.docs import empty_value_doc
from ..words.node import NodeWords, words_of
from ..words.model import DISCLAIMER
from . import _onnx as onnx  # onnx without its __init__ (numpy, ml_dtypes)
from .export_id import PLACEHOLDER, companion_with_id, export_id_of
from .serialize import dumps_bytes

__all__ = ["CHUNK_NODES", "IR_VERSION", "BuiltModel", "build_model"]

IR_VERSION = 10

CHUNK_NODES = 512
"""Nodes (or value infos, or function-body nodes) built, serialized and JSON-encoded at a
time (:class:`_Parts`): a part's protos and JSON objects are freed before the next is
built, so a large export reuses a few megabytes of warm memory instead of holding two whole
trees (``benchmarks/README.md``, "Chunked build")."""

_STRING = onnx.AttributeProto.STRING
_INT = onnx.AttributeProto.INT
_OPSETS = ((Domain.LOSSY, 1), (Domain.MODULE, 1))
_DRAWN_ONLY_IF_USED = (Domain.RUN, Domain.STRUCTURE)
"""Domains imported only by the models that use them (a run, a structure node)."""


def opsets(projection: Projection) -> tuple[tuple[str, int], ...]:
    """The operator sets the model imports: ops and module calls always, runs and structure
    nodes where the projection has them."""
    used = {f.domain for f in projection.functions}
    for body in (projection.graph, *(f.body for f in projection.functions)):
        used.update(n.domain for n in body.nodes)
    return _OPSETS + tuple((d, 1) for d in _DRAWN_ONLY_IF_USED if d in used)


Json = dict[str, Any]


def _dims(shape: tuple[int | None, ...], proto: Any) -> list[Json]:
    proto.SetInParent()
    add = proto.dim.add
    dims: list[Json] = []
    for d in shape:
        if d is None:
            add()
            dims.append({})
        else:
            add(dim_value=d)
            dims.append({"dimValue": str(d)})
    return dims


def _type_parts(tt: ValueType) -> tuple[onnx.TypeProto, Json]:
    """A value's TypeProto and its JSON form: a tensor, or a sequence of tensors (a structure)."""
    proto = onnx.TypeProto()
    if isinstance(tt, SequenceType):
        tensor = proto.sequence_type.elem_type.tensor_type
        tensor.elem_type = tt.elem_type
        elem: Json = {"elemType": tt.elem_type}
        if tt.shape is not None:
            dims = _dims(tt.shape, tensor.shape)
            elem["shape"] = {"dim": dims} if dims else {}
        return proto, {"sequenceType": {"elemType": {"tensorType": elem}}}
    tensor = proto.tensor_type
    tensor.elem_type = tt.elem_type
    dims = _dims(tt.shape, tensor.shape)
    return proto, {"tensorType": {"elemType": tt.elem_type, "shape": {"dim": dims} if dims else {}}}


class _Builder:
    """Builds protos in place and their JSON form; repeated JSON parts are built once.

    Attribute, metadata-row and tensor-type JSON objects recur across nodes (the same
    function name, the same shapes): each distinct one is built once per export and shared
    in the tree, which orjson writes out at every place it appears. Nothing mutates the tree
    after it is built.
    """

    def __init__(
        self,
        progress: Callable[[int, int], None] | None = None,
        total_nodes: int = 0,
        words: Mapping[str, NodeWords] | None = None,
        imports: tuple[tuple[str, int], ...] = _OPSETS,
    ) -> None:
        self.words = words
        self.opsets = imports
        self.opset_json = [{"domain": d, "version": str(v)} for d, v in imports]
        every = report_every(total_nodes)
        self.progress = progress if every is not None else None
        self.total_nodes = total_nodes
        self.nodes_built = 0
        self.every = every or 0
        self.next_report = self.every
        # (key, value) -> (the AttributeProto's fields, its JSON form)
        self.attr_parts: dict[tuple[str, str | int], tuple[dict[str, Any], Json]] = {}
        self.prop_json: dict[tuple[str, str], Json] = {}
        self.type_json: dict[ValueType, tuple[onnx.TypeProto, Json]] = {}

    def value_info(self, container: Any, value: PValue, *, graph_io: bool) -> Json:
        """Add a ValueInfoProto; graph inputs/outputs use the loose type when no faithful one exists."""
        info = container.add(name=value.name)
        out: Json = {"name": value.name}
        tt = value.io_type if graph_io else value.type
        if tt is not None:
            known = self.type_json.get(tt)
            if known is None:
                known = self.type_json[tt] = _type_parts(tt)
            info.type.CopyFrom(known[0])
            out["type"] = known[1]
        doc = value.doc
        if tt is not None and tt.shape is not None and 0 in tt.shape:
            empty = empty_value_doc(tt.shape)
            doc = f"{doc}; {empty}" if doc else empty
        if doc:
            info.doc_string = doc
            out["docString"] = doc
        return out

    def node(self, container: Any, node: PNode) -> Json:
        # The NodeProto is made by one ``add(...)`` call whose repeated message fields are
        # given as dicts (upb builds them in C, faster than adding each row from Python).
        # The metadata row dicts are the JSON's own: ``{"key": k, "value": v}`` is both.
        fields: dict[str, Any] = {"name": node.name, "op_type": node.op_type, "domain": node.domain}
        out: Json = {}
        if node.inputs:
            fields["input"] = node.inputs
            out["input"] = list(node.inputs)
        if node.outputs:
            fields["output"] = node.outputs
            out["output"] = list(node.outputs)
        out["name"] = node.name
        out["opType"] = node.op_type
        out["domain"] = node.domain
        if node.overload:
            fields["overload"] = node.overload
            out["overload"] = node.overload
        if node.attributes:
            attrs: list[Json] = []
            protos: list[dict[str, Any]] = []
            cache = self.attr_parts
            for key, value in node.attributes:
                known = cache.get((key, value))
                if known is None:
                    kind = NODE_ATTRIBUTE_TYPES[key]
                    if kind == "STRING":
                        data = str(value).encode("utf-8")
                        known = (
                            {"name": key, "type": _STRING, "s": data},
                            {"name": key, "type": "STRING", "s": b2a_base64(data, newline=False).decode("ascii")},
                        )
                    elif kind == "INT":
                        known = (
                            {"name": key, "type": _INT, "i": int(value)},
                            {"name": key, "type": "INT", "i": str(int(value))},
                        )
                    else:  # pragma: no cover - the schema only declares STRING and INT today
                        raise AssertionError(f"unsupported attribute type {kind} for {key}")
                    cache[(key, value)] = known
                protos.append(known[0])
                attrs.append(known[1])
            fields["attribute"] = protos
            out["attribute"] = attrs
        words = words_of(node, self.words)
        doc = words.doc
        if doc:
            fields["doc_string"] = doc
            out["docString"] = doc
        rows = words.metadata
        if rows:
            props = self.prop_json
            items: list[Json] = []
            for row in rows:
                js = props.get(row)
                if js is None:
                    js = props[row] = {"key": row[0], "value": row[1]}
                items.append(js)
            fields["metadata_props"] = items
            out["metadataProps"] = items
        container.add(**fields)
        return out

    def built(self, count: int) -> None:
        """``count`` more nodes are built: report every :func:`~tlnetron.progress.report_every` nodes."""
        self.nodes_built += count
        if self.progress is not None and self.nodes_built >= self.next_report:
            self.progress(self.nodes_built, self.total_nodes)
            self.next_report = self.nodes_built + self.every

    def graph(self, parts: _Parts, graph: PGraph, doc: str) -> Json:
        out: Json = {}
        report = self.progress
        total = self.total_nodes
        if graph.nodes:
            nodes = parts.json_list()
            container = parts.part.graph.node
            for n in every_share(
                graph.nodes, len(graph.nodes), None if report is None else lambda done, _: report(done, total)
            ):
                nodes.append(self.node(container, n))
                if parts.added(1):
                    container = parts.part.graph.node
            out["node"] = nodes
        self.nodes_built += len(graph.nodes)
        proto = parts.part.graph
        proto.SetInParent()  # the graph is there even when it has nothing but a name
        proto.name = graph.name
        out["name"] = graph.name
        if doc:
            proto.doc_string = doc
            out["docString"] = doc
        if graph.inputs:
            out["input"] = [self.value_info(proto.input, v, graph_io=True) for v in graph.inputs]
        if graph.outputs:
            out["output"] = [self.value_info(proto.output, v, graph_io=True) for v in graph.outputs]
        infos = parts.json_list()
        container = parts.part.graph.value_info
        for v in graph.values:
            if v.type is not None:
                infos.append(self.value_info(container, v, graph_io=False))
                if parts.added(1):
                    container = parts.part.graph.value_info
        if infos:
            out["valueInfo"] = infos
        return out

    def functions(self, parts: _Parts, functions: Iterable[PFunction]) -> list[Any]:
        out = parts.json_list()
        for f in functions:
            out.append(self.function(parts.part.functions, f.name, f.domain, f.overload, f.body))
            parts.added(len(f.body.nodes) + 1)
        return out

    def function(self, container: Any, fn_name: str, domain: str, overload: str, body: PGraph) -> Json:
        proto = container.add(name=fn_name, domain=domain)
        out: Json = {"name": fn_name}
        if body.inputs:
            proto.input.extend(v.name for v in body.inputs)
            out["input"] = [v.name for v in body.inputs]
        if body.outputs:
            proto.output.extend(v.name for v in body.outputs)
            out["output"] = [v.name for v in body.outputs]
        nodes = [self.node(proto.node, n) for n in body.nodes]
        self.built(len(nodes))
        if nodes:
            out["node"] = nodes
        if body.doc:
            proto.doc_string = body.doc
            out["docString"] = body.doc
        for d, v in self.opsets:
            proto.opset_import.add(domain=d, version=v)
        out["opsetImport"] = self.opset_json
        out["domain"] = domain
        if overload:
            proto.overload = overload
            out["overload"] = overload
        typed = [v for v in (*body.inputs, *body.values, *body.outputs) if v.type is not None]
        if typed:
            out["valueInfo"] = [self.value_info(proto.value_info, v, graph_io=False) for v in typed]
        return out


class _Parts:
    """The model being built, a part at a time: protos go into :attr:`part`, a ModelProto
    that is serialized and replaced once ``CHUNK_NODES`` nodes (or value infos) are in it;
    at the same moment the JSON objects built for it since the last part are encoded into
    one ``orjson.Fragment`` in their lists (:meth:`json_list`). A model smaller than one
    part is built and encoded in one piece, as if there were no parts.

    The parts concatenate into the serialization of the whole model (protobuf merges the
    repeated fields of concatenated messages), and each list's fragments into the bytes the
    list of its objects would give.
    """

    def __init__(self, head: onnx.ModelProto) -> None:
        self.part = head
        self.done: list[bytes] = []
        self._count = 0
        self._lists: list[list[Any]] = []
        self._encoded: list[int] = []  # per list, how many of its items are fragments already

    def json_list(self) -> list[Any]:
        """A JSON array whose items are encoded with the part they were built into."""
        items: list[Any] = []
        self._lists.append(items)
        self._encoded.append(0)
        return items

    def added(self, count: int) -> bool:
        """``count`` more nodes or value infos are in the part: serialize it when it is full
        (True: :attr:`part` is a new, empty one)."""
        self._count += count
        if self._count < CHUNK_NODES:
            return False
        self.done.append(self.part.SerializeToString())
        self.part = onnx.ModelProto()
        self._count = 0
        for i, items in enumerate(self._lists):
            start = self._encoded[i]
            if len(items) > start:
                # [a, b] -> "a,b": the final encoding joins the fragments into [a,...,z].
                items[start:] = [orjson.Fragment(dumps_bytes(items[start:])[1:-1])]
                self._encoded[i] = len(items)
        return True

    def proto(self, prefix: bytes) -> bytes:
        """The whole model's serialization: ``prefix`` (fields serialized on their own), then
        the parts, the last one included."""
        self.done.append(self.part.SerializeToString())
        data = b"".join((prefix, *self.done))
        self.done.clear()
        return data


@record
class BuiltModel:
    """A built artifact: the serialized ModelProto (what ``onnx.checker`` checks) and its
    protobuf-JSON text (what is written), both of the same model, with its export id in
    place; and the companion given to :func:`build_model`, with the same id in place."""

    proto: bytes
    json: bytes
    export_id: str
    companion: bytes | None


def build_model(
    projection: Projection,
    metadata: list[tuple[str, str]],
    *,
    producer_version: str,
    graph_doc: str,
    model_doc: str = "",
    progress: Callable[[int, int], None] | None = None,
    companion: bytes | None = None,
    words: Mapping[str, NodeWords] | None = None,
) -> BuiltModel:
    """Build the artifact's ModelProto and its protobuf-JSON text (``MessageToDict`` shape),
    and write the export id into both and into the companion.

    The protos are built with the onnx classes and serialized ``CHUNK_NODES`` nodes at a
    time, their JSON objects encoded with them (:class:`_Parts`), so on a large model only
    finished bytes outlive a part; ``ModelProto.FromString(proto)`` equals the model built
    in one piece. The export id is derived from the JSON and ``companion``, both holding
    :data:`~tlnetron.build.export_id.PLACEHOLDER` where it goes (:func:`tlnetron.build.export_id.export_id_of`),
    then written into the JSON, the proto and the companion.

    Args:
        projection: the view to draw.
        metadata: model ``metadataProps`` rows (already validated), in order; the export id
            row (``torchlens.export_id``) holds the placeholder.
        producer_version: tlnetron's version.
        graph_doc: the root graph's docString (disclaimer plus what the view shows).
        model_doc: the model's docString (Netron's Model Properties description); the
            disclaimer when empty.
        progress: called as ``progress(nodes_built, nodes)`` about every 2% of the nodes
            (root graph and function bodies) on large views.
        companion: the companion's bytes, its export id row holding the placeholder; None
            when no companion is written.
        words: each node's words by its name, when the caller worded them already
            (:func:`~tlnetron.words.node.word_node` otherwise).

    Raises:
        ValueError: no placeholder where the export id goes (a bug in tlnetron).
    """
    if (MetaKey.EXPORT_ID, PLACEHOLDER) not in metadata:
        raise ValueError("no export id placeholder in the model metadata")
    head = onnx.ModelProto(
        ir_version=IR_VERSION,
        producer_name="tlnetron",
        producer_version=producer_version,
        domain=Domain.TORCHLENS,
        doc_string=model_doc or DISCLAIMER,
    )
    out: Json = {
        "irVersion": str(IR_VERSION),
        "producerName": "tlnetron",
        "producerVersion": producer_version,
        "domain": Domain.TORCHLENS,
        "docString": model_doc or DISCLAIMER,
    }
    imports = opsets(projection)
    out["opsetImport"] = [{"domain": d, "version": str(v)} for d, v in imports]
    for d, v in imports:
        head.opset_import.add(domain=d, version=v)
    if metadata:
        out["metadataProps"] = [{"key": k, "value": v} for k, v in metadata]
    parts = _Parts(head)
    del head
    total = len(projection.graph.nodes) + sum(len(f.body.nodes) for f in projection.functions) if progress else 0
    builder = _Builder(progress, total, words, imports)
    out["graph"] = builder.graph(parts, projection.graph, graph_doc)
    if projection.functions:
        out["functions"] = builder.functions(parts, projection.functions)
    placeholder_text = dumps_bytes(out)
    export_id = export_id_of(placeholder_text, companion)
    # The id is written in by encoding the tree again (the parts are already encoded: each
    # is copied once), not by copying the text: orjson's growing buffer ends in memory
    # mapped afresh, which goes back to the system when the caller drops the result; a copy
    # made now lands in the heap orjson just left free, and stays in the process after the
    # result is dropped.
    out["metadataProps"] = [{"key": k, "value": export_id if k == MetaKey.EXPORT_ID else v} for k, v in metadata]
    text = dumps_bytes(out)
    if len(text) != len(placeholder_text):
        raise ValueError("the export id changed the artifact's length")
    del placeholder_text, out
    # The model's metadata rows are serialized on their own, id in place, ahead of the
    # parts (which concatenate with them into the same model): the proto is not copied.
    meta = onnx.ModelProto()
    for key, value in metadata:
        meta.metadata_props.add(key=key, value=export_id if key == MetaKey.EXPORT_ID else value)
    proto = parts.proto(meta.SerializeToString())
    return BuiltModel(proto, text, export_id, None if companion is None else companion_with_id(companion, export_id))

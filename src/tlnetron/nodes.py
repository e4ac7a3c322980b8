"""Stage 2b: shared node building for every view (curated properties, I/O, ranks).

Turns IR ops into :class:`~tlnetron.projection.PNode` with the attribute and metadata rows
of ``schema/node-properties.schema.json``, worded per :mod:`tlnetron.facts`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import fields

from ._generated.vocab import NODE_TEXT_MAX_LENGTH, Domain, NodeAttr, NodeMeta, NodeRole
from .facts import Facts, op_facts
from .ir import ROLE_BUFFER, OpIR
from .perf import export_memo
from .projection import (
    PGraph,
    PNode,
    PValue,
    loose_type,
    shape_text,
    tensor_type,
    untyped_reason,
)

__all__ = [
    "input_names_value",
    "LEGIBILITY_BUDGET",
    "full_texts",
    "one_line",
    "shortened",
    "op_node",
    "op_value",
    "root_ranks",
]

def one_line(text: str) -> str:
    """Text for a single-line field: line breaks shown as ``\\n`` instead of breaking rows,
    and :func:`shortened` past the schema's limit."""
    if "\n" in text or "\r" in text:
        text = text.replace("\r\n", "\\n").replace("\n", "\\n").replace("\r", "\\r")
    return shortened(text) if len(text) > NODE_TEXT_MAX_LENGTH else text


def shortened(text: str, limit: int = NODE_TEXT_MAX_LENGTH) -> str:
    """``text`` cut in the middle to ``limit`` characters, saying how much was left out and
    where the whole of it is (the node's description, see :func:`full_texts`)."""
    if len(text) <= limit:
        return text
    marker = f" …[{len(text):,} characters in all; the whole text is in the description]… "
    keep = limit - len(marker)
    return text[: keep - keep // 3] + marker + text[len(text) - keep // 3 :]


def full_texts(fields: Iterable[tuple[str, str | None]]) -> str:
    """Description lines giving the whole of each field too long for its attribute, or ""."""
    return "".join(f"\n{name} (whole): {text}" for name, text in fields if text and len(text) > NODE_TEXT_MAX_LENGTH)


def input_names_value(ports: Iterable[str]) -> str | None:
    """Netron's ``input_names`` hook value (a Python list repr), or None when not expressible."""
    if isinstance(ports, tuple):
        return _input_names(ports)
    return _input_names(tuple(ports))


@export_memo
def _input_names(ports: tuple[str, ...]) -> str | None:
    items = list(ports)
    if not items or any(("'" in p or "\n" in p or "\r" in p or not p) for p in items):
        return None
    return "[" + ", ".join(f"'{p}'" for p in items) + "]"


def _params_text(op: OpIR) -> str | None:
    if not op.params:
        return None
    return ", ".join(
        f"{one_line(n)} {'×'.join(str(d) for d in s) if s else 'scalar'}" for n, s in op.params
    )


def op_value(op: OpIR) -> PValue:
    """The value an op produces (named like the op)."""
    ty = tensor_type(op.shape, op.dtype)
    if ty is not None:
        return PValue(op.name, ty)
    return PValue(op.name, ty, loose=loose_type([op.shape], [op.dtype]))


def op_node(
    op: OpIR,
    inputs: tuple[str, ...],
    ports: tuple[str, ...],
    *,
    domain: str = Domain.LOSSY,
    typed: bool | None = None,
    facts: Facts | None = None,
    passes: int | None = None,
) -> PNode:
    """A node for one op (or buffer pseudo-op) with its curated properties.

    ``typed`` says whether the op's output value has a faithful type (computed when None);
    ``facts`` are ``op_facts(op)`` when the caller has them already; ``passes`` makes it a
    rolled layer's node (the layer named in the description, with its passes).
    """
    # Runs once per drawn op in every view: fields are read once, and the records are
    # built positionally (keywords cost more per record; the field order is pinned below).
    name = op.name
    function = op.function
    attrs: list[tuple[str, str | int]] = []
    if function:
        attrs.append((NodeAttr.FUNCTION, one_line(function)))
    if op.module_path:
        attrs.append((NodeAttr.MODULE_PATH, one_line(op.module_path)))
    params = None
    if op.num_params > 0:
        attrs.append((NodeAttr.NUM_PARAMS, op.num_params))
        params = _params_text(op)
        if params:
            attrs.append((NodeAttr.PARAMS, shortened(params)))
    if name != op.layer:
        attrs.append((NodeAttr.LAYER, one_line(op.layer)))
    if op.num_passes > 1:
        attrs.append((NodeAttr.PASS, op.pass_index))
        attrs.append((NodeAttr.PASSES, op.num_passes))
    if op.multi_output_index is not None:
        attrs.append((NodeAttr.MULTI_OUTPUT_INDEX, op.multi_output_index))
    if op.buffer_address:
        attrs.append((NodeAttr.BUFFER_ADDRESS, one_line(op.buffer_address)))
    if op.buffer_access:
        attrs.append((NodeAttr.BUFFER_ACCESS, op.buffer_access))
    shape = op.shape
    dtype = op.dtype
    if typed is None:
        typed = tensor_type(shape, dtype) is not None
    if not typed:
        attrs.append((NodeAttr.UNTYPED_OUTPUT, untyped_reason(shape, dtype)))
    if facts is None:
        facts = op_facts(op)
    meta: list[tuple[str, str]] = []
    if inputs:
        names = input_names_value(ports)
        if names is not None:
            meta.append((NodeMeta.INPUT_NAMES, names))
    attrs.sort()
    if passes is None:
        doc = f"TorchLens label: {name} (log[{name!r}] finds it)"
    else:
        doc = f"TorchLens layer: {name}, {passes} pass(es) (log[{name!r}] finds it)"
    if op.location:
        doc = f"called at: {op.location}\n{doc}"
    if function:
        doc = f"torch function: {function}\n{doc}"
    if shape is not None:
        doc = f"{doc}\noutput: {dtype or 'unknown dtype'} {shape_text(shape)}"
    if max(len(op.module_path or ""), len(op.layer), len(op.buffer_address or ""), len(params or "")) > NODE_TEXT_MAX_LENGTH:
        doc += full_texts(((NodeAttr.MODULE_PATH, op.module_path), (NodeAttr.LAYER, op.layer),
                           (NodeAttr.BUFFER_ADDRESS, op.buffer_address), (NodeAttr.PARAMS, params)))
    return PNode(
        name,
        op.op_type or "op",
        domain,
        NodeRole.BUFFER if op.role == ROLE_BUFFER else NodeRole.OP,
        inputs,
        (name,),
        tuple(attrs),
        tuple(meta),
        doc,
        facts,
    )


# op_node builds PNode positionally: its field order is pinned.
if [f.name for f in fields(PNode)][:10] != [
    "name", "op_type", "domain", "role", "inputs", "outputs", "attributes", "metadata", "doc", "facts",
]:  # fmt: skip
    raise RuntimeError("PNode's fields changed: update nodes.op_node")  # pragma: no cover


LEGIBILITY_BUDGET = 27
"""Ranks (boxes along the longest path) a root graph can have and still read as a diagram."""


def root_ranks(graph: PGraph) -> int:
    """Longest path through the graph counted in boxes (inputs and outputs included)."""
    depth: dict[str, int] = {v.name: 1 for v in graph.inputs}
    best = 1 if graph.inputs else 0
    get = depth.get
    for node in graph.nodes:  # nodes are in topological order
        d = 0
        for i in node.inputs:
            seen = get(i, 0)
            if seen > d:
                d = seen
        d += 1
        for o in node.outputs:
            depth[o] = d
        best = max(best, d)
    for v in graph.outputs:
        best = max(best, depth.get(v.name, 0) + 1)
    return best

"""Shared node building for every view (curated properties, I/O, ranks).

Turns IR ops into :class:`~tlnetron.ir.drawing.PNode` with the attribute and metadata rows
of ``schema/node-properties.schema.json``, worded per :mod:`tlnetron.ir.facts`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import fields

from .._generated.vocab import Domain, NodeAttr, NodeMeta, NodeRole
from ..ir.drawing import (
    PGraph,
    PNode,
    PValue,
    RunIR,
    loose_type,
    tensor_type,
    untyped_reason,
)
from ..ir.facts import Facts, op_facts
from ..ir.trace import ROLE_BUFFER, ModuleCallIR, OpIR
from ..perf import export_memo
from ..words.docs import call_node_doc, op_doc, run_header, run_node_doc
from ..words.text import one_line, params_text, shortened

__all__ = [
    "call_node",
    "input_names_value",
    "run_attributes",
    "run_node",
    "LEGIBILITY_BUDGET",
    "op_node",
    "op_value",
    "root_ranks",
]


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
        params = params_text(op.params)
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
    doc = op_doc(op, passes, params)
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


def call_node(
    call: ModuleCallIR, inputs: tuple[str, ...], outputs: tuple[str, ...], facts: Facts, hidden: str, run: RunIR | None
) -> PNode:
    """The box of a module call: it calls the call's function (``run``: its body is one run)."""
    attrs: list[tuple[str, str | int]] = [
        (NodeAttr.CLASS_NAME, one_line(call.class_name)),
        (NodeAttr.MODULE_PATH, one_line(call.address)),
        (NodeAttr.CALL_INDEX, call.call_index),
    ]
    if call.num_params > 0:
        attrs.append((NodeAttr.NUM_PARAMS, call.num_params))
    if hidden:
        attrs.append((NodeAttr.HIDDEN, hidden))
    op_type = call.class_name
    if run is not None:  # its whole body is one run: the box says what it repeats
        op_type = run_header(run)
        attrs += run_attributes(run)
    return PNode(
        name=call.label,
        op_type=op_type,
        domain=Domain.MODULE,
        role=NodeRole.MODULE_CALL,
        inputs=inputs,
        outputs=outputs,
        attributes=tuple(sorted(attrs)),
        doc=call_node_doc(call, run),
        facts=facts,
        overload=call.label,
    )


def run_attributes(run: RunIR) -> list[tuple[str, str | int]]:
    return [
        (NodeAttr.RUN_CALLS, len(run.calls)),
        (NodeAttr.RUN_FIRST, one_line(run.calls[0])),
        (NodeAttr.RUN_LAST, one_line(run.calls[-1])),
    ]


def run_node(run: RunIR, inputs: tuple[str, ...], outputs: tuple[str, ...], facts: Facts, hidden: str) -> PNode:
    """The box of a run (or of a group of its calls): it calls the run's function."""
    attrs: list[tuple[str, str | int]] = [
        (NodeAttr.CLASS_NAME, one_line(run.class_name)),
        (NodeAttr.MODULE_PATH, one_line(run.address)),
        *run_attributes(run),
    ]
    if run.num_params > 0:
        attrs.append((NodeAttr.NUM_PARAMS, run.num_params))
    if hidden:
        attrs.append((NodeAttr.HIDDEN, hidden))
    return PNode(
        name=run.label,
        op_type=run_header(run),
        domain=Domain.RUN,
        role=NodeRole.MODULE_RUN,
        inputs=inputs,
        outputs=outputs,
        attributes=tuple(sorted(attrs)),
        doc=run_node_doc(run),
        facts=facts,
        overload=run.label,
    )


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

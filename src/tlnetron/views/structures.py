"""Shared by every view: what the model returns, one output per returned field.

TorchLens records where each output tensor sits in the model's return value (``io_role``:
``output.logits``, ``output.cache.layers.3.keys``, ``output.0``). Tensors of one field are
drawn as one output named by the field (``logits``, ``cache``, ``output[0]``): a single
tensor is that tensor's value under the field's name; several are gathered by a structure
node (domain ``ai.torchlens.structure``: it computes nothing) into one value of sequence
type, whose attributes give the count, the paths and the shapes. The module view gathers
them already in the body they leave (:class:`Carrier`), so a run of 32 layers hands one
``cache`` value up instead of 64 tensors.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

from .._generated.vocab import Domain, NodeAttr, NodeRole
from ..ir.drawing import (
    PGraph,
    PNode,
    PValue,
    SequenceType,
    loose_type,
    sequence_type,
    shape_text,
    tensor_type,
    untyped_reason,
)
from ..ir.trace import OpIR
from ..words.text import one_line, shortened

__all__ = [
    "Carrier",
    "Field",
    "field_key",
    "field_name",
    "output_fields",
    "path_text",
    "root_graph",
    "shapes_text",
    "structure_node",
]

_ROOT = "output"


def field_key(returned_as: str | None) -> str | None:
    """The returned field an output tensor belongs to: ``""`` for the whole return value,
    the first path segment otherwise (``logits``, ``cache``, ``0``); None when not known."""
    if returned_as is None:
        return None
    if returned_as == _ROOT:
        return ""
    return returned_as[len(_ROOT) + 1 :].split(".", 1)[0]


def field_name(key: str) -> str:
    """The name Netron shows for a returned field: ``logits``, ``output[0]``, ``output``."""
    if key == "":
        return _ROOT
    if key.isdigit():
        return f"{_ROOT}[{key}]"
    text = re.sub(r"[\r\n]+", " ", key).strip()
    return text or _ROOT


@dataclass(frozen=True, slots=True)
class Field:
    """One field of the model's return value and the output pseudo-ops holding its tensors.

    ``name`` is the value name Netron shows for it; None for an output TorchLens gave no
    place for (each such output is drawn as before, under its producer's name).
    """

    key: str | None
    name: str | None
    members: tuple[OpIR, ...]


def output_fields(outputs: Iterable[OpIR], taken: set[str]) -> tuple[Field, ...]:
    """The model's output pseudo-ops grouped by returned field, in order of first output.

    ``taken`` holds every other name of the export (nodes, values); a field's name that
    clashes gets TorchLens' own spelling (``output.logits``), then a number.
    """
    groups: dict[str, list[OpIR]] = {}
    fields: list[tuple[str | None, list[OpIR]]] = []
    for op in outputs:
        key = field_key(op.returned_as)
        if key is None:
            fields.append((None, [op]))
        elif key in groups:
            groups[key].append(op)
        else:
            groups[key] = [op]
            fields.append((key, groups[key]))
    out: list[Field] = []
    used = set(taken)
    for key, members in fields:
        name = None
        if key is not None:
            name = field_name(key)
            if name in used:
                name = f"{_ROOT}.{key}" if key else _ROOT
                n = 2
                base = name
                while name in used:
                    name = f"{base}#{n}"
                    n += 1
            used.add(name)
        out.append(Field(key, name, tuple(members)))
    return tuple(out)


@dataclass(frozen=True, slots=True)
class Carrier:
    """A value that carries tensors bound for one returned field out of a body: one tensor
    (``leaves`` its output pseudo-ops) or a structure value gathering several."""

    value: str
    leaves: tuple[OpIR, ...]
    structure: bool = False


def _path(op: OpIR) -> str:
    role = op.returned_as or op.name
    return role[len(_ROOT) + 1 :] if role.startswith(_ROOT + ".") else role


def path_text(leaves: Iterable[OpIR]) -> str:
    """Where the tensors sit, runs of indices written ``a..b``:
    ``cache.layers.0..23.keys; cache.layers.0..23.values``."""
    templates: dict[tuple[str, ...], list[tuple[int, ...]]] = {}
    for op in leaves:
        parts = _path(op).split(".")
        shape = tuple("#" if p.isdigit() else p for p in parts)
        templates.setdefault(shape, []).append(tuple(int(p) for p in parts if p.isdigit()))
    out: list[str] = []
    for shape, indices in templates.items():
        slots = len(indices[0]) if indices else 0
        choices = [sorted({ix[i] for ix in indices}) for i in range(slots)]
        full = 1
        for c in choices:
            full *= len(c)
        if full != len(set(indices)):  # not every combination: list them
            out.extend(_fill(shape, [[i] for i in ix]) for ix in indices)
            continue
        out.append(_fill(shape, choices))
    return "; ".join(out)


def _fill(shape: tuple[str, ...], choices: list[list[int]]) -> str:
    it = iter(choices)
    return ".".join(_span(next(it)) if p == "#" else p for p in shape)


def _span(values: list[int]) -> str:
    """``0..23`` for a run of integers, else them listed (``0, 2, 5``)."""
    if len(values) > 1 and values == list(range(values[0], values[-1] + 1)):
        return f"{values[0]}..{values[-1]}"
    return ", ".join(str(v) for v in values)


def shapes_text(leaves: Iterable[OpIR]) -> str:
    """The tensors' dtypes and shapes with how many have each: ``float32 [1, 4, 12, 16] ×48``."""
    seen: Counter[str] = Counter()
    for op in leaves:
        seen[f"{op.dtype or 'unknown dtype'} {shape_text(op.shape)}"] += 1
    return "; ".join(f"{kind} ×{n}" for kind, n in seen.items())


def structure_node(name: str, field: str, carriers: list[Carrier], where: str) -> tuple[PNode, PValue]:
    """The node gathering ``carriers`` (tensors, or structures from inner bodies) into one
    value named ``name``, and that value (a sequence of the tensors' type)."""
    leaves = tuple(leaf for c in carriers for leaf in c.leaves)
    paths = path_text(leaves)
    shapes = shapes_text(leaves)
    attrs: list[tuple[str, str | int]] = [
        (NodeAttr.STRUCTURE_FIELD, one_line(field)),
        (NodeAttr.TENSOR_COUNT, len(leaves)),
        (NodeAttr.PATHS, shortened(paths)),
        (NodeAttr.SHAPES, shortened(shapes)),
    ]
    doc = (
        f"Structure: {len(leaves)} tensors {where} to become the model's output `{field}`, "
        "gathered into one value (a sequence). Not a traced op: it computes nothing.\n"
        f"paths: {paths}\nshapes: {shapes}"
    )
    node = PNode(
        name=name,
        op_type=f"{field} ×{len(leaves)}",
        domain=Domain.STRUCTURE,
        role=NodeRole.STRUCTURE,
        inputs=tuple(c.value for c in carriers),
        outputs=(name,),
        attributes=tuple(sorted(attrs)),
        doc=doc,
    )
    value = PValue(
        name,
        sequence_type([op.shape for op in leaves], [op.dtype for op in leaves]),
        doc=f"{len(leaves)} tensors of the model's output `{field}`: {shapes}",
    )
    return node, value


def _graph_inputs(inputs: list[OpIR], input_values: dict[str, PValue]) -> tuple[list[PValue], list[PNode]]:
    """Typed graph inputs, and an ``input`` node for each input whose rank is unknown (ONNX
    graph inputs must state a shape)."""
    g_inputs: list[PValue] = []
    in_nodes: list[PNode] = []
    for op in inputs:
        v = input_values[op.name]
        if v.io_type is not None:
            g_inputs.append(v)
            continue
        in_nodes.append(
            PNode(
                name=op.name,
                op_type="input",
                domain=Domain.LOSSY,
                role=NodeRole.INPUT,
                inputs=(),
                outputs=(op.name,),
                attributes=((NodeAttr.UNTYPED_OUTPUT, untyped_reason(op.shape, op.dtype)),),
                doc=f"TorchLens input {op.name}: its shape is not known, "
                "so it is drawn as a node rather than a typed graph input.",
            )
        )
    return g_inputs, in_nodes


def _output_node(
    op: OpIR, name: str, parent: str | None, source: PValue | None, reachable: bool
) -> tuple[PNode, PValue | None]:
    """An ``output`` node of its own for a model output that cannot be a graph output by
    itself: it repeats another output or a model input, or its rank is unknown."""
    ty = source.io_type if source is not None else None
    if ty is None:
        ty = tensor_type(op.shape, op.dtype) or loose_type([op.shape], [op.dtype])
    stated = ty is not None
    node = PNode(
        name=op.name,
        op_type="output",
        domain=Domain.LOSSY,
        role=NodeRole.OUTPUT,
        inputs=(parent,) if (parent and reachable) else (),
        outputs=(name,),
        doc=(
            f"TorchLens output pseudo-op {op.name}: "
            + (
                "this model output repeats another output or a model input."
                if stated
                else "its shape is not known, so it is not declared as a typed graph output."
            )
        ),
    )
    return node, (PValue(name, ty, doc=f"model output {op.name}") if stated else None)


def _held(members: Sequence[OpIR], given: Iterable[Carrier]) -> list[Carrier]:
    """The values that carry a field's tensors, in the field's order: the carriers given, and
    each remaining tensor's own producer."""
    held = list(given)
    covered = {id(leaf) for c in held for leaf in c.leaves}
    own: dict[str, list[OpIR]] = {}
    for op in members:
        if id(op) not in covered and op.parents:
            own.setdefault(op.parents[0], []).append(op)
    held += [Carrier(value, tuple(leaves)) for value, leaves in own.items()]
    order = {id(op): i for i, op in enumerate(members)}
    held.sort(key=lambda c: min(order[id(leaf)] for leaf in c.leaves))
    return held


class _Returned:
    """The root graph's outputs as its fields are met: graph outputs, output nodes, and the
    values renamed to the field they are returned as."""

    def __init__(self, produced: dict[str, PValue], input_values: dict[str, PValue], graph_inputs: set[str]) -> None:
        self.produced = produced
        self.input_values = input_values
        self.graph_inputs = graph_inputs
        self.rename: dict[str, str] = {}
        self.nodes: list[PNode] = []
        self.outputs: list[PValue] = []
        self.used: set[str] = set()  # values already returned under some name

    def _returnable(self, value: str) -> bool:
        source = self.produced.get(value)
        return source is not None and source.io_type is not None and value not in self.used and value not in self.rename

    def _output_node(self, op: OpIR, name: str, parent: str | None) -> PValue | None:
        source = self.produced.get(parent) if parent else None
        if source is None and parent in self.input_values:
            source = self.input_values[parent]
        reach = parent is not None and (parent in self.produced or parent in self.input_values)
        node, value = _output_node(op, name, self.rename.get(parent or "", parent), source, reach)
        self.nodes.append(node)
        if value is not None:
            self.outputs.append(value)
        return value

    def unplaced(self, op: OpIR) -> None:
        """A returned tensor with no place in the return value, under its producer's name."""
        parent = op.parents[0] if op.parents else None
        if parent is not None and self._returnable(parent) and parent not in self.graph_inputs:
            source = self.produced[parent]
            self.outputs.append(PValue(parent, source.type, doc=f"model output {op.name}", loose=source.loose))
            self.used.add(parent)
        elif self._output_node(op, op.name, parent) is not None:
            self.used.add(op.name)

    def single(self, name: str, op: OpIR, held: list[Carrier]) -> None:
        """A field of one tensor: its value renamed to the field, else an output node."""
        parent = held[0].value if held else None
        if parent is not None and self._returnable(parent) and parent not in self.graph_inputs:
            source = self.produced[parent]
            self.rename[parent] = name
            doc = f"model output `{name}` ({_path(op)})"
            self.outputs.append(PValue(name, source.type, doc=doc, loose=source.loose))
            self.used.add(parent)
        else:
            self._output_node(op, name, parent)

    def several(self, name: str, held: list[Carrier]) -> None:
        """A field of several tensors: one structure value, gathered here unless one carrier
        holds them all already."""
        if len(held) == 1 and held[0].structure and self._returnable(held[0].value):
            source = self.produced[held[0].value]
            self.rename[held[0].value] = name
            self.outputs.append(PValue(name, source.type, doc=source.doc))
            self.used.add(held[0].value)
            return
        inputs_of = [Carrier(self.rename.get(c.value, c.value), c.leaves, c.structure) for c in held]
        node, value = structure_node(name, name, inputs_of, "returned by the model")
        self.nodes.append(node)
        self.outputs.append(value)


def root_graph(
    name: str,
    nodes: list[PNode],
    produced: dict[str, PValue],
    inputs: list[OpIR],
    outputs: list[OpIR],
    input_values: dict[str, PValue],
    doc: str = "",
    *,
    carriers: Mapping[str, list[Carrier]] | None = None,
    taken: set[str] | None = None,
) -> PGraph:
    """The root graph: the view's nodes between the model's inputs and its returned fields.

    ``produced`` holds the values the nodes produce, in node order. ``carriers`` (module
    view) gives, per field key, the root-scope values that carry its tensors (structures
    gathered inside bodies); tensors no carrier covers are carried by their own value.
    A field of one tensor is that tensor's value renamed to the field; a field of several
    is one structure value (gathered by a structure node at the root unless a single
    carrier holds them all already). ``taken``: names a field may not take (default: the
    names in this graph).
    """
    g_inputs, in_nodes = _graph_inputs(inputs, input_values)
    if taken is None:
        taken = {n.name for n in nodes} | set(produced) | set(input_values)
    returned = _Returned(produced, input_values, {v.name for v in g_inputs})
    for field in output_fields(outputs, taken):
        if field.name is None:  # TorchLens gave it no place: drawn under its producer's name
            returned.unplaced(field.members[0])
            continue
        held = _held(field.members, (carriers or {}).get(field.key or "", ()))
        if len(field.members) == 1:
            returned.single(field.name, field.members[0], held)
        else:
            returned.several(field.name, held)
    rename, out_nodes, g_outputs = returned.rename, returned.nodes, returned.outputs
    if rename:
        nodes = [_renamed(n, rename) for n in nodes]
        produced = {rename.get(k, k): (replace(v, name=rename[k]) if k in rename else v) for k, v in produced.items()}
    out_names = {v.name for v in g_outputs}
    aliases = tuple((new, old) for old, new in rename.items() if not _is_structure(produced.get(new)))
    return PGraph(
        name=name,
        nodes=(*in_nodes, *nodes, *out_nodes),
        inputs=tuple(g_inputs),
        outputs=tuple(g_outputs),
        values=tuple(v for key, v in produced.items() if key not in out_names),
        doc=doc,
        aliases=aliases,
    )


def _is_structure(value: PValue | None) -> bool:
    return value is not None and isinstance(value.type, SequenceType)


def _renamed(node: PNode, rename: Mapping[str, str]) -> PNode:
    if not any(v in rename for v in node.inputs) and not any(v in rename for v in node.outputs):
        return node
    return replace(
        node,
        inputs=tuple(rename.get(v, v) for v in node.inputs),
        outputs=tuple(rename.get(v, v) for v in node.outputs),
    )

"""A projection of the trace, ready to become ONNX (shared by all views).

A projection is the graph tlnetron will draw: nodes with curated properties, typed values,
and (module view) function bodies. Views (:mod:`view_op`, :mod:`view_rolled`,
:mod:`view_module`) build it from the IR; :mod:`onnx_build` and :mod:`companion` read it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .._records import record
from ..perf import export_memo
from .facts import DiffFacts, Facts
from .trace import Dim

__all__ = [
    "RunIR",
    "Runs",
    "ELEM_TYPES",
    "DepthChoice",
    "Opening",
    "PFunction",
    "PGraph",
    "PNode",
    "PValue",
    "Projection",
    "SequenceType",
    "TensorType",
    "ValueType",
    "shape_text",
    "loose_type",
    "sequence_type",
    "tensor_type",
    "untyped_reason",
]

# torch dtype name -> ONNX TensorProto.DataType, for IR version 10. Dtypes missing here have
# no faithful ONNX element type (e.g. complex32, quantized dtypes, packed float4 x2); their
# edges stay untyped and the producing node says why.
ELEM_TYPES: dict[str, int] = {
    "float32": 1,
    "uint8": 2,
    "int8": 3,
    "uint16": 4,
    "int16": 5,
    "int32": 6,
    "int64": 7,
    "bool": 9,
    "float16": 10,
    "float64": 11,
    "uint32": 12,
    "uint64": 13,
    "complex64": 14,
    "complex128": 15,
    "bfloat16": 16,
    "float8_e4m3fn": 17,
    "float8_e4m3fnuz": 18,
    "float8_e5m2": 19,
    "float8_e5m2fnuz": 20,
    "uint4": 21,
    "int4": 22,
}


@record
class TensorType:
    """A value's element type and shape; a None dim is unknown, elem_type 0 is UNDEFINED.

    Faithful types (:func:`tensor_type`) have every dim and a real element type; loose
    types (:func:`loose_type`) exist only where ONNX demands a type (graph inputs/outputs).
    """

    elem_type: int
    shape: tuple[int | None, ...]


@record
class SequenceType:
    """A structure value's type: a sequence of tensors (ONNX ``sequenceType``), the element
    type as much as every tensor in it agrees on (``shape`` None: their ranks differ)."""

    elem_type: int
    shape: tuple[int | None, ...] | None


ValueType = TensorType | SequenceType
"""What a value can be typed as: a traced tensor, or a structure of them."""


def sequence_type(shapes: list[tuple[Dim, ...] | None], dtypes: list[str | None]) -> SequenceType:
    """The type of a structure holding tensors of these shapes and dtypes."""
    loose = loose_type(shapes, dtypes)
    if loose is not None:
        return SequenceType(loose.elem_type, loose.shape)
    kinds = set(dtypes)
    elem = ELEM_TYPES.get(str(next(iter(kinds)))) if len(kinds) == 1 else None
    return SequenceType(elem or 0, None)


def tensor_type(shape: tuple[Dim, ...] | None, dtype: str | None) -> TensorType | None:
    """The ONNX type of a traced tensor, or None when it cannot be stated faithfully."""
    if shape is None or dtype is None:
        return None
    elem = ELEM_TYPES.get(dtype)
    if elem is None:
        return None
    dims: list[int] = []
    for d in shape:
        if not isinstance(d, int) or isinstance(d, bool) or d < 0:
            return None
        dims.append(d)
    return TensorType(elem, tuple(dims))


def loose_type(shapes: list[tuple[Dim, ...] | None], dtypes: list[str | None]) -> TensorType | None:
    """The most a type can honestly say about values seen with these shapes and dtypes.

    Dims that agree and are ints keep their size, others are unknown; the element type is
    UNDEFINED (0) unless every dtype agrees and has an ONNX type. None when the rank itself
    is unknown or differs.
    """
    if not shapes or any(s is None for s in shapes):
        return None
    ranks = {len(s) for s in shapes if s is not None}
    if len(ranks) != 1:
        return None
    dims: list[int | None] = []
    for i in range(ranks.pop()):
        seen = {s[i] for s in shapes if s is not None}
        only = next(iter(seen)) if len(seen) == 1 else None
        dims.append(only if isinstance(only, int) and not isinstance(only, bool) and only >= 0 else None)
    kinds = set(dtypes)
    elem = ELEM_TYPES.get(str(next(iter(kinds)))) if len(kinds) == 1 else None
    return TensorType(elem or 0, tuple(dims))


def untyped_reason(shape: tuple[Dim, ...] | None, dtype: str | None) -> str:
    """Why :func:`tensor_type` returned None, worded for the sidebar."""
    if dtype is None:
        return "the output is not a tensor TorchLens recorded a dtype for"
    if dtype not in ELEM_TYPES:
        return f"torch.{dtype} has no ONNX element type; shape {shape_text(shape)} kept here"
    return f"the shape {shape_text(shape)} is not one static shape"


@export_memo
def shape_text(shape: tuple[Dim, ...] | None) -> str:
    if shape is None:
        return "unknown"
    return "[" + ", ".join(str(d) for d in shape) + "]"


@record
class PValue:
    """A named value (an edge); ``type`` None means untyped (disclosed on its producer).

    ``loose`` is what can still be said of an untyped value (see :func:`loose_type`); it is
    used only where ONNX requires a type (graph inputs and outputs).
    """

    name: str
    type: ValueType | None
    doc: str = ""
    loose: TensorType | None = None

    @property
    def io_type(self) -> ValueType | None:
        return self.type if self.type is not None else self.loose


@record
class PNode:
    """One node Netron draws.

    ``attributes`` and ``metadata`` are sorted ``(name, value)`` pairs matching
    ``schema/node-properties.schema.json``; ``facts`` feed the companion.
    ``overload`` names the function a module-call node resolves to (module view), ``diff``
    holds its diff facts when the export has a baseline.
    """

    name: str
    op_type: str
    domain: str
    role: str
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    attributes: tuple[tuple[str, str | int], ...] = ()
    metadata: tuple[tuple[str, str], ...] = ()
    doc: str = ""
    facts: Facts = field(default_factory=Facts)
    diff: DiffFacts | None = None
    overload: str = ""


@dataclass(frozen=True, slots=True)
class PGraph:
    """A graph body: the root graph, or a function body."""

    name: str
    nodes: tuple[PNode, ...]
    inputs: tuple[PValue, ...]
    outputs: tuple[PValue, ...]
    values: tuple[PValue, ...]
    doc: str = ""
    aliases: tuple[tuple[str, str], ...] = ()
    """Values drawn under a model output field's name: ``(drawn name, the op's value name)``,
    so the companion states the op's tensor under the name Netron shows."""


@dataclass(frozen=True, slots=True)
class PFunction:
    """A FunctionProto: one module call (module view), keyed by ``(domain, name, overload)``."""

    name: str
    domain: str
    body: PGraph
    overload: str = ""


@dataclass(frozen=True, slots=True)
class Projection:
    """What a view hands to the builders."""

    granularity: str
    graph: PGraph
    functions: tuple[PFunction, ...] = ()
    depth: int | None = None
    depth_reason: str | None = None
    inlined_calls: int = 0
    show_buffers: str = "meaningful"
    hidden_buffers: int = 0
    hidden_ops: int = 0
    side_ops: int = 0
    """Ops not drawn because none of their results reach a model output (module view)."""
    root_ranks: int = 0
    totals: Facts = field(default_factory=Facts)
    run_count: int = 0
    """Runs of repeated module calls drawn as one box each (module view)."""


@dataclass(frozen=True, slots=True)
class Opening:
    """One step of the automatic depth: the blocks it opened and what the root drew before."""

    blocks: tuple[tuple[str, int, bool], ...]
    """Each block opened: (module address, or run label; ops it holds; whether it is a run)."""
    boxes: int
    """Boxes of substance the root drew before the step."""
    drawn: tuple[str, ...]
    """The boxes it drew: module addresses, or run labels."""
    ops_drawn: int
    """Ops of substance among them."""
    total: int
    """Ops of the whole model."""


@dataclass(frozen=True, slots=True)
class DepthChoice:
    """What the automatic module view opens, how deep it reaches, and the steps that led there."""

    opened: set[str]
    opened_runs: frozenset[str]
    reached: int
    wrappers: tuple[str, ...] = ()
    """Addresses of the single-call wrappers it descended through."""
    steps: tuple[Opening, ...] = ()

    @property
    def grouped(self) -> bool:
        """The root is not depth 1's: the choice has a reason to state."""
        return bool(self.opened or self.opened_runs)


@record
class RunIR:
    """A run drawn as one box (or a group of one run's calls, ``group_of`` its run).

    ``label`` is the node's name: the container's address (``model.layers``), with the
    indices it covers (``model.layers[0..9]``) for a group or when one container has
    several runs. ``parent`` is the body it is drawn in: a kept call's label, another
    run's (a group's run) or None for the root.
    """

    label: str
    address: str
    class_name: str
    calls: tuple[str, ...]
    parent: str | None
    first: int
    last: int
    group_of: str | None = None
    skips: int = 0
    """Values one call hands to a later, not the next, call (a bias the first computes)."""
    num_params: int = 0


@dataclass
class Runs:
    """What :func:`find_runs` found among the kept calls."""

    boxes: dict[str, RunIR] = field(default_factory=dict)
    """Run boxes and group boxes, by label, outermost first."""
    placed: dict[str, tuple[str, ...]] = field(default_factory=dict)
    """Kept call -> the run (and group) labels inserted before it in an op's call chain."""
    container: dict[str, RunIR] = field(default_factory=dict)
    """Kept call whose whole body is one run -> that run (drawn by the call's own box)."""
    notes: dict[str | None, list[str]] = field(default_factory=dict)
    """Body (call label, None for the root) -> why repeated calls there are not a run."""
    opened: dict[str, RunIR] = field(default_factory=dict)
    """Runs drawn open where they stand (by label): their groups, or their calls."""

    def count(self) -> int:
        """Runs found: drawn as a box, said on their container call's box, or drawn open."""
        return sum(1 for r in self.boxes.values() if r.group_of is None) + len(self.container) + len(self.opened)

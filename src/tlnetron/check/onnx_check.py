"""The onnx checker's full check, run split into pieces when onnx's own would be quadratic.

onnx 1.23's full check costs time quadratic in the model-local functions
(:func:`checker_is_quadratic`); :func:`check_onnx` then checks the functions in pieces with
the same rules, linear in them.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator

from .._generated.vocab import Domain
from ..build import _onnx as onnx  # onnx without its __init__ (numpy, ml_dtypes)
from ..perf import checker_allocator

__all__ = [
    "QUADRATIC_CHECK_FROM_FUNCTIONS",
    "SPLIT_CHECK_FROM_FUNCTIONS",
    "check_onnx",
    "checker_is_quadratic",
    "split_check_refusal",
]

QUADRATIC_CHECK_FROM_FUNCTIONS = 2_000
"""From this many model-local functions, a quadratic checker's extra cost is as large as the
rest of the export (``benchmarks/checker_functions.py``)."""


def checker_is_quadratic(onnx_version: str | None = None) -> bool:
    """Whether this onnx's full check costs time quadratic in the model-local functions.

    onnx 1.23.0 made shape inference's ``GraphInferenceContext`` own a copy of the map of
    every model-local function (onnx PR 8330, a use-after-scope fix), and inference builds
    one context per function call it enters: F calls x F entries (``benchmarks/README.md``,
    checker_functions.py). 1.23.0-1.23.2 have the copy; later releases count as affected
    until one drops it.
    """
    text = onnx.__version__ if onnx_version is None else onnx_version
    parts: list[int] = []
    for piece in text.split(".")[:2]:
        digits = "".join(itertools.takewhile(str.isdigit, piece))
        if not digits:
            return False
        parts.append(int(digits))
    return len(parts) == 2 and tuple(parts) >= (1, 23)


SPLIT_CHECK_FROM_FUNCTIONS = 256
"""From this many model-local functions, on a quadratic onnx (:func:`checker_is_quadratic`),
:func:`check_onnx` runs the full check split (:func:`_split_full_check`) when the model
allows it: below, the real check is cheap and runs as it is (benchmarks/checker_functions.py)."""

_SPLIT_CHUNK = 64
"""Function bodies per piece of a split check: each piece's inference copies a map of about
this many functions per call (onnx 1.23), so the split check costs ~F x 64 entry copies."""

_CALLED = (Domain.MODULE, Domain.RUN)
"""Domains whose nodes call a function of the model (a module call, a run)."""
_UNCALLED = (Domain.LOSSY, Domain.STRUCTURE)
"""Domains whose nodes call no function (ops and pseudo-ops, structure nodes)."""
_STUB = "__tlnetron_stub__"
_GRAPH_ATTRIBUTES = (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS)


def _function_id(domain: str, name: str, overload: str) -> str:
    """How onnx's shape inference keys a model-local function (``GetFunctionIdentifier`` in
    ``onnx/shape_inference/implementation.cc``), and a call node's lookup into them."""
    return f"{domain}:{name}:{overload}" if overload else f"{domain}:{name}"


def split_check_refusal(model: onnx.ModelProto) -> str | None:
    """Why :func:`_split_full_check` would not give ``check_model(full_check=True)``'s verdict
    on ``model``; None when it does. tlnetron's artifacts all qualify; anything else is
    checked the real way.

    The split is exact when shape inference cannot derive a type anywhere, so a function call
    hands nothing back to its caller but the exceptions of its body (onnx 1.23.2,
    ``implementation.cc``: ``Process(NodeProto&)``, ``Process(const FunctionProto&, ...)``):
    every node is in a domain with no registered op schema and is either a call to a function
    of the model (the module domain) or no function at all (the lossy domain); no function
    returns one of its inputs; no node holds a subgraph or an attribute reference; functions
    take no attributes; no two functions share an inference key.
    """
    ids: set[str] = set()
    for f in model.functions:
        if f.domain not in _CALLED:
            return f"function {f.name!r} is in domain {f.domain!r}"
        if f.attribute or f.attribute_proto:
            return f"function {f.name!r} takes attributes"
        if not set(f.output).isdisjoint(f.input):
            return f"function {f.name!r} returns one of its inputs"
        key = _function_id(f.domain, f.name, f.overload)
        if key in ids:
            return f"two functions share the key {key!r}"
        ids.add(key)
    ops: set[tuple[str, str]] = set()
    for body in (model.graph, *model.functions):
        for n in body.node:
            if n.domain in _CALLED:
                if _function_id(n.domain, n.op_type, n.overload) not in ids:
                    return f"node {n.name!r} calls no function of the model"
            elif n.domain not in _UNCALLED:
                return f"node {n.name!r} is in domain {n.domain!r}"
            for a in n.attribute:
                if a.ref_attr_name or a.type in _GRAPH_ATTRIBUTES:
                    return f"node {n.name!r} holds a subgraph or an attribute reference"
            ops.add((n.op_type, n.domain))
    ops.add((_STUB, Domain.MODULE))
    for op_type, domain in ops:
        if onnx.defs.has(op_type, domain):
            return f"an op schema is registered for {domain}.{op_type}"
    return None


def _split_pieces(model: onnx.ModelProto) -> Iterator[onnx.ModelProto]:
    """The models :func:`_split_full_check` infers: the real graph with every call retargeted
    to a stub of the callee's arity, then the function bodies, ``_SPLIT_CHUNK`` at a time,
    each called once from a graph of its own with its own calls retargeted to stubs."""
    by_id = {_function_id(f.domain, f.name, f.overload): f for f in model.functions}
    stubs: dict[tuple[int, int], onnx.FunctionProto] = {}

    def retarget(nodes: Iterable[onnx.NodeProto]) -> None:
        for n in nodes:
            if n.domain not in _CALLED:
                continue
            f = by_id[_function_id(n.domain, n.op_type, n.overload)]
            arity = (len(f.input), len(f.output))
            stub = stubs.get(arity)
            if stub is None:
                stub = stubs[arity] = onnx.FunctionProto(
                    name=_STUB, domain=Domain.MODULE, overload=f"{arity[0]}_{arity[1]}"
                )
                stub.input.extend(f"i{i}" for i in range(arity[0]))
                stub.output.extend(f"o{i}" for i in range(arity[1]))
                stub.node.add(op_type=_STUB, domain=Domain.LOSSY, input=stub.input, output=stub.output)
                stub.opset_import.add(domain=Domain.LOSSY, version=1)
            n.op_type, n.overload, n.domain = _STUB, stub.overload, Domain.MODULE

    def shell() -> onnx.ModelProto:
        piece = onnx.ModelProto(ir_version=model.ir_version)
        piece.opset_import.extend(model.opset_import)
        if all(o.domain != Domain.LOSSY for o in model.opset_import):
            piece.opset_import.add(domain=Domain.LOSSY, version=1)
        return piece

    top = shell()
    top.graph.CopyFrom(model.graph)
    retarget(top.graph.node)
    top.functions.extend(stubs.values())
    yield top
    functions = list(model.functions)
    for start in range(0, len(functions), _SPLIT_CHUNK):
        piece = shell()
        piece.graph.name = "bodies"
        for j, f in enumerate(functions[start : start + _SPLIT_CHUNK]):
            body = piece.functions.add()
            body.CopyFrom(f)
            retarget(body.node)
            ins = [f"b{j}_i{i}" for i in range(len(f.input))]
            piece.graph.input.extend(onnx.ValueInfoProto(name=name) for name in ins)
            piece.graph.node.add(
                op_type=f.name,
                domain=f.domain,
                overload=f.overload,
                input=ins,
                output=[f"b{j}_o{i}" for i in range(len(f.output))],
            )
        piece.functions.extend(stubs.values())
        yield piece


def _split_full_check(data: bytes | onnx.ModelProto, model: onnx.ModelProto) -> None:
    """``check_model(data, full_check=True)``'s verdict, in time linear in the functions on
    onnx 1.23, for a model :func:`split_check_refusal` accepts.

    onnx 1.23's full check is ``check_model`` (structural) then ``InferShapes(model, {check_type,
    strict, no data propagation})`` (``onnx/checker.cc``, ``check_model(const ModelProto&,
    bool full_check, ...)``). The structural part runs here as it is, on the same bytes. The
    inference builds a ``ShapeInferenceImplBase`` per function call, and since onnx 1.23.0
    each one copies the map of all F functions into its ``GraphInferenceContext``
    (``implementation.h``, ``model_local_functions``): F calls x F entries. Here the same
    inference (``onnx.shape_inference.infer_shapes``, strict, with type checks: the same
    ``InferShapes`` call) runs on pieces holding at most ``_SPLIT_CHUNK`` functions plus a
    stub per call arity: the graph with its calls retargeted to stubs, then every function
    body, called once from a graph of its own, its calls retargeted to stubs. Under the
    refusal's conditions a call hands its caller nothing but its body's exceptions, and a
    stub hands nothing, so each scope (the graph, every body) is inferred as in the real
    check; every body's errors are reported here, where the real check may drop some (after
    an op without schema, ``has_unsupported_op``), so a split failure is confirmed by the
    real check, whose verdict and message then stand.
    """
    onnx.checker.check_model(data)
    try:
        for piece in _split_pieces(model):
            onnx.shape_inference.infer_shapes(piece, check_type=True, strict_mode=True, data_prop=False)
    except onnx.shape_inference.InferenceError:
        onnx.checker.check_model(data, full_check=True)


def check_onnx(
    model: onnx.ModelProto | bytes, *, functions: int | None = None, split: list[bool] | None = None
) -> str | None:
    """Run ``onnx.checker.check_model(full_check=True)`` on a model or its serialized bytes;
    the failure text, or None.

    On a quadratic onnx, a model with many functions (``functions``, when the caller knows
    their count) is checked split (:func:`_split_full_check`, the same verdict) when
    :func:`split_check_refusal` allows; ``split``, when given, receives whether it was.
    """
    size = len(model) if isinstance(model, bytes) else model.ByteSize()
    parsed: onnx.ModelProto | None = None
    if checker_is_quadratic() and (functions is None or functions >= SPLIT_CHECK_FROM_FUNCTIONS):
        if isinstance(model, bytes):
            parsed = onnx.ModelProto()
            parsed.ParseFromString(model)
        else:
            parsed = model
        if len(parsed.functions) < SPLIT_CHECK_FROM_FUNCTIONS or split_check_refusal(parsed) is not None:
            parsed = None
    if split is not None:
        split.append(parsed is not None)
    try:
        with checker_allocator(size):
            if parsed is not None:
                _split_full_check(model, parsed)
            else:
                onnx.checker.check_model(model, full_check=True)
    except (onnx.checker.ValidationError, onnx.shape_inference.InferenceError) as exc:
        return str(exc).strip()
    return None

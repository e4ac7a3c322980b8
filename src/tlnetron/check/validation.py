"""Validation: what ``export`` checks before writing and ``tlnetron validate`` reports.

Problems are *collected* (``iter_*`` functions yield :class:`~tlnetron.errors.Problem`),
each with a stable code, where it is, and what is wrong. The companion rules live once: the
companion schema plus :func:`companion_problems`'s cross-reference check (targets name
something Netron shows; no two rows share kind, target and name; values are finite). A
companion that belongs to another export is named once (:func:`pair_mismatch`), not row by
row.
"""

from __future__ import annotations

import itertools
import json
import math
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import orjson
from google.protobuf import json_format

from .._generated.vocab import (
    CompanionKind,
    CompanionRow,
    Domain,
    ErrorCode,
    MetaKey,
    NodeRole,
    ValidationCode,
)
from ..build import _onnx as onnx  # onnx without its __init__ (numpy, ml_dtypes)
from ..build.metadata import decode_metadata
from ..errors import Problem, TlnetronError
from ..perf import checker_allocator
from ..read.files import MAX_DEPTH, too_deep
from .schemas import SchemaViolation, validate

__all__ = [
    "MISMATCH_MIN_ROWS",
    "SPLIT_CHECK_FROM_FUNCTIONS",
    "Shown",
    "artifact_export_id",
    "artifact_problems",
    "check_onnx",
    "checker_is_quadratic",
    "companion_export_id",
    "companion_problems",
    "mismatched_pair",
    "pair_mismatch",
    "parse_artifact",
    "shown_in_model",
    "split_check_refusal",
]

_SNAKE = ("ir_version", "producer_name", "opset_import", "metadata_props")
_CAMEL = ("irVersion", "producerName", "opsetImport", "metadataProps")


@dataclass(frozen=True, slots=True)
class Shown:
    """Names Netron shows, per companion kind (matched up to the first newline)."""

    nodes: frozenset[str]
    values: frozenset[str]
    functions: frozenset[str]
    tensors: frozenset[str] = frozenset()
    export_id: str | None = None
    """The artifact's export id (its ``torchlens.export_id`` model metadata, which Netron
    shows in Model Properties), or None when it has none."""

    def by_kind(self) -> dict[str, frozenset[str]]:
        """Names each companion kind can target."""
        return {
            CompanionKind.NODE: self.nodes,
            CompanionKind.VALUE: self.values,
            CompanionKind.GRAPH: self.functions | {""},
            CompanionKind.TENSOR: self.tensors,
            CompanionKind.MODEL: frozenset({""}),
        }


def _first_line(name: str) -> str:
    return name.split("\n", 1)[0]


def shown_in_model(model: onnx.ModelProto) -> Shown:
    """What Netron shows for ``model``: node names of the top graph and every function body."""
    nodes: set[str] = set()
    values: set[str] = set()
    for body in (model.graph, *model.functions):
        for n in body.node:
            if n.name:
                nodes.add(_first_line(n.name))
            values.update(_first_line(o) for o in n.output if o)
    values.update(_first_line(v.name) for v in (*model.graph.input, *model.graph.output))
    for f in model.functions:
        values.update(_first_line(v) for v in (*f.input, *f.output))
    return Shown(
        nodes=frozenset(nodes),
        values=frozenset(values),
        functions=frozenset(f.name for f in model.functions),
        tensors=frozenset(t.name for t in model.graph.initializer),
        export_id=artifact_export_id(model),
    )


def _shown_in_json(data: Mapping[str, Any]) -> Shown:
    """:func:`shown_in_model` for an artifact's parsed JSON (camelCase protobuf JSON)."""

    def items(obj: Any, key: str) -> list[Any]:
        value = obj.get(key) if isinstance(obj, Mapping) else None
        return value if isinstance(value, list) else []

    def names(objs: Iterable[Any], key: str = "name") -> Iterator[str]:
        for obj in objs:
            name = obj.get(key) if isinstance(obj, Mapping) else obj
            if isinstance(name, str) and name:
                yield _first_line(name)

    graph = data.get("graph") if isinstance(data.get("graph"), Mapping) else {}
    functions = items(data, "functions")
    nodes: set[str] = set()
    values: set[str] = set()
    for body in (graph, *functions):
        body_nodes = items(body, "node")
        nodes.update(names(body_nodes))
        for n in body_nodes:
            values.update(names(items(n, "output"), ""))
    values.update(names((*items(graph, "input"), *items(graph, "output"))))
    for f in functions:
        values.update(names((*items(f, "input"), *items(f, "output")), ""))
    return Shown(
        nodes=frozenset(nodes),
        values=frozenset(values),
        functions=frozenset(n for n in names(functions)),
        tensors=frozenset(names(items(graph, "initializer"))),
        export_id=artifact_export_id(data),
    )


_ID_ROW = (CompanionKind.MODEL, "", CompanionRow.TORCHLENS_EXPORT_ID)


def artifact_export_id(artifact: onnx.ModelProto | Mapping[str, Any]) -> str | None:
    """The artifact's export id: its first ``torchlens.export_id`` model metadata row (as
    tlnetron decodes metadata), from the model or its parsed JSON; None when it has none."""
    if isinstance(artifact, onnx.ModelProto):
        for prop in artifact.metadata_props:
            if prop.key == MetaKey.EXPORT_ID:
                return str(prop.value)
        return None
    rows = artifact.get("metadataProps")
    for row in rows if isinstance(rows, list) else ():
        if isinstance(row, Mapping) and row.get("key") == MetaKey.EXPORT_ID:
            value = row.get("value", "")  # protobuf JSON leaves out an empty string
            if isinstance(value, str):
                return value
            return None
    return None


def companion_export_id(companion: Any) -> str | None:
    """The companion's export id: the value of its last model row ``torchlens.export_id``
    with the empty target in ``metadata`` (Netron keeps the last of equal rows); None when
    it has none, or when that value is not a string."""
    rows = companion.get("metadata") if isinstance(companion, Mapping) else None
    found: str | None = None
    for row in rows if isinstance(rows, list) else ():
        if isinstance(row, Mapping) and (row.get("kind"), row.get("target"), row.get("name")) == _ID_ROW:
            value = row.get("value")
            found = value if isinstance(value, str) else None
    return found


MISMATCH_MIN_ROWS = 3
"""When only one of the two files has an export id, a companion is named as another
export's when at least this many of its rows, and more than half of those that target
something other than the model, target names the artifact does not show."""


def _unshown_rows(companion: Any, shown: Shown) -> tuple[int, int]:
    """(rows targeting something other than the model, those whose target is not shown)."""
    targets = shown.by_kind()
    targeted = unshown = 0
    for section in ("metadata", "metrics"):
        rows = companion.get(section) if isinstance(companion, Mapping) else None
        for row in rows if isinstance(rows, list) else ():
            if not isinstance(row, Mapping) or row.get("kind") == CompanionKind.MODEL:
                continue
            kind, target = row.get("kind"), row.get("target")
            names = targets.get(kind) if isinstance(kind, str) else None
            if names is None or not isinstance(target, str):
                continue  # not a row Netron matches by target: the row checks report it
            targeted += 1
            unshown += target not in names
    return targeted, unshown


def _mismatch(artifact_id: str | None, companion: Any, shown: Callable[[], Shown]) -> Problem | None:
    companion_id = companion_export_id(companion)
    if artifact_id is None and companion_id is None:
        return None  # files without ids (other tools, older tlnetron): checked row by row
    code = ValidationCode.COMPANION_MISMATCH
    remedy = "use the companion written beside this artifact by the same export (<stem>.attachment.json)"
    if artifact_id is not None and companion_id is not None:
        if artifact_id == companion_id:
            return None
        return Problem(
            code,
            "companion",
            f"the companion belongs to another export: its {MetaKey.EXPORT_ID} is {companion_id!r}, "
            f"the artifact's is {artifact_id!r} (its rows are not checked one by one against this artifact); {remedy}",
        )
    targeted, unshown = _unshown_rows(companion, shown())
    if unshown < MISMATCH_MIN_ROWS or 2 * unshown <= targeted:
        return None
    which, other = ("artifact", "companion") if artifact_id is not None else ("companion", "artifact")
    return Problem(
        code,
        "companion",
        f"the companion seems to belong to another model: {unshown} of its {targeted} rows target names this "
        f"artifact does not show (not listed one by one), and only the {which} has a {MetaKey.EXPORT_ID} "
        f"(the {other} was written by another tool or an older tlnetron); {remedy}",
    )


def pair_mismatch(artifact: onnx.ModelProto | Mapping[str, Any] | str | bytes, companion: Any) -> Problem | None:
    """Whether ``companion`` belongs to another export than ``artifact``: one problem, or None.

    When both files have an export id, the pair matches exactly when the ids are equal.
    When only one has an id, the companion is named as another model's when most of its
    rows (at least :data:`MISMATCH_MIN_ROWS`) target names the artifact does not show.
    Files without ids (other tools, tlnetron before export ids) are never named here:
    :func:`companion_problems` checks their rows one by one.

    Args:
        artifact: the parsed model, the artifact's parsed JSON, or its JSON text / bytes.
        companion: the companion's parsed JSON.

    Returns:
        A ``companion_mismatch`` problem, or None. An artifact that is not JSON counts as
        having no id.
    """
    model: onnx.ModelProto | Mapping[str, Any]
    if isinstance(artifact, (str, bytes)):
        try:
            data = orjson.loads(artifact)
        except orjson.JSONDecodeError:
            data = None
        model = data if isinstance(data, Mapping) else {}
    else:
        model = artifact

    def shown() -> Shown:
        return shown_in_model(model) if isinstance(model, onnx.ModelProto) else _shown_in_json(model)

    return _mismatch(artifact_export_id(model), companion, shown)


def mismatched_pair(model: tuple[str, bytes], companion: tuple[str, Any], alone: str) -> TlnetronError | None:
    """The refusal for a companion of another export than ``model`` (name, bytes), or None;
    ``companion`` is its file name and decoded object, ``alone`` how to use the model without it."""
    problem = pair_mismatch(model[1], companion[1])
    if problem is None:
        return None
    return TlnetronError(
        ErrorCode.COMPANION_MISMATCH,
        f"{companion[0]!r} belongs to another export than {model[0]!r}: {problem.what}.",
        where=companion[0],
        remedy=f"pass the companion written with {model[0]!r} (export both again if unsure), or {alone}.",
    )


def _finite(value: Any) -> bool:
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, list):
        return all(_finite(v) for v in value)
    return True


_NOT_FINITE = "the value is not a finite number (NaN and infinity are not JSON; Netron cannot show them)"
_NOWHERE = {
    CompanionKind.NODE: "no node of the top graph or of any function body has this name (graph inputs are not nodes)",
    CompanionKind.VALUE: "no value has this name",
    CompanionKind.GRAPH: "no function has this name and it is not the empty target",
    CompanionKind.TENSOR: "no initializer has this name",
}


def companion_problems(companion: Any, shown: Shown | None, *, built: bool = False) -> Iterator[Problem]:
    """Every row of ``companion`` Netron would drop or never show, as problems.

    With ``shown`` None (the artifact could not be read), the rows' own problems are still
    reported; what they target cannot be checked. ``built`` is for a companion
    :func:`~tlnetron.build.companion.build_companion` just made: its rows nest three deep by
    construction, so the depth guard against hostile files is skipped (the schema still runs).

    A companion that belongs to another export (:func:`pair_mismatch`, with the artifact's
    id from ``shown.export_id``) is one ``companion_mismatch`` problem, first; which of its
    rows target names this artifact does not show is then not reported row by row (a model
    row's target, which no artifact changes, and the rows' other problems still are).
    """
    code = ValidationCode.NETRON_ATTACHMENT_INVALID
    if not isinstance(companion, dict):
        yield Problem(code, "companion", "the top level must be a JSON object")
        return
    if not built and too_deep(companion):
        yield Problem(code, "companion", f"nests arrays or objects more than {MAX_DEPTH} deep: a row's value is a number, a string, a boolean or a flat array of those")
        return
    mismatch = _mismatch(shown.export_id, companion, lambda: shown) if shown is not None else None
    if mismatch is not None:
        yield mismatch
    try:
        validate("companion", companion)
    except SchemaViolation as exc:
        schema_problem: Problem | None = Problem(code, exc.path.replace("data", "companion", 1), f"{exc} (rule {exc.rule})")
    else:
        schema_problem = None
    if schema_problem is not None:
        # Report non-finite values first (the schema cannot say NaN is not JSON), then stop.
        for section in ("metadata", "metrics"):
            rows = companion.get(section)
            if isinstance(rows, list):
                for i, row in enumerate(rows):
                    if isinstance(row, dict) and not _finite(row.get("value")):
                        yield Problem(code, f"{section}[{i}]", _NOT_FINITE)
        yield schema_problem
        return
    targets = shown.by_kind() if shown is not None else {}
    nonfinite: list[Problem] = []  # reported first, as when the schema fails
    unseen: list[Problem] = []
    for section in ("metadata", "metrics"):
        seen: dict[tuple[str, str, str], int] = {}
        for i, row in enumerate(companion[section]):
            kind, target, name, value = row["kind"], row["target"], row["name"], row["value"]
            if isinstance(value, (float, list)) and not _finite(value):
                nonfinite.append(Problem(code, f"{section}[{i}]", _NOT_FINITE))
            names = targets.get(kind)
            # Against another export's artifact, only model rows' targets say anything.
            if names is not None and target not in names and (mismatch is None or kind == CompanionKind.MODEL):
                what = _NOWHERE.get(kind, "nothing shown has this name")
                unseen.append(Problem(code, f"{section}[{i}]", f"{kind} row {name!r} targets {target!r}: {what}; Netron would show it nowhere"))
            first = seen.setdefault((kind, target, name), i)
            if first != i:
                unseen.append(Problem(code, f"{section}[{i}]", f"duplicates {section}[{first}] (same kind, target and name): Netron keeps only the last"))
    yield from nonfinite
    yield from unseen


def parse_artifact(text: str, data: Any = None) -> tuple[onnx.ModelProto | None, list[Problem]]:
    """Strict-parse artifact JSON text the way Netron and ``json_format.Parse`` read it.

    ``data`` is the text already parsed, when the caller has it. Never raises for what the
    text holds: nesting too deep for a parser is a problem like any other.
    """
    problems: list[Problem] = []
    if data is None:
        try:
            data = json.loads(text)
        except RecursionError:
            return None, [Problem(ValidationCode.JSON_INVALID, "artifact", "nested too deep to read")]
        except ValueError as exc:
            return None, [Problem(ValidationCode.JSON_INVALID, "artifact", str(exc))]
    if not isinstance(data, dict):
        return None, [Problem(ValidationCode.JSON_INVALID, "artifact", "the top level must be a JSON object")]
    snake = [k for k in _SNAKE if k in data]
    if snake or not any(k in data for k in _CAMEL):
        what = f"snake_case keys {snake}" if snake else f"none of {list(_CAMEL)} present"
        problems.append(Problem(ValidationCode.NETRON_UNREADABLE, "artifact", f"Netron's ONNX JSON reader would not take it: {what}"))
    model = onnx.ModelProto()
    try:
        json_format.Parse(text, model)
    except (json_format.ParseError, RecursionError, ValueError, TypeError, OverflowError, SystemError) as exc:
        what = "nested too deep for the protobuf parser" if isinstance(exc, RecursionError) else str(exc)[:500]
        problems.append(Problem(ValidationCode.PROTO_PARSE_FAILED, "artifact", what))
        return None, problems
    return model, problems


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
_ROLE_OF_DOMAIN = {Domain.LOSSY: NodeRole.OP, Domain.MODULE: NodeRole.MODULE_CALL, Domain.RUN: NodeRole.MODULE_RUN, Domain.STRUCTURE: NodeRole.STRUCTURE}
"""The node-properties role each of tlnetron's node domains is checked as."""
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
                stub = stubs[arity] = onnx.FunctionProto(name=_STUB, domain=Domain.MODULE, overload=f"{arity[0]}_{arity[1]}")
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
            piece.graph.node.add(op_type=f.name, domain=f.domain, overload=f.overload, input=ins, output=[f"b{j}_o{i}" for i in range(len(f.output))])
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


def check_onnx(model: onnx.ModelProto | bytes, *, functions: int | None = None, split: list[bool] | None = None) -> str | None:
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


def _schema_problem(where: str, exc: SchemaViolation) -> Problem:
    return Problem(ValidationCode.METADATA_INVALID, where, f"{exc} at {exc.path} (rule {exc.rule})")


def node_problems(nodes: Iterable[onnx.NodeProto], where: str) -> Iterator[Problem]:
    """Schema-check the attributes and metadataProps of tlnetron-domain nodes."""
    for n in nodes:
        role = _ROLE_OF_DOMAIN.get(n.domain)
        if role is None:
            continue
        attrs: dict[str, Any] = {}
        for a in n.attribute:
            attrs[a.name] = onnx.helper.get_attribute_value(a)
            if isinstance(attrs[a.name], bytes):
                attrs[a.name] = attrs[a.name].decode("utf-8", "replace")
        meta = {p.key: p.value for p in n.metadata_props}
        try:
            validate("node-properties", {"role": role, "attributes": attrs, "metadata": meta})
        except SchemaViolation as exc:
            yield _schema_problem(f"{where} node {n.name!r}", exc)


def artifact_problems(model: onnx.ModelProto) -> Iterator[Problem]:
    """Checker and schema problems of a parsed artifact."""
    failure = check_onnx(model)
    if failure:
        yield Problem(ValidationCode.ONNX_CHECKER_FAILED, "artifact", failure.splitlines()[0][:500])
    rows = [(p.key, p.value) for p in model.metadata_props]
    ours = model.producer_name == "tlnetron"
    if not ours:
        rows = [(k, v) for k, v in rows if k.startswith("torchlens.")]
        if not rows:
            return
    decoded, problems = decode_metadata(rows)
    for key, what in problems:
        yield Problem(ValidationCode.METADATA_INVALID, f"metadataProps[{key}]", what)
    if ours:
        try:
            validate("model-metadata", decoded)
        except SchemaViolation as exc:
            yield _schema_problem("metadataProps", exc)
        baseline = decoded.get("torchlens.baseline")
        if isinstance(baseline, dict):
            try:
                validate("baseline-summary", baseline)
            except SchemaViolation as exc:
                yield _schema_problem("metadataProps[torchlens.baseline]", exc)
        yield from node_problems(model.graph.node, "graph")
        for f in model.functions:
            yield from node_problems(f.node, f"function {f.name!r}")

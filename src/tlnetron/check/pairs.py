"""Pair matching: which export an artifact and a companion come from, and what the artifact shows.

A companion that belongs to another export is named once (:func:`pair_mismatch`), not row
by row; :class:`Shown` is what the artifact draws, for the companion's rows to target.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import orjson

from .._generated.vocab import (
    CompanionKind,
    CompanionRow,
    ErrorCode,
    MetaKey,
    ValidationCode,
)
from ..build import _onnx as onnx  # onnx without its __init__ (numpy, ml_dtypes)
from ..errors import Problem, TlnetronError

__all__ = [
    "MISMATCH_MIN_ROWS",
    "Shown",
    "artifact_export_id",
    "companion_export_id",
    "mismatched_pair",
    "pair_mismatch",
    "shown_in_model",
]


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

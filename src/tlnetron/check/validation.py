"""Validation: what ``export`` checks before writing and ``tlnetron validate`` reports.

Problems are *collected* (``iter_*`` functions yield :class:`~tlnetron.errors.Problem`),
each with a stable code, where it is, and what is wrong. The companion rules live once: the
companion schema plus :func:`companion_problems`'s cross-reference check (targets name
something Netron shows; no two rows share kind, target and name; values are finite). A
companion that belongs to another export is named once (:func:`~tlnetron.check.pairs.pair_mismatch`),
not row by row; the onnx check itself is :mod:`tlnetron.check.onnx_check`.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Iterator
from typing import Any

from google.protobuf import json_format

from .._generated.vocab import CompanionKind, Domain, NodeRole, ValidationCode
from ..build import _onnx as onnx  # onnx without its __init__ (numpy, ml_dtypes)
from ..build import companion as built_companion
from ..build.metadata import decode_metadata
from ..errors import Problem
from ..read.files import MAX_DEPTH, too_deep
from .onnx_check import check_onnx
from .pairs import Shown, _mismatch
from .schemas import SchemaViolation, validate

__all__ = ["artifact_problems", "companion_problems", "node_problems", "parse_artifact"]

_SNAKE = ("ir_version", "producer_name", "opset_import", "metadata_props")
_CAMEL = ("irVersion", "producerName", "opsetImport", "metadataProps")
_ROLE_OF_DOMAIN = {
    Domain.LOSSY: NodeRole.OP,
    Domain.MODULE: NodeRole.MODULE_CALL,
    Domain.RUN: NodeRole.MODULE_RUN,
    Domain.STRUCTURE: NodeRole.STRUCTURE,
}
"""The node-properties role each of tlnetron's node domains is checked as."""


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
        yield Problem(
            code,
            "companion",
            f"nests arrays or objects more than {MAX_DEPTH} deep: a row's value is a number, a string, a "
            "boolean or a flat array of those",
        )
        return
    mismatch = _mismatch(shown.export_id, companion, lambda: shown) if shown is not None else None
    if mismatch is not None:
        yield mismatch
    try:
        validate("companion", companion)
    except SchemaViolation as exc:
        schema_problem: Problem | None = Problem(
            code, exc.path.replace("data", "companion", 1), f"{exc} (rule {exc.rule})"
        )
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
        if _no_problem(companion[section], targets, mismatch is not None):
            continue
        seen: dict[tuple[str, str, str], int] = {}
        for i, row in enumerate(companion[section]):
            kind, target, name, value = row["kind"], row["target"], row["name"], row["value"]
            if isinstance(value, (float, list)) and not _finite(value):
                nonfinite.append(Problem(code, f"{section}[{i}]", _NOT_FINITE))
            if _unshown(targets, kind, target, mismatch is not None):
                what = _NOWHERE.get(kind, "nothing shown has this name")
                unseen.append(
                    Problem(
                        code,
                        f"{section}[{i}]",
                        f"{kind} row {name!r} targets {target!r}: {what}; Netron would show it nowhere",
                    )
                )
            first = seen.setdefault((kind, target, name), i)
            if first != i:
                unseen.append(
                    Problem(
                        code,
                        f"{section}[{i}]",
                        f"duplicates {section}[{first}] (same kind, target and name): Netron keeps only the last",
                    )
                )
    yield from nonfinite
    yield from unseen


def _unshown(targets: dict[str, frozenset[str]], kind: str, target: str, mismatched: bool) -> bool:
    """Whether a row's target names nothing Netron shows for its kind. Against another
    export's artifact (``mismatched``), only model rows' targets say anything."""
    names = targets.get(kind)
    return names is not None and target not in names and (not mismatched or kind == CompanionKind.MODEL)


def _no_problem(rows: list[dict[str, Any]], targets: dict[str, frozenset[str]], mismatched: bool) -> bool:
    """True when no row of a schema-valid section has a problem :func:`companion_problems`
    reports, told section-wide (a built companion has thousands of rows); False sends the
    section through the row-by-row loop, which finds and orders them."""
    distinct, pairs, total, odd = survey(rows)
    if not distinct or any(_unshown(targets, kind, target, mismatched) for kind, target in pairs):
        return False
    if odd and not all(map(_finite, odd)):
        return False
    # A sum is finite only if every term is (a finite sum past float's range sends the section on).
    return math.isfinite(total)


def survey(rows: list[dict[str, Any]], compiled: bool = True) -> tuple[bool, list[tuple[str, str]], float, list[Any]]:
    """A schema-valid section read once: whether no two rows share kind, target and name; the
    distinct (kind, target) pairs; the sum of the float values; the values neither str, int
    nor float. In C when built (``compiled``), with the same answers as Python's."""
    rows_c = built_companion.COMPILED  # read here, so a build without it is one switch
    if compiled and rows_c is not None:
        distinct, pairs, total, odd = rows_c.survey(rows)
        return bool(distinct), pairs, float(total), odd
    keys = [(row["kind"], row["target"], row["name"]) for row in rows]
    pairs = list(dict.fromkeys([(kind, target) for kind, target, _ in keys]))
    values = [row["value"] for row in rows]
    total = sum([v for v in values if v.__class__ is float])
    odd = [v for v in values if v.__class__ is not str and v.__class__ is not int and v.__class__ is not float]
    return len(set(keys)) == len(keys), pairs, total, odd


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
        problems.append(
            Problem(
                ValidationCode.NETRON_UNREADABLE, "artifact", f"Netron's ONNX JSON reader would not take it: {what}"
            )
        )
    model = onnx.ModelProto()
    try:
        json_format.Parse(text, model)
    except (json_format.ParseError, RecursionError, ValueError, TypeError, OverflowError, SystemError) as exc:
        what = "nested too deep for the protobuf parser" if isinstance(exc, RecursionError) else str(exc)[:500]
        problems.append(Problem(ValidationCode.PROTO_PARSE_FAILED, "artifact", what))
        return None, problems
    return model, problems


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

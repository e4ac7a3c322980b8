"""The metrics companion (Netron's ``netron:attachment`` sidecar).

Rows render in Netron's Metadata and Metrics sidebar sections once the companion is dropped
onto the open model. Every row targets a node Netron shows (the root graph or a function
body) or the model (``target: ""``); units sit in row names because Netron shows a row's
``type`` only when it is expanded. The rules a row must meet are checked by
:func:`tlnetron.check.validation.companion_problems` before anything is written.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from types import ModuleType
from typing import Any

from .._generated.vocab import (
    COMPANION_SIGNATURE,
    SCHEMA_VERSION,
    CompanionKind,
    CompanionRow,
)
from ..ir.drawing import PNode, Projection
from ..ir.trace import TensorStats
from ..read.stats import merged_stats
from ..words.facts import STATS_ROW_NAMES, share_rows, stats_rows, total_rows
from ..words.node import NodeWords, words_of
from .export_id import PLACEHOLDER
from .serialize import dumps_bytes

COMPILED: ModuleType | None
"""The compiled companion rows (``_rows.c``: value rows, and the section survey validation
uses), or None where setup.py could not build them: Python then does the same work."""
try:
    from . import _rows as COMPILED
except ImportError:  # pragma: no cover - a build without a C compiler
    COMPILED = None

__all__ = ["COMPILED", "build_companion", "companion_bytes", "drawn_values", "iter_nodes", "value_rows"]

Row = dict[str, Any]


def iter_nodes(projection: Projection) -> Iterator[PNode]:
    """Every node Netron can show: the root graph's, then each function body's."""
    yield from projection.graph.nodes
    for fn in projection.functions:
        yield from fn.body.nodes


def drawn_values(projection: Projection) -> frozenset[str]:
    """Every value name Netron draws (up to its first line break): node outputs, and the
    inputs and outputs of the root graph and of each function body (what
    :func:`tlnetron.check.pairs.shown_in_model` collects from the written model)."""
    names: set[str] = set()
    bodies = [projection.graph, *(fn.body for fn in projection.functions)]
    for body in bodies:
        for node in body.nodes:
            names.update(node.outputs)
        names.update(v.name for v in body.inputs)
        names.update(v.name for v in body.outputs)
    return frozenset(name.split("\n", 1)[0] for name in names if name)


_JS_SAFE = 2**53


def _row(kind: str, target: str, name: str, value: Any) -> Row:
    # Netron parses JSON numbers as doubles: integers past 2**53 would show rounded, so
    # they are written as their exact digits (a string renders as-is).
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > _JS_SAFE:
        value = str(value)
    return {"kind": kind, "target": target, "name": name, "value": value}


def build_companion(
    projection: Projection,
    *,
    artifact_name: str,
    producer_version: str,
    export_id: str = PLACEHOLDER,
    stats: Sequence[tuple[str, TensorStats]] = (),
    values: frozenset[str] | None = None,
    layers: Mapping[str, str] | None = None,
    words: Mapping[str, NodeWords] | None = None,
) -> dict[str, Any]:
    """The companion object for ``projection`` (not yet validated).

    ``stats`` are ``(op name, statistics)`` in execution order (``OpIR.stats``): each op
    whose output is a drawn value (``values``, :func:`drawn_values` when None) gets its
    :func:`stats_rows` as ``value`` rows targeting that value, which is named like the op
    in every view. A rolled layer of several passes draws one value named after the layer
    (``layers`` maps each pass's op name to it): its rows state every pass's statistics
    merged (:func:`~tlnetron.read.stats.merged_stats`; the op view shows each
    pass's). The model row ``first non-finite output`` names the first op of ``stats``
    holding a NaN or an Inf. ``words`` are the nodes' words by name, when the caller worded
    them already (:func:`~tlnetron.words.node.word_node` otherwise).

    ``export_id`` is the first metadata row's value: the export leaves it at
    :data:`~tlnetron.build.export_id.PLACEHOLDER`, which
    :func:`~tlnetron.build.export_id.companion_with_id` replaces in the companion's bytes.
    """
    node_kind = CompanionKind.NODE
    totals = projection.totals
    metadata: list[Row] = [
        # Same name as the artifact's model metadata row: Netron shows this one in its place.
        _row(CompanionKind.MODEL, "", CompanionRow.TORCHLENS_EXPORT_ID, export_id),
        _row(CompanionKind.MODEL, "", CompanionRow.COMPANION_OF, artifact_name),
        _row(
            CompanionKind.MODEL, "", CompanionRow.GENERATED_BY, f"tlnetron {producer_version} (schema {SCHEMA_VERSION})"
        ),
    ]
    metrics: list[Row] = []
    append = metrics.append
    n_nodes = 0
    for node in iter_nodes(projection):
        n_nodes += 1
        f = node.facts
        said = words_of(node, words)
        # Netron matches a target against a name up to its first line break; a name that
        # still collides there is refused by the cross-reference check (duplicate rows).
        target = node.name.split("\n", 1)[0]
        for name, value in said.metrics:
            append(_row(node_kind, target, name, value))
        # Shares answer "where does the time go?" for module calls (the boxes of the
        # architecture diagram); on single ops they would only repeat the metrics.
        if f.inclusive:
            for name, share in share_rows(f, totals):
                metadata.append(_row(node_kind, target, name, share))
        for key, value in said.diff:
            metadata.append(_row(node_kind, target, key, value))
    for name, value in total_rows(totals):
        metrics.append(_row(CompanionKind.MODEL, "", name, value))
    metrics.append(_row(CompanionKind.MODEL, "", CompanionRow.EXPORTED_NODES, n_nodes))
    if stats:
        first_bad = next((name for name, st in stats if not st.finite), None)
        if first_bad is not None:
            metrics.append(
                _row(CompanionKind.MODEL, "", CompanionRow.FIRST_NON_FINITE_OUTPUT, first_bad.split("\n", 1)[0])
            )
        per_value = _stats_per_value(projection, stats, values, layers)
        value_rows(
            metrics, [(target, parts[0] if len(parts) == 1 else merged_stats(parts)) for target, parts in per_value]
        )
    return {"signature": COMPANION_SIGNATURE, "metadata": metadata, "metrics": metrics}


def value_rows(out: list[Row], pairs: Sequence[tuple[str, TensorStats]], compiled: bool = True) -> None:
    """Append each ``(target, statistics)``'s value rows (:func:`stats_rows`) to ``out``;
    made in C when built (``compiled``), with the same rows as Python's."""
    if compiled and COMPILED is not None:
        COMPILED.value_rows(out, CompanionKind.VALUE, STATS_ROW_NAMES, pairs)
        return
    append = out.append
    for target, st in pairs:
        for row_name, value in stats_rows(st):
            append(_row(CompanionKind.VALUE, target, row_name, value))


def _stats_per_value(
    projection: Projection,
    stats: Sequence[tuple[str, TensorStats]],
    values: frozenset[str] | None,
    layers: Mapping[str, str] | None,
) -> list[tuple[str, list[TensorStats]]]:
    """Each drawn value (and each model output field drawn for it) with the statistics it
    states: its op's, or every pass's of a rolled layer, in execution order."""
    drawn = drawn_values(projection) if values is None else values
    per_value: list[tuple[str, list[TensorStats]]] = []
    merged_at: dict[str, int] = {}
    # A value drawn under a model output field's name states its op's tensor there too.
    aliases: dict[str, list[str]] = {}
    for drawn_name, source in projection.graph.aliases:
        aliases.setdefault(source, []).append(drawn_name)
    for name, st in stats:
        target = name.split("\n", 1)[0]
        if target in drawn or target in aliases:
            if target in drawn:
                per_value.append((target, [st]))
            per_value.extend((alias, [st]) for alias in aliases.get(target, ()))
            continue
        layer = (layers or {}).get(name)
        target = layer.split("\n", 1)[0] if layer is not None else ""
        for each in (target, *aliases.get(target, ())) if (target in drawn or target in aliases) else ():
            if each not in drawn and each == target:
                continue
            # a pass of a rolled layer: pooled with the layer's other passes
            if each in merged_at:
                per_value[merged_at[each]][1].append(st)
            else:
                merged_at[each] = len(per_value)
                per_value.append((each, [st]))
    return per_value


def companion_bytes(companion: dict[str, Any]) -> bytes:
    """Deterministic compact companion JSON, UTF-8 (pretty-print it to read it).

    Non-finite values are refused by :func:`tlnetron.check.validation.companion_problems` first.
    """
    return dumps_bytes(companion) + b"\n"

"""The model-level metadataProps (the disclaimer and the honesty block).

Built as a decoded object, validated against ``schema/model-metadata.schema.json``, then
encoded to ONNX's string rows (JSON text for keys the schema marks ``x-tlnetron-encoding``).
:func:`decode_metadata` is the inverse, used by ``tlnetron validate``.
"""

from __future__ import annotations

import json
from typing import Any

from .._generated.vocab import (
    MODEL_METADATA_JSON_KEYS,
    MODEL_METADATA_KEYS,
    SCHEMA_VERSION,
    BaselineKind,
    CaptureStatus,
    CaptureVerdict,
    Granularity,
    MetaKey,
)
from ..ir.drawing import Projection
from ..ir.trace import TraceIR
from ..read.files import MAX_DEPTH, too_deep
from ..words.facts import total_meta
from ..words.model import DISCLAIMER
from .export_id import PLACEHOLDER

__all__ = ["decode_metadata", "encode_metadata", "model_metadata"]


def _verdict(verified: bool | None) -> str:
    if verified is None:
        return CaptureVerdict.NO_VERDICT
    return CaptureVerdict.VERIFIED if verified else CaptureVerdict.NOT_VERIFIED


def model_metadata(
    projection: Projection,
    ir: TraceIR,
    *,
    counts: dict[str, int],
    warnings: list[str],
    baseline: tuple[str, str | dict[str, Any]] | None,
) -> dict[str, Any]:
    """The decoded model metadata object (validate it, then :func:`encode_metadata`).

    Its export id is :data:`~tlnetron.build.export_id.PLACEHOLDER`, which
    :func:`~tlnetron.build.artifact.build_model` replaces in the built artifact.
    """
    h = ir.honesty
    meta: dict[str, Any] = {
        MetaKey.DISCLAIMER: DISCLAIMER,
        MetaKey.SCHEMA_VERSION: SCHEMA_VERSION,
        MetaKey.EXPORT_ID: PLACEHOLDER,  # the id is written over it once both files exist
        MetaKey.CAPTURE_OUTCOME: h.capture_status,
        MetaKey.CAPTURE_VERIFIED: _verdict(h.verified),
        MetaKey.STRUCTURE_ONLY: h.structure_only,
        MetaKey.GRANULARITY: projection.granularity,
        MetaKey.SHOW_BUFFERS: projection.show_buffers,
        MetaKey.HIDDEN_BUFFER_COUNT: projection.hidden_buffers,
        MetaKey.HIDDEN_OP_COUNT: projection.hidden_ops,
        MetaKey.NODE_COUNT: counts["nodes"],
        MetaKey.EDGE_COUNT: counts["edges"],
        MetaKey.FUNCTION_COUNT: counts["functions"],
        MetaKey.OMITTED_VALUE_COUNT: counts["omitted_values"],
        MetaKey.TRACE_OP_COUNT: h.trace_op_count,
        MetaKey.INTERVENTIONS: [{"kind": k, "edit": e, "selection": s, "sites": n} for k, e, s, n in h.interventions],
        MetaKey.ROOT_RANKS: projection.root_ranks,
        MetaKey.TORCHLENS_VERSION: ir.torchlens_version,
        MetaKey.TORCH_VERSION: ir.torch_version,
    }
    if h.reason and h.capture_status != CaptureStatus.COMPLETE:
        meta[MetaKey.CAPTURE_OUTCOME_REASON] = h.reason
    if h.state and h.state != "pristine":
        meta[MetaKey.TRACE_STATE] = h.state
    if projection.granularity == Granularity.MODULE:
        meta[MetaKey.SIDE_OP_COUNT] = projection.side_ops
        meta[MetaKey.RUN_COUNT] = projection.run_count
    if projection.depth is not None:
        meta[MetaKey.DEPTH] = projection.depth
    if projection.depth_reason:
        meta[MetaKey.DEPTH_REASON] = projection.depth_reason
    if projection.inlined_calls:
        meta[MetaKey.INLINED_CALL_COUNT] = projection.inlined_calls
    if warnings:
        meta[MetaKey.WARNINGS] = sorted(set(warnings))
    meta.update(total_meta(projection.totals))
    if baseline is not None:
        kind, value = baseline
        meta[MetaKey.BASELINE_KIND] = kind
        meta[MetaKey.BASELINE] = value
    return meta


def encode_metadata(meta: dict[str, Any]) -> list[tuple[str, str]]:
    """Decoded metadata -> ONNX ``metadataProps`` rows in schema order."""
    rows: list[tuple[str, str]] = []
    for key in MODEL_METADATA_KEYS:
        if key not in meta:
            continue
        value = meta[key]
        if key in MODEL_METADATA_JSON_KEYS or not isinstance(value, str):
            text = json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"), allow_nan=False)
        else:
            text = value
        rows.append((key, text))
    return rows


def decode_metadata(rows: list[tuple[str, str]]) -> tuple[dict[str, Any], list[tuple[str, str]]]:
    """ONNX ``metadataProps`` rows -> (decoded object, problems as (key, what)).

    Keys that are not tlnetron's are kept as text (the schema then names them).
    """
    out: dict[str, Any] = {}
    problems: list[tuple[str, str]] = []
    values = dict(rows)
    for key, text in rows:
        if key in out:
            problems.append((key, "the key appears more than once"))
            continue
        decode = key in MODEL_METADATA_JSON_KEYS or (
            key == MetaKey.BASELINE and values.get(MetaKey.BASELINE_KIND) == BaselineKind.TRACE
        )
        if decode:
            try:
                out[key] = json.loads(text)
                if too_deep(out[key]):
                    raise RecursionError
            except RecursionError:
                problems.append((key, f"JSON text nested more than {MAX_DEPTH} deep: too deep to check"))
                out[key] = text
            except ValueError as exc:
                problems.append((key, f"not JSON text ({exc})"))
                out[key] = text
        else:
            out[key] = text
    return out, problems

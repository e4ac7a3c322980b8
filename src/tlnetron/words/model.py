"""Words: the model's and the root graph's descriptions (the disclaimer, the view, the totals, the baseline)."""

from __future__ import annotations

import re
import textwrap

from typing import Any

from .._generated.vocab import (
    METRICS,
    BaselineKind,
    MetaKey,
)
from ..ir.drawing import Projection
from .text import plural

__all__ = ["DESCRIPTION_WIDTH", "DISCLAIMER", "graph_doc", "model_description", "unwrapped", "wrapped"]


DISCLAIMER = (
    "A picture of a TorchLens trace, not a runnable model: ops keep their captured TorchLens "
    "names in the custom domain ai.torchlens.lossy, module calls are ai.torchlens.module "
    "functions (runs of repeated calls ai.torchlens.run ones, structure nodes of "
    "ai.torchlens.structure only gather returned tensors), and shapes are what the traced run observed."
)


_TOTAL_KEYS = tuple(m.total.model_meta for m in METRICS if m.total is not None)
"""The model metadata keys stating totals, in the table's order."""


def graph_doc(projection: Projection) -> str:
    """The root graph's description: the disclaimer, the view, why this depth, what it leaves out."""
    doc = (
        f"{DISCLAIMER}\nView: {projection.granularity}"
        + (f" at module depth {projection.depth}" if projection.depth else "")
        + "."
    )
    if projection.depth_reason:
        doc += f"\n{projection.depth_reason}"
    if projection.graph.doc:
        doc += f"\n{projection.graph.doc}"
    return doc


def model_description(meta: dict[str, Any], model_class: str) -> str:
    """The model's description in words (Netron shows it under Model Properties, where the
    metadata rows' names are cut to ``torchlens.captur…``).

    Every sentence is read from ``meta``, the rows tools read: nothing is said twice. Each
    fact is one line, wrapped at :data:`DESCRIPTION_WIDTH` with its continuation lines
    indented two spaces (:func:`unwrapped` joins them back).
    """
    lines = [str(meta[MetaKey.DISCLAIMER])]
    view = f"{meta[MetaKey.GRANULARITY]} view"
    if MetaKey.DEPTH in meta:
        view += f" at module depth {meta[MetaKey.DEPTH]}"
    lines.append(f"What you see: {model_class or 'the model'}, {view}. {meta.get(MetaKey.DEPTH_REASON, '')}".rstrip())
    outcome = f"Capture: {meta[MetaKey.CAPTURE_OUTCOME]}, {meta[MetaKey.CAPTURE_VERIFIED].replace('_', ' ')}"
    if MetaKey.CAPTURE_OUTCOME_REASON in meta:
        outcome += f" ({meta[MetaKey.CAPTURE_OUTCOME_REASON]})"
    if meta.get(MetaKey.STRUCTURE_ONLY):
        outcome += "; structure only (no tensor values were kept)"
    lines.append(outcome + ".")
    drawn = (
        f"Drawn: {plural(meta[MetaKey.NODE_COUNT], 'node')} and {plural(meta[MetaKey.EDGE_COUNT], 'edge')} in "
        "the root graph, "
        f"{plural(meta[MetaKey.FUNCTION_COUNT], 'module function')} behind the drill-down, from "
        f"{plural(meta[MetaKey.TRACE_OP_COUNT], 'traced op')}"
    )
    if meta.get(MetaKey.RUN_COUNT):
        drawn += f" ({plural(meta[MetaKey.RUN_COUNT], 'run')} of repeated calls drawn as one box each)"
    left = []
    if meta[MetaKey.HIDDEN_BUFFER_COUNT] or meta[MetaKey.HIDDEN_OP_COUNT]:
        left.append(
            f"{plural(meta[MetaKey.HIDDEN_BUFFER_COUNT], 'buffer')} and "
            f"{plural(meta[MetaKey.HIDDEN_OP_COUNT], 'counter op')} "
            f"hidden by show_buffers={meta[MetaKey.SHOW_BUFFERS]!r}"
        )
    if meta.get(MetaKey.SIDE_OP_COUNT):
        left.append(f"{plural(meta[MetaKey.SIDE_OP_COUNT], 'side computation')} feeding no output not drawn")
    if meta.get(MetaKey.INLINED_CALL_COUNT):
        left.append(f"{plural(meta[MetaKey.INLINED_CALL_COUNT], 'module call')} drawn inline")
    lines.append(drawn + (f"; {'; '.join(left)}." if left else "."))
    totals = [str(meta[k]) for k in _TOTAL_KEYS if k in meta]
    if totals:
        lines.append("Totals: " + "; ".join(totals) + ".")
    if MetaKey.BASELINE in meta:
        lines.append(_baseline_words(meta[MetaKey.BASELINE_KIND], meta[MetaKey.BASELINE]))
    if meta.get(MetaKey.INTERVENTIONS):
        lines.append(
            f"Edited trace: {plural(len(meta[MetaKey.INTERVENTIONS]), 'intervention')} "
            "(torchlens.interventions lists them)."
        )
    if meta.get(MetaKey.WARNINGS):
        lines.append("Warnings: " + ", ".join(meta[MetaKey.WARNINGS]) + ".")
    return "\n".join(wrapped(line) for line in lines)


DESCRIPTION_WIDTH = 56
"""Characters per line of a description: Netron's sidebar shows a line's first ~55 in a
notebook's frame and hides the rest behind a scrollbar."""


_NUMBER_AND_UNIT = re.compile(r"(\d) (?=\S)")


def wrapped(line: str) -> str:
    """One fact's line wrapped at word breaks, continuation lines indented two spaces."""
    if len(line) <= DESCRIPTION_WIDTH:
        return line
    # A number stays on the line of its unit ("16 B", "2 nodes"): the joining space is held while filling.
    held = _NUMBER_AND_UNIT.sub("\\1\x00", line)
    filled = textwrap.fill(
        held, DESCRIPTION_WIDTH, subsequent_indent="  ", break_long_words=False, break_on_hyphens=False
    )
    return filled.replace("\x00", " ")


def unwrapped(text: str) -> str:
    """A description with each fact on one line again (what :func:`wrapped` split)."""
    return re.sub(r"\n  (?=\S)", " ", text)


def _baseline_words(kind: str, value: Any) -> str:
    if kind != BaselineKind.TRACE or not isinstance(value, dict):
        return f"Baseline: recorded as the identifier {value!r} (no per-node comparison)."
    counts = value.get("row_counts", {})
    rows = sum(counts.values())
    spread = ", ".join(f"{n:,} {status}" for status, n in counts.items() if n) or "none"
    direction = value.get("direction", {})
    return (
        f"Compared with {direction.get('reference', 'a baseline capture')} by TorchLens' guarded differential: "
        f"{plural(rows, 'diff row')} ({spread}). Rows count ops of both captures, and removed or excluded ops "
        "have no node here, so the nodes carrying torchlens.diff facts need not add up to the rows; a module box "
        "sums the rows of the ops inside it."
    )

"""The export's stage sequence, from a read IR to the files in place.

project (the view, then the diff) -> advise -> model metadata and node rows, validated ->
companion (built and checked) -> build the artifact (the export id written into both) ->
stage both files -> onnx.checker -> write (commit). Every refusal is a
:class:`~tlnetron.errors.TlnetronError` raised before anything replaces a file.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from contextvars import ContextVar
from pathlib import Path
from typing import Any

from ._generated.vocab import BufferPolicyName, ErrorCode, GranularityName
from ._version import __version__
from .build.artifact import BuiltModel, build_model
from .build.companion import build_companion, companion_bytes, drawn_values, iter_nodes
from .build.export_id import PLACEHOLDER
from .build.metadata import encode_metadata, model_metadata
from .check.advisories import Advisory, checker_advisory, view_advisories
from .check.schemas import SchemaViolation, validate, validate_each
from .check.onnx_check import check_onnx
from .check.pairs import Shown
from .check.validation import companion_problems
from .errors import Opt, TlnetronError, warn
from .ir.drawing import PGraph, Projection
from .ir.trace import DiffIR, TensorStats, TraceIR
from .options import ExportOptions
from .perf import clear_memos, gc_paused
from .progress import Progress, Steps
from .result import ExportResult
from .views import view
from .views.diff import apply_diff
from .words.model import graph_doc, model_description
from .words.node import NodeWords, word_nodes, words_of
from .write.pair import companion_path_for, staged_files

__all__ = ["PAGE_COMMAND", "counts", "export_ir", "project", "run", "shown"]

PAGE_COMMAND: ContextVar[str | None] = ContextVar("tlnetron_page_command", default=None)
"""What an ``.html`` page's note says to run again to regenerate it, in the words of the
surface exporting it (the command line sets its own); unset, the Python call."""

Baseline = tuple[str, "str | dict[str, Any]"]
"""The model metadata's ``(baseline_kind, value)``."""


def counts(projection: Projection) -> dict[str, int]:
    """The root graph's nodes, edges (typed ones too) and the functions and untyped values
    of every body, as the model metadata states them."""
    g = projection.graph
    typed = {v.name for v in (*g.inputs, *g.values, *g.outputs) if v.type is not None}
    producer: dict[str, str] = {v.name: v.name for v in g.inputs}
    for n in g.nodes:
        for o in n.outputs:
            producer[o] = n.name
    # An edge is a (producer, consumer) pair: pairs can only repeat within one consumer's
    # inputs, so they are told apart per node (no set of every pair in the graph).
    pairs = typed_pairs = 0
    for n in g.nodes:
        inputs = n.inputs
        if len(inputs) == 1:
            pairs += 1
            typed_pairs += inputs[0] in typed
            continue
        seen: set[str] = set()
        for i in inputs:
            p = producer.get(i, i)
            if p not in seen:
                seen.add(p)
                pairs += 1
                typed_pairs += i in typed
    edges = pairs + len(g.outputs)
    typed_edges = typed_pairs + sum(1 for v in g.outputs if v.type is not None)
    bodies: list[PGraph] = [g, *(f.body for f in projection.functions)]
    omitted = 0
    for b in bodies:
        # A value is omitted when no entry of that name in the body has a type.
        every = (*b.inputs, *b.values, *b.outputs)
        omitted += len({v.name for v in every} - {v.name for v in every if v.type is not None})
    return {
        "nodes": len(g.nodes),
        "edges": edges,
        "typed_edges": typed_edges,
        "functions": len(projection.functions),
        "omitted_values": omitted,
    }


def project(ir: TraceIR, options: ExportOptions, progress: Callable[[int, int], None] | None = None) -> Projection:
    """The chosen view's projection of ``ir`` (``progress(done, of)`` as it goes)."""
    return view(options.granularity).project(ir, options, progress)


def shown(projection: Projection, values: frozenset[str]) -> Shown:
    """What Netron shows of ``projection``: the names companion rows may target."""
    return Shown(
        nodes=frozenset(n.name.split("\n", 1)[0] for n in iter_nodes(projection)),
        values=values,
        functions=frozenset(f.name for f in projection.functions),
        export_id=PLACEHOLDER,
    )


def _artifact_invalid(what: str) -> TlnetronError:
    return TlnetronError(
        ErrorCode.ARTIFACT_INVALID,
        f"the artifact tlnetron built is invalid: {what}",
        where="artifact",
        remedy="this is a bug in tlnetron: please report it with the trace; nothing was written.",
    )


def _validate_nodes(projection: Projection, companion: bool) -> dict[str, NodeWords]:
    """Every node worded once (:class:`~tlnetron.words.node.NodeWords`, by name; its companion
    rows only when there is a companion) and its metadata validated; the builder and the
    companion read these records."""
    nodes = list(iter_nodes(projection))
    words = word_nodes(nodes, companion)
    try:
        validate_each(
            "node-properties",
            (
                {
                    "role": node.role,
                    "attributes": dict(node.attributes),
                    "metadata": dict(words_of(node, words).metadata),
                }
                for node in nodes
            ),
        )
    except SchemaViolation as exc:
        name = nodes[exc.index].name if exc.index is not None else "?"
        raise _artifact_invalid(f"node {name!r}: {exc} at {exc.path}") from None
    return words


def _validated_metadata(meta: dict[str, Any], baseline: Baseline | None) -> None:
    try:
        validate("model-metadata", meta)
        if baseline is not None and isinstance(baseline[1], dict):
            validate("baseline-summary", baseline[1])
    except SchemaViolation as exc:
        raise _artifact_invalid(f"model metadata: {exc} at {exc.path}") from None


def _companion(
    projection: Projection, ir: TraceIR, artifact_name: str, steps: Steps, words: dict[str, NodeWords]
) -> tuple[bytes | None, TlnetronError | None]:
    """The companion's bytes, or the refusal its rows earn (raised only after the checker,
    which names an invalid artifact first)."""
    values = drawn_values(projection)
    stats: list[tuple[str, TensorStats]] = []
    layers: dict[str, str] = {}  # a pass's op -> its layer, which the rolled view draws
    for op, op_stats in ir.op_stats():  # waits for what the reader reads in the background
        stats.append((op.name, op_stats))
        if op.num_passes > 1:
            layers[op.name] = op.layer
    companion = build_companion(
        projection,
        artifact_name=artifact_name,
        producer_version=__version__,
        export_id=PLACEHOLDER,
        stats=stats,
        values=values,
        layers=layers,
        words=words,
    )
    steps.within(35, 100)
    problems = list(companion_problems(companion, shown(projection, values), built=True))
    steps.within(85, 100)
    if not problems:
        return companion_bytes(companion), None
    first = problems[0]
    return None, TlnetronError(
        ErrorCode.NETRON_ATTACHMENT_INVALID,
        f"{len(problems)} companion row(s) Netron would drop or never show; first: {first.where}: {first.what}.",
        where=first.where,
        remedy=("rename the offending nodes (no line breaks), or export with ", Opt("attachment", False), "."),
        problems=tuple(problems),
    )


def _build(
    projection: Projection,
    meta: dict[str, Any],
    model_class: str,
    steps: Steps,
    companion: bytes | None,
    words: dict[str, NodeWords],
) -> BuiltModel:
    """The artifact (JSON and protobuf) with the export id written into it and the companion."""
    try:
        # Built a part at a time: only the finished bytes remain when the checker parses
        # its own C++ copy of the model.
        return build_model(
            projection,
            encode_metadata(meta),
            producer_version=__version__,
            graph_doc=graph_doc(projection),
            model_doc=model_description(meta, model_class),
            progress=steps.ticks(0.8),
            companion=companion,
            words=words,
        )
    except ValueError as exc:
        raise _artifact_invalid(str(exc)) from None


def _destinations(path: Path | None, page: Path | None, companion: Path | None) -> tuple[list[Path], Path | None]:
    """The files the export replaces, in that order, and a stale companion it removes (one
    beside an artifact now written without one).

    Both files are built with a placeholder where the export id goes; the builder derives the
    id from both and writes it in, then both are staged, so the kernel writes them out while
    the export goes on checking; nothing replaces an existing file until every check has
    passed (commit), and a refusal removes what was staged.
    """
    if page is not None:
        return [page], None
    stale = companion_path_for(path) if path is not None and companion is None else None
    return [p for p in (path, companion) if p is not None], stale


def _check(model_data: bytes, n_functions: int) -> Advisory | None:
    """Run the onnx checker on the built model: refuse an invalid one, else the advisory (if
    any) on how long the check took on this machine."""
    check_t0 = time.perf_counter()
    split: list[bool] = []
    failure = check_onnx(model_data, functions=n_functions, split=split)
    check_s = time.perf_counter() - check_t0
    if failure:  # an invalid artifact is refused before anything the companion says
        raise _artifact_invalid(f"onnx.checker: {failure.splitlines()[0][:400]}")
    return checker_advisory(n_functions, check_s, split=any(split))


def _page(page: Path, model: tuple[str, bytes], companion: tuple[str, bytes] | None, colour_by: str | None) -> bytes:
    """The ``.html`` page's bytes, holding the model and companion just built."""
    from .pages.html import build_page

    again = PAGE_COMMAND.get() or f"tlnetron.export(trace, {page.name!r})"
    return build_page(model, companion, page_name=page.name, command=again, colour_by=colour_by or "none").html


@gc_paused()
def run(
    ir: TraceIR,
    options: ExportOptions,
    *,
    baseline: Baseline | None = None,
    diff: DiffIR | None = None,
    progress: Progress | Steps | None = None,
) -> ExportResult:
    """Export an already-read IR with checked ``options``: every stage after the reader.

    ``progress`` is a :data:`~tlnetron.progress.Progress` hook (its reports start at
    ``project``: the IR is read already), or the :class:`~tlnetron.progress.Steps` the
    caller started at ``read``.
    """
    t0 = time.perf_counter()
    clear_memos()
    path, page = options.path, options.page
    steps = progress if isinstance(progress, Steps) else Steps(progress, companion=options.writes_companion)
    steps.begin("project")
    projection = project(ir, options, steps.ticks())
    projection = apply_diff(projection, ir, diff) if diff is not None else projection
    advisories = view_advisories(projection, ir, path)
    codes: list[str] = [code for code, _ in advisories]
    tally = counts(projection)
    steps.begin("metadata")
    meta = model_metadata(projection, ir, counts=tally, warnings=codes, baseline=baseline)
    _validated_metadata(meta, baseline)
    node_words = _validate_nodes(projection, options.writes_companion)
    companion_path = companion_path_for(path) if path is not None and options.writes_companion else None
    companion_data: bytes | None = None
    with staged_files(*_destinations(path, page, companion_path)) as out:
        companion_refusal: TlnetronError | None = None
        if companion_path is not None and path is not None:
            steps.begin("companion")
            companion_data, companion_refusal = _companion(projection, ir, path.name, steps, node_words)
        steps.begin("build")
        built = _build(projection, meta, ir.model_class, steps, companion_data, node_words)
        artifact_data, model_data, companion_data, export_id = built.json, built.proto, built.companion, built.export_id
        n_functions = len(projection.functions)
        # Freed before the checker allocates its copy of the model: a lower peak.
        del built, projection, node_words
        if page is None:  # the page, built last, holds both instead
            for staged, data in ((companion_path, companion_data), (path, artifact_data)):
                if staged is not None and data is not None:
                    out.stage(staged, data)
        steps.within(90, 100)
        steps.begin("check")
        machine = _check(model_data, n_functions)
        del model_data
        if companion_refusal is not None:
            raise companion_refusal
        steps.begin("write")
        if page is not None and path is not None:
            pair = None
            if companion_path is not None and companion_data is not None:
                pair = (companion_path.name, companion_data)
            out.stage(page, _page(page, (path.name, artifact_data), pair, options.colour_by))
        out.commit()
    if machine is not None:
        advisories.append(machine)
    steps.finish()
    for code, message in advisories:
        warn(code, message)
        if code not in codes:  # the machine's advisories are not in the artifact's list
            codes.append(code)
    return ExportResult(
        artifact=path if page is None else None,
        companion=companion_path if page is None else None,
        page=page,
        granularity=options.granularity,
        node_count=tally["nodes"],
        edge_count=tally["edges"],
        typed_edge_count=tally["typed_edges"],
        function_count=tally["functions"],
        warnings=tuple(codes),
        seconds=time.perf_counter() - t0,
        export_id=export_id,
        artifact_bytes=artifact_data,
        companion_bytes=companion_data,
    )


def export_ir(
    ir: TraceIR,
    path: Path | None,
    *,
    granularity: GranularityName,
    depth: int | None,
    show_buffers: BufferPolicyName,
    attachment: bool | None,
    baseline: Baseline | None = None,
    diff: DiffIR | None = None,
    progress: Progress | Steps | None = None,
    page: Path | None = None,
) -> ExportResult:
    """:func:`run` with the options as keywords (trusted, not checked): for tests and
    benchmarks that export a hand-made or synthetic IR."""
    options = ExportOptions(
        granularity=granularity, depth=depth, show_buffers=show_buffers, attachment=attachment, path=path, page=page
    )
    return run(ir, options, baseline=baseline, diff=diff, progress=progress)

"""The public entry point: ``tlnetron.export(trace, path, ...)``, the whole pipeline.

read the trace -> project it (op / module / rolled, buffer policy) -> build the ONNX model
and the companion -> validate everything -> write atomically (-> serve). Every refusal is a
:class:`~tlnetron.errors.TlnetronError` raised before anything is written.
"""

from __future__ import annotations

import contextlib
import gc
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import onnx

from ._generated.vocab import ErrorCode, Granularity, WarningCode
from .companion import build_companion, companion_bytes, drawn_values, iter_nodes
from .errors import Opt, TlnetronError, warn
from .export_id import PLACEHOLDER
from .facts import bytes_text, flops_text
from .ir import TraceIR
from .metadata import encode_metadata, model_description, model_metadata
from .nodes import LEGIBILITY_BUDGET, input_names_memo_clear
from .onnx_build import DISCLAIMER, build_model
from .options import check_activation_stats, check_options, is_page
from .progress import PROGRESS_STAGES, Progress, Steps
from .projection import ELEM_TYPES, PGraph, Projection, shape_text
from .reader import read_trace
from .schemas import SchemaViolation, validate, validate_each
from .validation import QUADRATIC_CHECK_FROM_FUNCTIONS, Shown, check_onnx, checker_is_quadratic, companion_problems
from .writer import companion_path_for, staged_files

__all__ = ["ExportResult", "LEGIBILITY_BUDGET", "PROGRESS_STAGES", "Progress", "export", "export_ir"]


_SHADOWED = {"model.json", "manifest.json", "metadata.json", "serialized_exported_program.json"}


@dataclass(frozen=True, slots=True)
class ExportResult:
    """What an export wrote (and served)."""

    artifact: Path | None
    companion: Path | None
    granularity: str
    node_count: int
    edge_count: int
    typed_edge_count: int
    function_count: int
    warnings: tuple[str, ...]
    """Codes of every warning the export gave: the artifact's ``torchlens.warnings`` (about
    the view), plus any about this machine (``onnx_checker_quadratic``), never recorded in it."""
    seconds: float
    url: str | None = None
    export_id: str = ""
    """The id written into the artifact's ``torchlens.export_id`` and the companion's row of
    that name (``tlnetron.export_id``); "" for a result that did not export."""
    artifact_bytes: bytes = field(default=b"", repr=False)
    """The artifact exactly as written (UTF-8 JSON)."""
    companion_bytes: bytes | None = field(default=None, repr=False)
    """The companion exactly as written, when one was built."""
    server: Any = field(default=None, repr=False, compare=False)
    page: Path | None = None
    """The self-contained HTML page written instead of the two files (a path ending in .html)."""

    @property
    def artifact_json(self) -> str:
        """The artifact's JSON text (decoded from :attr:`artifact_bytes` on access)."""
        return self.artifact_bytes.decode("utf-8")

    @property
    def companion_json(self) -> str | None:
        """The companion's JSON text, or None when no companion was built."""
        return None if self.companion_bytes is None else self.companion_bytes.decode("utf-8")

    def stop(self) -> None:
        """Stop serving (when ``serve=True``); does nothing otherwise."""
        if self.server is not None:
            self.server.stop()


def _version() -> str:
    from . import __version__

    return __version__


def _project(
    ir: TraceIR, granularity: str, depth: int | None, show_buffers: str, progress: Callable[[int, int], None] | None = None
) -> Projection:
    if granularity == Granularity.OP:
        from .view_op import project_op

        return project_op(ir, show_buffers, progress)
    if granularity == Granularity.ROLLED:
        from .view_rolled import project_rolled

        return project_rolled(ir, show_buffers, progress)
    from .view_module import project_module

    return project_module(ir, show_buffers, depth, progress)


def _counts(projection: Projection) -> dict[str, int]:
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


def _artifact_invalid(what: str) -> TlnetronError:
    return TlnetronError(
        ErrorCode.ARTIFACT_INVALID,
        f"the artifact tlnetron built is invalid: {what}",
        where="artifact",
        remedy="this is a bug in tlnetron: please report it with the trace; nothing was written.",
    )


def _validate_nodes(projection: Projection) -> None:
    nodes = list(iter_nodes(projection))
    try:
        validate_each(
            "node-properties",
            (
                {
                    "role": node.role,
                    "attributes": dict(node.attributes),
                    "metadata": {**dict(node.metadata), **dict(node.diff)} if node.diff else dict(node.metadata),
                }
                for node in nodes
            ),
        )
    except SchemaViolation as exc:
        name = nodes[exc.index].name if exc.index is not None else "?"
        raise _artifact_invalid(f"node {name!r}: {exc} at {exc.path}") from None


def _writes_companion(path: Path | None, attachment: bool | None) -> bool:
    """Whether this export writes a companion: beside a file, unless attachment=False."""
    return path is not None and attachment is not False


def _shown(projection: Projection, values: frozenset[str] | None = None) -> Shown:
    nodes = frozenset(n.name.split("\n", 1)[0] for n in iter_nodes(projection))
    return Shown(
        nodes=nodes,
        values=drawn_values(projection) if values is None else values,
        functions=frozenset(f.name for f in projection.functions),
        export_id=PLACEHOLDER,
    )


def _clear_text_memos() -> None:
    """Start every export with empty memos of worded facts (shapes, FLOPs, bytes, ports).

    The memos pay off within one export (values recur across layers); clearing them keeps
    one export from being faster only because an earlier one warmed them, so benchmarks
    that repeat an export measure what a single export costs.
    """
    flops_text.cache_clear()
    bytes_text.cache_clear()
    shape_text.cache_clear()
    input_names_memo_clear()


@contextlib.contextmanager
def _gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while exporting.

    An export allocates many short-lived, acyclic objects; on a process holding a large
    model and trace, a full collection triggered mid-export costs hundreds of milliseconds
    (measured: ~0.35 s on GPT-2-small) and frees nothing of ours. Reference counting still
    frees everything; the collector is restored (and may run) when the export returns.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


@_gc_paused()
def export_ir(
    ir: TraceIR,
    path: Path | None,
    *,
    granularity: str,
    depth: int | None,
    show_buffers: str,
    attachment: bool | None,
    baseline: tuple[str, str | dict[str, Any]] | None = None,
    diff: Any = None,
    progress: Progress | Steps | None = None,
    page: Path | None = None,
) -> ExportResult:
    """Export an already-read IR (options already checked). Used by :func:`export` and tests.

    ``progress`` is a :data:`Progress` hook (its reports start at ``project``: the IR is
    read already), or the one :func:`export` started at ``read``. With ``page``, the
    artifact (named as ``path``) and its companion are not written: one HTML page holding
    Netron's web app and both is written to ``page`` instead (:mod:`tlnetron.html`).
    """
    t0 = time.perf_counter()
    _clear_text_memos()
    steps = progress if isinstance(progress, Steps) else Steps(progress, companion=_writes_companion(path, attachment))
    steps.begin("project")
    projection = _project(ir, granularity, depth, show_buffers, steps.ticks())
    if diff is not None:
        from .diff import apply_diff

        projection = apply_diff(projection, ir, diff)
    codes: list[str] = list(projection.warnings)
    messages: list[tuple[str, str]] = []
    if projection.root_ranks > LEGIBILITY_BUDGET:
        remedy = (
            'use the module view (granularity="module", the default) to fold modules into drill-down boxes'
            if granularity != Granularity.MODULE
            else (
                f"pass a lower depth= (this view groups at depth {projection.depth}) to fold more into boxes"
                if (projection.depth or 1) > 1
                else "trace a sub-module on its own; at depth 1 the top-level modules already fold what they can"
            )
        )
        messages.append((WarningCode.LEGIBILITY_BUDGET_EXCEEDED, f"the root graph is {projection.root_ranks} boxes deep, past the ~{LEGIBILITY_BUDGET}-rank budget Netron draws legibly (it will render as a tall rope). Remedy: {remedy}."))
    if projection.inlined_calls:
        messages.append((WarningCode.FUNCTION_LIMIT_INLINED, f"{projection.inlined_calls} module calls are drawn inline (the deepest levels first): the ONNX checker allows at most 10,000 functions. Remedy: export a sub-module's trace, or pass a larger depth= so fewer calls nest."))
    untyped_dtypes = sorted({op.dtype for op in ir.ops if op.dtype is not None and op.dtype not in ELEM_TYPES})
    if untyped_dtypes:
        messages.append((WarningCode.DTYPE_NOT_REPRESENTABLE, f"dtypes with no ONNX element type ({', '.join(untyped_dtypes)}): their edges carry no shape; each producer says why in its untyped_output attribute."))
    if ir.honesty.capture_status != "complete":
        messages.append((WarningCode.CAPTURE_INCOMPLETE, f"the capture outcome is {ir.honesty.capture_status!r}: the artifact draws only what was captured (torchlens.capture_outcome says so)."))
    if path is not None and (path.name.lower() in _SHADOWED or path.name.lower().endswith(".metadata.json")):
        messages.append((WarningCode.NETRON_FILENAME_SHADOWED, f"Netron offers a file named {path.name!r} to other formats' readers first (Netron 9.3.3 still opens tlnetron's as ONNX; other versions may not). Remedy: name it {path.stem}.onnx.json."))
    codes.extend(c for c, _ in messages)
    counts = _counts(projection)
    steps.begin("metadata")
    meta = model_metadata(projection, ir, counts=counts, warnings=codes, baseline=baseline)
    try:
        validate("model-metadata", meta)
        if baseline is not None and isinstance(baseline[1], dict):
            validate("baseline-summary", baseline[1])
    except SchemaViolation as exc:
        raise _artifact_invalid(f"model metadata: {exc} at {exc.path}") from None
    _validate_nodes(projection)
    companion_data: bytes | None = None
    companion_path = companion_path_for(path) if path is not None and _writes_companion(path, attachment) else None
    # replaced in this order
    destinations = [page] if page is not None else [p for p in (path, companion_path) if p is not None]
    with staged_files(destinations) as out:
        # Both files are built with a placeholder where the export id goes; the builder
        # derives the id from both and writes it in, then both are staged, so the kernel
        # writes them out while the export goes on checking; nothing replaces an existing
        # file until every check has passed (commit), and a refusal removes what was staged.
        companion_refusal: TlnetronError | None = None
        if companion_path is not None and path is not None:
            steps.begin("companion")
            values = drawn_values(projection)
            companion = build_companion(
                projection,
                artifact_name=path.name,
                producer_version=_version(),
                export_id=PLACEHOLDER,
                stats=tuple((op.name, op.stats) for op in ir.ops if op.stats is not None),
                values=values,
            )
            steps.within(35, 100)
            problems = list(companion_problems(companion, _shown(projection, values)))
            steps.within(85, 100)
            if problems:
                first = problems[0]
                companion_refusal = TlnetronError(
                    ErrorCode.NETRON_ATTACHMENT_INVALID,
                    f"{len(problems)} companion row(s) Netron would drop or never show; first: {first.where}: {first.what}.",
                    where=first.where,
                    remedy=("rename the offending nodes (no line breaks), or export with ", Opt("attachment", False), "."),
                    problems=tuple(problems),
                )
            else:
                companion_data = companion_bytes(companion)
            del companion
        steps.begin("build")
        graph_doc = f"{DISCLAIMER}\nView: {granularity}" + (f" at module depth {projection.depth}" if projection.depth else "") + "."
        if projection.depth_reason:
            graph_doc += f"\n{projection.depth_reason}"
        if projection.graph.doc:
            graph_doc += f"\n{projection.graph.doc}"
        # Built a part at a time: only the finished bytes remain when the checker parses
        # its own C++ copy of the model (3-5 KB per node).
        # The export id is derived from the artifact and the companion and written into both.
        try:
            built = build_model(
                projection,
                encode_metadata(meta),
                producer_version=_version(),
                graph_doc=graph_doc,
                model_doc=model_description(meta, ir.model_class),
                progress=steps.ticks(0.8),
                companion=companion_data,
            )
        except ValueError as exc:
            raise _artifact_invalid(str(exc)) from None
        artifact_data, model_data, companion_data, export_id = built.json, built.proto, built.companion, built.export_id
        n_functions = len(projection.functions)
        # The projection is not needed past here: freed before the checker allocates its
        # copy, the export's peak is lower (100k ops: 776 MB, against 918 MB).
        del built, projection
        if page is None:
            if companion_path is not None and companion_data is not None:
                out.stage(companion_path, companion_data)
            if path is not None:
                out.stage(path, artifact_data)
        steps.within(90, 100)
        steps.begin("check")
        check_t0 = time.perf_counter()
        failure = check_onnx(model_data)
        check_s = time.perf_counter() - check_t0
        del model_data
        if failure:  # an invalid artifact is refused before anything the companion says
            raise _artifact_invalid(f"onnx.checker: {failure.splitlines()[0][:400]}")
        if companion_refusal is not None:
            raise companion_refusal
        steps.begin("write")
        if page is not None and path is not None:
            from .html import build_page

            pair = (companion_path.name, companion_data) if companion_path is not None and companion_data is not None else None
            again = f"tlnetron.export(trace, {page.name!r}) again, after pip install --upgrade netron"
            out.stage(page, build_page((path.name, artifact_data), pair, page_name=page.name, command=again).html)
        out.commit()
    if n_functions >= QUADRATIC_CHECK_FROM_FUNCTIONS and checker_is_quadratic():
        # About this machine's onnx, not the artifact: warned, never recorded in it.
        messages.append((WarningCode.ONNX_CHECKER_QUADRATIC, (
            f"onnx {onnx.__version__}'s full check grows with the square of the number of module functions; "
            f"this view has {n_functions:,}, and onnx.checker took {check_s:.1f} s of the export. "
            "Remedy: pip install 'onnx==1.22.0' (the same checks, in time linear in the functions), "
            "or fewer module boxes: a larger depth=, or a sub-module's trace."
        )))
    steps.finish()
    for code, message in messages:
        warn(code, message, stacklevel=4)
        if code not in codes:  # the environment's warnings are not in the artifact's list
            codes.append(code)
    return ExportResult(
        artifact=path if page is None else None,
        companion=companion_path if page is None else None,
        page=page,
        granularity=granularity,
        node_count=counts["nodes"],
        edge_count=counts["edges"],
        typed_edge_count=counts["typed_edges"],
        function_count=counts["functions"],
        warnings=tuple(codes),
        seconds=time.perf_counter() - t0,
        export_id=export_id,
        artifact_bytes=artifact_data,
        companion_bytes=companion_data,
    )


def export(
    trace: Any,
    path: str | os.PathLike[str] | None = None,
    *,
    granularity: str = "module",
    depth: int | None = None,
    show_buffers: str = "meaningful",
    attachment: bool | None = None,
    baseline: Any = None,
    serve: bool = False,
    progress: Progress | None = None,
    activation_stats: bool = True,
) -> ExportResult:
    """Export a TorchLens trace as a Netron artifact (and its metrics companion).

    Args:
        trace: a finished ``torchlens.Trace`` (``torchlens.trace(model, x)``).
        path: where to write the artifact (must end in ``.json``; ``*.onnx.json`` is what
            Netron routes best). None with ``serve=True`` serves from memory. A path ending
            in ``.html`` writes one self-contained page instead (Netron's web app, the
            artifact and its companion; it opens from disk with no server or network).
        granularity: ``"module"`` (default: drill-down boxes), ``"op"`` or ``"rolled"``.
        depth: module depth the root graph groups at (module view only). Left out, the
            module view starts at 1 and descends through single-call wrappers.
        show_buffers: ``"meaningful"`` (default), ``"never"`` or ``"always"``.
        attachment: None writes ``<stem>.attachment.json`` beside a file (skipped for the
            memory-only serve); False never writes it; True demands it.
        baseline: a reference ``Trace`` (per-node diff facts) or a string identifier
            (recorded verbatim).
        serve: serve the artifact through the ``netron`` package on 127.0.0.1.
        progress: called as ``progress(stage, done, total)`` while exporting: ``done / total``
            is the share of the export done so far (never decreasing; ``total`` is the same
            in every call of one export). Each stage is reported when it starts, in this
            order: ``read``, ``project``, ``metadata``, ``companion`` (only when a companion
            is written), ``build``, ``check``, ``write``, then ``done`` once, with
            ``done == total``, after the files are in place. Reading, projecting and building
            also report as they go on large traces (about every 2% of their ops, layers,
            function bodies or nodes); the checker is one step. The shares are estimates (:data:`PROGRESS_STAGES`). An exception
            raised by the hook before ``done`` stops the export, and nothing is written.
        activation_stats: True (default) reads statistics of every captured output tensor
            (min, max, mean and std of its finite elements, NaN and Inf counts, the share of
            zeros) into the companion as value rows, shown in Netron's Connection Properties
            when an edge is clicked, plus the model row ``first non-finite output``. Traces
            with nothing saved have none. False skips the reading (a faster export).

    Returns:
        An :class:`ExportResult` naming what was written (and the served address).

    Raises:
        TlnetronError: with a stable ``code`` (``invalid_granularity``,
            ``invalid_buffer_policy``, ``invalid_depth``, ``depth_not_applicable``,
            ``invalid_path``, ``destination_unwritable``, ``attachment_needs_path``,
            ``not_a_trace``, ``netron_attachment_invalid``, ``invalid_baseline``,
            ``baseline_refused``, ``netron_serve_unavailable``, ...). Nothing is written.
    """
    p = check_options(path, granularity, depth, show_buffers, attachment, serve)
    check_activation_stats(activation_stats)
    page = p if p is not None and is_page(p) else None
    if page is not None:  # named like the artifact the page holds
        p = page.with_name(f"{page.stem}.onnx.json")
    if serve or page is not None:
        from .serve import require_netron

        require_netron()
    steps = Steps(progress, companion=_writes_companion(p, attachment))
    steps.begin("read")
    with _gc_paused():
        ir = read_trace(
            trace,
            show_buffers=show_buffers,
            module_calls=granularity == Granularity.MODULE,
            brief_repeats=granularity == Granularity.ROLLED,
            progress=steps.ticks(),
            # Only the companion shows them: no companion, no statistics to compute.
            activation_stats=activation_stats and _writes_companion(p, attachment),
        )
        baseline_row, diff = None, None
        if baseline is not None:
            from .diff import read_baseline

            baseline_row, diff = read_baseline(trace, baseline)
        result = export_ir(
            ir,
            p,
            granularity=granularity,
            depth=depth,
            show_buffers=show_buffers,
            attachment=attachment,
            baseline=baseline_row,
            diff=diff,
            progress=steps,
            page=page,
        )
        # Free the IR while the collector is still paused: left alive until the function
        # returns, its objects would be young when collection resumes, and the first
        # collection would walk them all.
        del ir, diff
    if serve:
        from .serve import serve_result

        result = serve_result(result)
    return result

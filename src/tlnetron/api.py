"""The public entry point: ``tlnetron.export(trace, path, ...)``.

Checks the options once, reads the trace as the chosen view needs it, runs the stage
sequence (:mod:`tlnetron.pipeline`) and serves the result when asked. Every refusal is a
:class:`~tlnetron.errors.TlnetronError` raised before anything is written.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from ._generated.vocab import ErrorCode, WarningCode
from .errors import TlnetronError
from .options import check_options
from .perf import gc_paused
from .pipeline import run
from .progress import PROGRESS_STAGES, Progress, Steps
from .read.trace import read_trace
from .result import ExportResult
from .views import view
from .views.nodes import LEGIBILITY_BUDGET

if TYPE_CHECKING:
    from .pages.notebook import NotebookPage

__all__ = ["ExportResult", "LEGIBILITY_BUDGET", "PROGRESS_STAGES", "Progress", "export", "show"]


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
    colour_by: str | None = None,
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
            function bodies or nodes); the checker is one step. The shares are estimates
            (:data:`PROGRESS_STAGES`). An exception raised by the hook before ``done`` stops the
            export, and nothing is written.
        activation_stats: True (default) reads statistics of every captured output tensor
            (min, max, mean and std of its finite elements, NaN and Inf counts, the share of
            zeros) into the companion as value rows, shown in Netron's Connection Properties
            when an edge is clicked, plus the model row ``first non-finite output``. Traces
            with nothing saved have none. False skips the reading (a faster export).
        colour_by: the page's first heat-map colour scheme (``none``, ``time``, ``flops``,
            ``bytes``, ``params``, ``diff``, ``nonfinite``), for an export that makes a page
            (a ``.html`` path or ``serve=True``); refused (``colour_needs_page``) otherwise.

    Returns:
        An :class:`ExportResult` naming what was written (and the served address).

    Raises:
        TlnetronError: with a stable ``code`` (``invalid_granularity``,
            ``invalid_buffer_policy``, ``invalid_depth``, ``depth_not_applicable``,
            ``invalid_path``, ``destination_unwritable``, ``attachment_needs_path``,
            ``not_a_trace``, ``netron_attachment_invalid``, ``invalid_baseline``,
            ``baseline_refused``, ``netron_serve_unavailable``, ``invalid_colour_scheme``,
            ``colour_needs_page``, ...). Nothing is written.
    """
    options = check_options(path, granularity, depth, show_buffers, attachment, serve, activation_stats, colour_by)
    if serve or options.page is not None:
        from .pages.app import require_netron

        require_netron()
    steps = Steps(progress, companion=options.writes_companion)
    steps.begin("read")
    reads = view(options.granularity).reads
    with gc_paused():
        ir = read_trace(
            trace,
            show_buffers=options.show_buffers,
            module_calls=reads.module_calls,
            brief_repeats=reads.brief_repeats,
            progress=steps.ticks(),
            # Only the companion shows them: no companion, no statistics to compute.
            activation_stats=options.activation_stats and options.writes_companion,
            # Read beside the views and the build; the companion waits for them.
            background_stats=True,
        )
        baseline_row, diff = None, None
        if baseline is not None:
            from .read.baseline import read_baseline

            baseline_row, diff = read_baseline(trace, baseline)
        result = run(ir, options, baseline=baseline_row, diff=diff, progress=steps)
        # Free the IR while the collector is still paused: left alive until the function
        # returns, its objects would be young when collection resumes, and the first
        # collection would walk them all.
        del ir, diff
    if serve:
        from .pages.serve import serve_result

        if options.path is None and attachment is not False:
            _warn_served_without_companion()
        result = serve_result(result, colour_by=options.colour_by or "none")
    return result


def _draw(result: ExportResult) -> str:
    from .pages import notebook

    return notebook.show(result)._repr_html_()


ExportResult.draw = _draw


def _warn_served_without_companion() -> None:
    """The memory-only serve keeps the spec's rule (no file, no companion) but says so, with the remedy."""
    from .errors import warn
    from .pipeline import PAGE_COMMAND

    command = PAGE_COMMAND.get()
    remedy = f"{command} -o model.onnx.json" if command else "tlnetron.export(trace, 'model.onnx.json', serve=True)"
    warn(
        WarningCode.SERVED_WITHOUT_COMPANION,
        "serving from memory, with no file: there is no companion, so the page shows no metrics "
        f"(observed times, FLOPs, bytes). Remedy: give a path, {remedy}; the companion is written "
        "beside it and served too.",
    )


def show(
    what: Any,
    *,
    attachment: str | os.PathLike[str] | bool | None = None,
    height: int = 720,
    colour_by: str = "none",
    **export_options: Any,
) -> NotebookPage:
    """Show an artifact (and its companion) in Netron, in a notebook cell, with no server.

    Args:
        what: a torchlens Trace (exported with ``export_options`` into a temporary folder
            that is gone when the page is built: the page holds both files), what
            :func:`tlnetron.export` returned (a memory-only export too), or the path of an
            artifact it wrote.
        attachment: for a path, the companion's path; None (default) takes
            ``<stem>.attachment.json`` beside the artifact when it is there; False shows
            the model alone. For an export result, False leaves its companion out.
        height: the iframe's height in CSS pixels.
        colour_by: the heat map's first colour scheme (none, time, flops, bytes, params,
            diff, nonfinite; ``none``: Netron's own colours).
        export_options: for a trace, :func:`export`'s keywords (``granularity``,
            ``depth``, ``show_buffers``, ``baseline``, ``activation_stats``).

    Returns:
        A :class:`tlnetron.pages.notebook.NotebookPage`: the cell shows it when it is the
        cell's value (or is passed to ``IPython.display.display``).

    Raises:
        TlnetronError: ``invalid_path`` (a file cannot be read, or is not an artifact),
            ``netron_attachment_invalid``, ``netron_serve_unavailable`` (netron is not
            installed), ``invalid_option`` (``what`` or ``height`` is of the wrong kind),
            ``invalid_colour_scheme``, and for a trace whatever :func:`export` refuses.
    """
    import tempfile

    from .pages import notebook

    notebook.check_show(what, height, colour_by, export_options)
    if notebook.shows_files(what):
        return notebook.show(what, attachment=attachment, height=height, colour_by=colour_by)
    with tempfile.TemporaryDirectory(prefix="tlnetron-show-") as tmp:
        try:
            result = export(what, os.path.join(tmp, "trace.onnx.json"), **export_options)
        except TlnetronError as exc:
            if exc.code != ErrorCode.NOT_A_TRACE or export_options:
                raise
            result = what  # not a trace either: show() says what it takes
    return notebook.show(result, attachment=attachment, height=height, colour_by=colour_by)

"""Stage 6c, a notebook: the one-file page (:mod:`tlnetron.html`) shown in a cell's output.

``tlnetron.show(...)`` returns an object whose ``_repr_html_`` is an ``<iframe srcdoc=...>``
holding the whole page: Netron's web app, the artifact and the companion. Nothing is
served and nothing is fetched; the notebook keeps the page in the cell's output (about
1.9 MiB per shown model), so a saved notebook shows it again where its outputs are
trusted (a notebook frontend may strip the iframe from outputs it does not trust: run the
cell again).
"""

from __future__ import annotations

import html
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ._generated.vocab import ErrorCode, WarningCode
from .errors import TlnetronError, warn
from .html import Page, build_page, page_from_files

__all__ = ["NotebookPage", "show"]

_COMMAND = "tlnetron.show(...)"
"""What the page's note says to run again, with a newer netron, once the page has expired."""


@dataclass(frozen=True, slots=True)
class NotebookPage:
    """A page to show in a notebook cell (its ``_repr_html_``), or to save (:attr:`page`).

    Attributes:
        page: the page (:class:`tlnetron.html.Page`): its HTML bytes, the Netron version
            inside and when Netron's age gate stops it.
        title: what the page shows (the artifact's and companion's names).
        height: the iframe's height in CSS pixels.
    """

    page: Page
    title: str
    height: int = 720

    def _repr_html_(self) -> str:
        doc = html.escape(self.page.html.decode("utf-8"), quote=True)
        return (
            f'<iframe srcdoc="{doc}" title="{html.escape(self.title, quote=True)}" '
            f'style="width:100%;height:{self.height}px;border:1px solid #ddd;box-sizing:border-box"></iframe>'
        )

    def __repr__(self) -> str:
        size = len(self.page.html) / 2**20
        return (
            f"<tlnetron page: {self.title} in Netron {self.page.netron_version}, {size:.1f} MiB, "
            f"works until {self.page.expires:%Y-%m-%d}; shown by a notebook>"
        )


def _name(value: Path | None, default: str) -> str:
    return value.name if value is not None else default


def _exported(trace: Any, options: dict[str, Any]) -> Any:
    """A trace exported with its companion into a temporary folder, gone on return (the result
    holds both files' bytes); what is not a trace is returned as it is, for show() to refuse."""
    import tempfile

    from .api import export

    with tempfile.TemporaryDirectory(prefix="tlnetron-show-") as tmp:
        try:
            return export(trace, Path(tmp) / "trace.onnx.json", **options)
        except TlnetronError as exc:
            if exc.code == ErrorCode.NOT_A_TRACE and not options:
                return trace
            raise


def show(what: Any, *, attachment: str | os.PathLike[str] | bool | None = None, height: int = 720,
         colour_by: str = "none", **export_options: Any) -> NotebookPage:
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
        export_options: for a trace, :func:`tlnetron.export`'s keywords (``granularity``,
            ``depth``, ``show_buffers``, ``baseline``, ``activation_stats``).

    Returns:
        A :class:`NotebookPage`: the cell shows it when it is the cell's value (or is
        passed to ``IPython.display.display``).

    Raises:
        TlnetronError: ``invalid_path`` (a file cannot be read, or is not an artifact),
            ``netron_attachment_invalid``, ``netron_serve_unavailable`` (netron is not
            installed), ``invalid_option`` (``what`` or ``height`` is of the wrong kind),
            ``invalid_colour_scheme``.
    """
    from .colours import check_colour
    from .writer import companion_path_for

    check_colour(colour_by)

    if isinstance(height, bool) or not isinstance(height, int) or height < 100:
        raise TlnetronError(ErrorCode.INVALID_OPTION, f"height={height!r} is not a whole number of pixels from 100.",
                            where="height", remedy="pass height=720 (the default) or another number of pixels.")
    if export_options and (isinstance(what, (str, os.PathLike)) or hasattr(what, "artifact_bytes")):
        raise TlnetronError(
            ErrorCode.INVALID_OPTION,
            f"{', '.join(sorted(export_options))} only apply when show() is given a trace, not {type(what).__name__}.",
            where=sorted(export_options)[0],
            remedy="pass them to tlnetron.export(...), or give show() the trace itself.",
        )
    if not isinstance(what, (str, os.PathLike)) and not hasattr(what, "artifact_bytes"):
        what = _exported(what, export_options)
    if isinstance(what, (str, os.PathLike)):
        artifact = Path(what)
        companion: Path | None
        if attachment is None:
            beside = companion_path_for(artifact)
            companion = beside if beside.is_file() else None
        elif attachment is False:
            companion = None
        elif attachment is True:
            companion = companion_path_for(artifact)
        else:
            companion = Path(attachment)
        page = page_from_files(artifact, companion, attachment_flag="attachment=", outcome="nothing was shown",
                               command=_COMMAND, colour_by=colour_by)
        names = artifact.name + (f" + {companion.name}" if companion is not None else "")
    elif hasattr(what, "artifact_bytes") and hasattr(what, "companion_bytes"):
        name = _name(what.artifact, "model.onnx.json")
        pair = None
        if what.companion_bytes is not None and attachment is not False:
            pair = (_name(what.companion, name.removesuffix(".json") + ".attachment.json"), what.companion_bytes)
        page = build_page((name, what.artifact_bytes), pair, command=_COMMAND, colour_by=colour_by)
        names = name + (f" + {pair[0]}" if pair is not None else "")
    else:
        raise TlnetronError(
            ErrorCode.INVALID_OPTION,
            f"show() takes a trace, what tlnetron.export returned or an artifact's path, not {type(what).__name__}.",
            where="what",
            remedy="pass the trace, tlnetron.export(trace, 'model.onnx.json') or 'model.onnx.json'.",
        )
    if page.expired():
        warn(
            WarningCode.NETRON_APP_EXPIRED,
            f"the installed Netron web app (netron {page.netron_version}, built {page.built:%Y-%m-%d}) stopped starting "
            f"on {page.expires:%Y-%m-%d}: the cell will only ask to update it. Remedy: pip install --upgrade netron, "
            "restart the kernel and show it again.",
        )
    return NotebookPage(page, names, height)

"""A notebook: the one-file page (:mod:`tlnetron.pages.html`) shown in a cell's output.

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

from .._generated.vocab import ErrorCode
from ..errors import TlnetronError
from .html import Page, build_page, page_from_files, warn_if_expired

__all__ = ["NotebookPage", "show"]

_COMMAND = "tlnetron.show(...)"
"""What the page's note says to run again, with a newer netron, once the page has expired."""


@dataclass(frozen=True, slots=True)
class NotebookPage:
    """A page to show in a notebook cell (its ``_repr_html_``), or to save (:attr:`page`).

    Attributes:
        page: the page (:class:`tlnetron.pages.html.Page`): its HTML bytes, the Netron version
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


def check_show(what: Any, height: int, colour_by: str, export_options: dict[str, Any]) -> None:
    """show()'s refusals that come before any work: the colour, the height, export keywords beside no trace."""
    from .colours import check_colour

    check_colour(colour_by)
    if isinstance(height, bool) or not isinstance(height, int) or height < 100:
        raise TlnetronError(
            ErrorCode.INVALID_OPTION,
            f"height={height!r} is not a whole number of pixels from 100.",
            where="height",
            remedy="pass height=720 (the default) or another number of pixels.",
        )
    if export_options and (isinstance(what, (str, os.PathLike)) or hasattr(what, "artifact_bytes")):
        raise TlnetronError(
            ErrorCode.INVALID_OPTION,
            f"{', '.join(sorted(export_options))} only apply when show() is given a trace, not {type(what).__name__}.",
            where=sorted(export_options)[0],
            remedy="pass them to tlnetron.export(...), or give show() the trace itself.",
        )


def shows_files(what: Any) -> bool:
    """Whether show() draws ``what`` as it is (a path or an export's result), not a trace to export first."""
    return isinstance(what, (str, os.PathLike)) or hasattr(what, "artifact_bytes")


def show(
    what: Any, *, attachment: str | os.PathLike[str] | bool | None = None, height: int = 720, colour_by: str = "none"
) -> NotebookPage:
    """A result or an artifact's path as a notebook page; :func:`tlnetron.show` (``api.show``)
    checks the arguments first (:func:`check_show`), exports a trace and documents them."""
    from ..write.pair import companion_path_for

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
        page = page_from_files(
            artifact,
            companion,
            attachment_flag="attachment=",
            outcome="nothing was shown",
            command=_COMMAND,
            colour_by=colour_by,
        )
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
    warn_if_expired(
        page,
        "the cell will only ask to update it. "
        "Remedy: pip install --upgrade netron, restart the kernel and show it again.",
    )
    return NotebookPage(page, names, height)

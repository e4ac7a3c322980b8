"""The export's options, checked before anything is read.

:func:`check_options` is the check :func:`tlnetron.export` runs first; the command line
runs the same check before it imports torch or loads a saved trace, so a mistyped option is
refused in a fraction of a second, with the same code. This module imports neither onnx
nor torch.

Refusals name options as :class:`~tlnetron.errors.Opt` parts: Python callers read
``granularity="module"``, the command line reads ``--granularity module``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import cast

from ._generated.vocab import (
    BUFFER_POLICY,
    COLOUR_SCHEME,
    GRANULARITY,
    BufferPolicyName,
    ColourScheme,
    ColourSchemeName,
    ErrorCode,
    Granularity,
    GranularityName,
)
from .errors import Opt, TlnetronError

__all__ = ["ExportOptions", "check_activation_stats", "check_colour_by", "check_options", "check_progress", "is_page"]


@dataclass(frozen=True, slots=True)
class ExportOptions:
    """Every option of one export, checked once (:func:`check_options`) and then trusted by
    every stage. ``path`` is the artifact's; with ``page``, the artifact is named so inside
    the one HTML page written instead of the two files."""

    granularity: GranularityName = "module"
    depth: int | None = None
    show_buffers: BufferPolicyName = "meaningful"
    attachment: bool | None = None
    activation_stats: bool = True
    serve: bool = False
    path: Path | None = None
    page: Path | None = None
    colour_by: ColourSchemeName | None = None

    @property
    def writes_companion(self) -> bool:
        """Whether a companion is built: beside a file, unless ``attachment=False``."""
        return self.path is not None and self.attachment is not False


def check_options(
    path: object,
    granularity: object,
    depth: object,
    show_buffers: object,
    attachment: object,
    serve: object,
    activation_stats: object = True,
    colour_by: object = None,
) -> ExportOptions:
    """Check :func:`tlnetron.export`'s options (and the destination folder) before any work.

    Returns:
        The checked options; ``path`` is None for the memory-only serve.

    Raises:
        TlnetronError: ``invalid_granularity``, ``invalid_buffer_policy``, ``invalid_depth``,
            ``depth_not_applicable``, ``invalid_option``, ``attachment_needs_path``,
            ``invalid_path``, ``destination_unwritable``, ``invalid_colour_scheme`` or
            ``colour_needs_page`` (``colour_by`` with no page: neither an ``.html`` path nor ``serve``).
    """
    if colour_by is not None:
        check_colour_by(colour_by)
    _check_choices(granularity, show_buffers)
    _check_depth(depth, granularity)
    _check_switches(attachment, serve)
    if path is None:
        _check_memory_only(attachment, serve)
        return _checked(granularity, depth, show_buffers, attachment, serve, activation_stats, None, colour_by)
    p = _check_path(path, serve)
    return _checked(granularity, depth, show_buffers, attachment, serve, activation_stats, p, colour_by)


def _check_choices(granularity: object, show_buffers: object) -> None:
    """``granularity`` and ``show_buffers`` are words of their vocabularies."""
    if not isinstance(granularity, str) or granularity not in GRANULARITY:
        raise TlnetronError(
            ErrorCode.INVALID_GRANULARITY,
            (Opt("granularity", granularity), f" is not one of {', '.join(GRANULARITY)}."),
            where="granularity",
            remedy=(
                "use ",
                Opt("granularity", "module"),
                " (the architecture diagram), ",
                Opt("granularity", "op"),
                " or ",
                Opt("granularity", "rolled"),
                ".",
            ),
        )
    if not isinstance(show_buffers, str) or show_buffers not in BUFFER_POLICY:
        raise TlnetronError(
            ErrorCode.INVALID_BUFFER_POLICY,
            (Opt("show_buffers", show_buffers), f" is not one of {', '.join(BUFFER_POLICY)}."),
            where="show_buffers",
            remedy=(
                "use ",
                Opt("show_buffers", "meaningful"),
                " (default), ",
                Opt("show_buffers", "never"),
                " or ",
                Opt("show_buffers", "always"),
                ".",
            ),
        )


def _check_depth(depth: object, granularity: object) -> None:
    """``depth``: a positive int, for the module view only."""
    if depth is None:
        return
    if isinstance(depth, bool) or not isinstance(depth, int) or depth < 1:
        raise TlnetronError(
            ErrorCode.INVALID_DEPTH,
            (Opt("depth", depth), " is not a positive integer."),
            where="depth",
            remedy=("pass ", Opt("depth", 1), " (the top-level modules), 2, ... or leave it out."),
        )
    if granularity != Granularity.MODULE:
        raise TlnetronError(
            ErrorCode.DEPTH_NOT_APPLICABLE,
            (
                Opt("depth", depth),
                " applies only to ",
                Opt("granularity", "module"),
                ", not to ",
                Opt("granularity", granularity),
                ".",
            ),
            where="depth",
            remedy=("drop ", Opt("depth"), ", or use ", Opt("granularity", "module"), "."),
        )


def _check_switches(attachment: object, serve: object) -> None:
    """``attachment``: None, True or False; ``serve``: a bool."""
    if attachment is not None and not isinstance(attachment, bool):
        raise TlnetronError(
            ErrorCode.INVALID_OPTION,
            (Opt("attachment", attachment), " is not one of the three choices."),
            where="attachment",
            remedy=(
                "use ",
                Opt("attachment", None),
                " (default: write it beside a file), ",
                Opt("attachment", True),
                " (demand it) or ",
                Opt("attachment", False),
                " (never).",
            ),
        )
    if not isinstance(serve, bool):
        raise TlnetronError(
            ErrorCode.INVALID_OPTION,
            (Opt("serve", serve), " is not one of the two choices."),
            where="serve",
            remedy=("use ", Opt("serve", True), " or leave it out."),
        )


def _check_memory_only(attachment: object, serve: object) -> None:
    """No path: only the memory-only serve, which has no companion file to demand."""
    if attachment is True:
        raise TlnetronError(
            ErrorCode.ATTACHMENT_NEEDS_PATH,
            (
                Opt("attachment", True),
                " needs a file for the companion to sit beside, and there is none (",
                Opt("path", None),
                ").",
            ),
            where="attachment",
            remedy=(
                "pass ",
                Opt("path", "model.onnx.json"),
                ", or leave ",
                Opt("attachment", None),
                " (the default) for the memory-only serve.",
            ),
        )
    if not serve:
        raise TlnetronError(
            ErrorCode.INVALID_OPTION,
            ("nothing to do: ", Opt("path", None), " and ", Opt("serve", False), "."),
            where="path",
            remedy=("pass ", Opt("path", "model.onnx.json"), ", or ", Opt("serve", True), "."),
        )


def _check_path(path: object, serve: object) -> Path:
    """The artifact's (or page's) path: text the system takes, a name Netron opens, a folder
    we can write in."""
    if not isinstance(path, (str, os.PathLike)):
        raise TlnetronError(
            ErrorCode.INVALID_PATH,
            (Opt("path", path), " is not a file path."),
            where="path",
            remedy=("pass ", Opt("path", "model.onnx.json"), "."),
        )
    p = Path(os.fspath(path))
    _check_path_text(p)
    if is_page(p):
        if serve is True:
            raise TlnetronError(
                ErrorCode.INVALID_OPTION,
                (Opt("serve", True), f" with a page ({p.name!r}): the page opens from disk and needs no server."),
                where="serve",
                remedy=("open the page in a browser, or export ", Opt("path", "model.onnx.json"), " to serve it."),
            )
    elif not p.name.lower().endswith(".json") or p.name.lower().endswith(".attachment.json"):
        raise TlnetronError(
            ErrorCode.INVALID_PATH,
            f"{str(p)!r} does not end in .json or .html (or ends in .attachment.json, the companion's name).",
            where=str(p),
            remedy=f'name the artifact like "{p.stem or "model"}.onnx.json" (Netron reads ONNX JSON by that ending), '
            f'or "{p.stem or "model"}.html" for one page holding Netron, the model and its companion.',
        )
    if p.is_dir():  # after the checks above, stat() cannot raise on the path's text
        raise TlnetronError(
            ErrorCode.INVALID_PATH,
            f"{str(p)!r} is a directory.",
            where=str(p),
            remedy="pass a file path inside it, e.g. its_folder/model.onnx.json.",
        )
    parent = p.parent if str(p.parent) else Path(".")
    if not parent.is_dir() or not os.access(parent, os.W_OK | os.X_OK):
        raise TlnetronError(
            ErrorCode.DESTINATION_UNWRITABLE,
            f"the folder {str(parent)!r} does not exist or is not writable.",
            where=str(parent),
            remedy="create the folder first, or choose one you can write to.",
        )
    return p


def _checked(
    granularity: object,
    depth: object,
    show_buffers: object,
    attachment: object,
    serve: object,
    activation_stats: object,
    p: Path | None,
    colour_by: object,
) -> ExportOptions:
    check_activation_stats(activation_stats)
    page = p if p is not None and is_page(p) else None
    if colour_by is not None and page is None and serve is not True:
        raise TlnetronError(
            ErrorCode.COLOUR_NEEDS_PAGE,
            (
                Opt("colour_by", colour_by),
                " colours a page, and this export makes none (",
                Opt("path", str(p) if p is not None else None),
                "); nothing was written.",
            ),
            where="colour_by",
            remedy=(
                "make a page: ",
                Opt("path", "model.html"),
                " or ",
                Opt("serve", True),
                " (or tlnetron html / tlnetron.show on the files written), or drop ",
                Opt("colour_by"),
                ".",
            ),
        )
    return ExportOptions(
        granularity=cast(GranularityName, granularity),
        depth=cast("int | None", depth),
        show_buffers=cast(BufferPolicyName, show_buffers),
        attachment=cast("bool | None", attachment),
        activation_stats=bool(activation_stats),
        serve=bool(serve),
        # A page is named like the artifact it holds.
        path=page.with_name(f"{page.stem}.onnx.json") if page is not None else p,
        page=page,
        colour_by=cast("ColourSchemeName | None", colour_by),
    )


def check_colour_by(value: object) -> ColourSchemeName:
    """``value`` if it is a colour scheme, else refuse with ``invalid_colour_scheme`` listing them.

    The one check of every page-making surface (export, show, serve, html, render).

    Raises:
        TlnetronError: ``invalid_colour_scheme``.
    """
    if isinstance(value, str) and value in COLOUR_SCHEME:
        return value
    raise TlnetronError(
        ErrorCode.INVALID_COLOUR_SCHEME,
        (Opt("colour_by", value), " is not a colour scheme; nothing was written."),
        where="colour_by",
        remedy=(f"choose one of: {', '.join(COLOUR_SCHEME)} (default ", Opt("colour_by", ColourScheme.NONE), ")."),
    )


_BESIDE_BYTES = len(".attachment.json") - len(".json") + len(".") + len(".4194304.tlnetron-tmp")
"""Bytes the longest sibling a write makes adds to the artifact's file name: the companion's
temporary file, ``.<stem>.attachment.json.<pid>.tlnetron-tmp``."""


def _check_path_text(p: Path) -> None:
    """Refuse a path the file system or JSON cannot hold, before anything touches it."""
    text = str(p)
    if "\x00" in text:
        raise TlnetronError(
            ErrorCode.INVALID_PATH,
            f"{text!r} contains a NUL character, which no file name can hold.",
            where="path",
            remedy="pass a path without NUL characters, such as model.onnx.json.",
        )
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise TlnetronError(
            ErrorCode.INVALID_PATH,
            f"{text!r} is not valid Unicode text (it holds lone surrogates), so the companion cannot name it in JSON.",
            where="path",
            remedy="pass a path of valid UTF-8 text, such as model.onnx.json.",
        ) from None
    check_os_limits(p, "path", folders_only=True)  # the file name's own limit is checked below, counting its siblings
    parent = p.parent if str(p.parent) else Path(".")
    try:
        name_max = os.pathconf(parent, "PC_NAME_MAX") if parent.is_dir() else 255
    except (OSError, ValueError, AttributeError):
        name_max = 255
    longest = name_max - _BESIDE_BYTES
    if len(p.name.encode("utf-8")) > longest:
        raise TlnetronError(
            ErrorCode.INVALID_PATH,
            f"the file name is {len(p.name.encode('utf-8'))} bytes long; with the companion and the temporary files "
            f"written beside it, this folder takes at most {longest} bytes ({name_max} per name).",
            where="path",
            remedy=f"choose a file name of at most {longest} bytes, such as model.onnx.json.",
        )


_PATH_MAX = 4096
"""Linux's longest path a system call takes, in bytes (the kernel refuses longer with ENAMETOOLONG)."""
_NAME_MAX = 255


def check_os_limits(p: Path, flag: str, *, folders_only: bool = False) -> None:
    """Refuse, before anything touches it, a path no system call takes: NUL, not encodable, past PATH_MAX or NAME_MAX.

    Raises:
        TlnetronError: ``invalid_path``.
    """
    text = str(p)
    try:
        raw = os.fsencode(text)
    except (UnicodeEncodeError, ValueError):
        raw = None
    if "\x00" in text or raw is None:
        why = "contains a NUL character" if "\x00" in text else "cannot be encoded as a file name"
        raise TlnetronError(
            ErrorCode.INVALID_PATH,
            f"{flag} {text[:80]!r}… {why}; nothing was written.",
            where=flag,
            remedy="pass a path of plain text without NUL characters.",
        )
    if len(raw) + _BESIDE_BYTES >= _PATH_MAX:
        raise TlnetronError(
            ErrorCode.INVALID_PATH,
            f"{flag} is {len(raw):,} bytes long, past the {_PATH_MAX - _BESIDE_BYTES - 1:,} "
            "the system takes with the files written beside it; nothing was written.",
            where=flag,
            remedy="pass a shorter path (cd into the folder and pass a relative one).",
        )
    parts = raw.split(b"/")
    longest = max((len(part) for part in (parts[:-1] if folders_only else parts)), default=0)
    if longest > _NAME_MAX:
        raise TlnetronError(
            ErrorCode.INVALID_PATH,
            f"{flag} has a name of {longest} bytes, "
            f"past the {_NAME_MAX} a file system takes per name; nothing was written.",
            where=flag,
            remedy="pass a path whose every folder and file name is at most 255 bytes.",
        )


def is_page(path: Path) -> bool:
    """Whether ``path`` names a self-contained HTML page rather than an artifact."""
    return path.suffix.lower() in (".html", ".htm")


def check_progress(progress: object) -> None:
    """Refuse a ``progress=`` that is not a callable ``(stage, done, total)`` hook.

    Raises:
        TlnetronError: ``invalid_option``.
    """
    if progress is not None and not callable(progress):
        raise TlnetronError(
            ErrorCode.INVALID_OPTION,
            (Opt("progress", progress), " is not a function."),
            where="progress",
            remedy=("pass a function called as progress(stage, done, total), or leave ", Opt("progress", None), "."),
        )


def check_activation_stats(activation_stats: object) -> None:
    """Refuse an ``activation_stats=`` that is not a bool.

    Raises:
        TlnetronError: ``invalid_option``.
    """
    if not isinstance(activation_stats, bool):
        raise TlnetronError(
            ErrorCode.INVALID_OPTION,
            (Opt("activation_stats", activation_stats), " is not one of the two choices."),
            where="activation_stats",
            remedy=(
                "use ",
                Opt("activation_stats", True),
                " (default: statistics of every captured tensor on its edge) or ",
                Opt("activation_stats", False),
                " (none, a faster export).",
            ),
        )

"""Reading a JSON file someone hands to ``tlnetron validate`` or ``tlnetron serve``, as Netron would.

Whatever the file is, the answer is the parsed value or one :class:`~tlnetron.errors.Problem`
saying why Netron could not read it either, never an exception: a FIFO or a device is
refused before it is read (reading one would block, or never end), a UTF-8 byte-order mark
is skipped (Netron skips it), nesting too deep for a parser is reported, and numbers
JavaScript's ``JSON.parse`` would change (integers past 2**53 rounded, numbers past the
largest double turned into Infinity, ``NaN`` and ``Infinity`` literals, which make
``JSON.parse`` refuse the whole file) are listed with what Netron does with them.
"""

from __future__ import annotations

import json
import math
import os
import stat
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from .._generated.vocab import COMPANION_SIGNATURE, ErrorCode, ValidationCode
from ..errors import Problem, TlnetronError

__all__ = [
    "MAX_BYTES",
    "MAX_DEPTH",
    "PAGE_MAX_BYTES",
    "JsonFile",
    "check_page_fits",
    "companion_object",
    "parse_json_bytes",
    "read_input",
    "read_json_file",
    "too_deep",
]

_BOM = b"\xef\xbb\xbf"
_SAFE_INTEGER = 2**53
MAX_BYTES = 0x7FFFF000 - 1
"""Netron's own limit: it reads JSON byte by byte (never one string), and no file of 0x7ffff000
bytes or more (view.js)."""
PAGE_MAX_BYTES = 2**29 - 24
"""Our pages' heat map parses the file as one JavaScript string; V8's longest holds this many
UTF-16 units, which no more bytes exceed."""
_DOUBLE_DIGITS = 309
"""An integer of more digits is past the largest double (of this many, some are): ``JSON.parse``
reads it as Infinity."""


@dataclass(frozen=True, slots=True)
class JsonFile:
    """A JSON file as read: its value (None when unreadable), its text (without a byte-order
    mark; "" when unreadable), and what is wrong with it."""

    value: Any
    problems: tuple[Problem, ...]
    text: str = ""


def _fail(path: Path, code: str, what: str) -> JsonFile:
    return JsonFile(None, (Problem(code, str(path), what),))


def read_json_file(path: Path, *, what: str = "file", lossy: str = ValidationCode.NETRON_UNREADABLE) -> JsonFile:
    """Read and parse ``path``; never raises for anything the file holds or is.

    ``lossy`` is the code of problems about numbers JavaScript would change.
    """
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        return _fail(path, ValidationCode.JSON_INVALID, f"cannot open the {what} ({exc.strerror or exc})")
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            kind = (
                "a folder"
                if stat.S_ISDIR(info.st_mode)
                else "a pipe"
                if stat.S_ISFIFO(info.st_mode)
                else "a device or socket"
            )
            return _fail(path, ValidationCode.JSON_INVALID, f"the {what} is {kind}, not a regular file")
        if info.st_size > MAX_BYTES:
            return _fail(
                path,
                ValidationCode.JSON_INVALID,
                f"the {what} is {info.st_size:,} bytes, "
                f"past the {MAX_BYTES:,} Netron can open (it reads no JSON file of more)",
            )
        with os.fdopen(fd, "rb", closefd=False) as fh:
            data = fh.read(MAX_BYTES + 1)
    except OSError as exc:
        return _fail(path, ValidationCode.JSON_INVALID, f"cannot read the {what} ({exc.strerror or exc})")
    finally:
        os.close(fd)
    return parse_json_bytes(data, str(path), what=what, lossy=lossy)


class _AsJavaScript:
    """json.loads' number hooks: each number read as ``JSON.parse`` reads it, and a problem
    for each one that changes on the way (or that JavaScript refuses)."""

    def __init__(self, where: str, what: str, lossy: str) -> None:
        self.where = where
        self.what = what
        self.lossy = lossy
        self.changed: list[Problem] = []

    def integer(self, token: str) -> int | float:
        if len(token.lstrip("-")) > _DOUBLE_DIGITS:
            # Read as JavaScript does, so no later stage converts (or prints) an unbounded int.
            self.changed.append(
                Problem(
                    self.lossy,
                    self.where,
                    f"the integer {token[:40]}… "
                    f"of {len(token.lstrip('-')):,} digits is past the largest double: JavaScript reads it as Infinity",
                )
            )
            return -math.inf if token.startswith("-") else math.inf
        value = int(token)
        if abs(value) > _SAFE_INTEGER:
            try:
                shown = float(value)
            except OverflowError:
                self.changed.append(
                    Problem(
                        self.lossy,
                        self.where,
                        f"the integer {token[:40]}… is past the largest double: JavaScript reads it as Infinity",
                    )
                )
                return -math.inf if value < 0 else math.inf
            self.changed.append(
                Problem(
                    self.lossy,
                    self.where,
                    f"the integer {token[:40]}{'…' if len(token) > 40 else ''} "
                    f"is past 2**53: JavaScript reads it as {_js(shown)}",
                )
            )
        return value

    def real(self, token: str) -> float:
        value = float(token)
        if math.isinf(value):
            self.changed.append(
                Problem(
                    self.lossy,
                    self.where,
                    f"the number {token[:40]} is past the largest double: JavaScript reads it as Infinity",
                )
            )
        return value

    def constant(self, token: str) -> float:
        # Read on, so the rows holding it can be named too; the file stays refused.
        problem = Problem(
            ValidationCode.JSON_INVALID,
            self.where,
            f"{token} is not JSON: JavaScript's JSON.parse refuses the whole {self.what}",
        )
        if problem not in self.changed:
            self.changed.append(problem)
        return float(token)


def parse_json_bytes(
    data: bytes, where: str, *, what: str = "file", lossy: str = ValidationCode.NETRON_UNREADABLE
) -> JsonFile:
    """Parse JSON text as Netron's ``JSON.parse`` sees it (see the module docstring)."""
    if data.startswith(_BOM):
        data = data[len(_BOM) :]
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return JsonFile(
            None,
            (
                Problem(
                    ValidationCode.JSON_INVALID,
                    where,
                    f"the {what} is not UTF-8 text ({exc.reason} at byte {exc.start})",
                ),
            ),
        )
    numbers = _AsJavaScript(where, what, lossy)
    try:
        value = json.loads(text, parse_int=numbers.integer, parse_float=numbers.real, parse_constant=numbers.constant)
    except RecursionError:
        return JsonFile(
            None, (Problem(ValidationCode.JSON_INVALID, where, f"the {what} nests arrays or objects too deep to read"),)
        )
    except ValueError as exc:
        return JsonFile(None, (Problem(ValidationCode.JSON_INVALID, where, f"the {what} is not JSON ({exc})"),))
    return JsonFile(value, tuple(numbers.changed), text)


MAX_DEPTH = 100
"""Deeper values are refused: every later stage recurses, and nothing tlnetron writes nests past a few levels."""


def too_deep(value: Any, limit: int = MAX_DEPTH) -> bool:
    """Whether ``value`` nests lists or dicts more than ``limit`` deep (walked without recursion)."""
    if not isinstance(value, (list, dict)):
        return False
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > limit:
            return True
        for v in item.values() if isinstance(item, dict) else item:
            if isinstance(v, (list, dict)):  # only containers are stacked: scalars are most of a file
                stack.append((v, depth + 1))
    return False


def _js(value: float) -> str:
    """How JavaScript prints a double (enough for the messages here)."""
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    return repr(int(value)) if value.is_integer() and abs(value) < 1e21 else repr(value)


def companion_object(name: str, data: bytes) -> dict[str, Any]:
    """The companion ``name`` holds, or a typed refusal when it is not a ``netron:attachment``
    file Netron would take as one (it would open it as a model and replace the graph).

    Raises:
        TlnetronError: ``netron_attachment_invalid``.
    """
    try:
        obj = orjson.loads(data)
    except orjson.JSONDecodeError:
        obj = None
    if not isinstance(obj, dict) or obj.get("signature") != COMPANION_SIGNATURE or not name.lower().endswith(".json"):
        raise TlnetronError(
            ErrorCode.NETRON_ATTACHMENT_INVALID,
            f"{name!r} is not a netron:attachment companion (Netron would open it as a model and replace the graph).",
            where=name,
            remedy="pass the <stem>.attachment.json file tlnetron wrote beside the artifact.",
        )
    return obj


def check_page_fits(files: Iterable[tuple[str, bytes] | None], outcome: str) -> None:
    """Refuse (``page_too_large``) files built in memory that a page cannot carry: files on
    disk are refused by size before they are read (:func:`read_input`)."""
    for item in files:
        if item is not None and len(item[1]) > PAGE_MAX_BYTES:
            raise TlnetronError(
                ErrorCode.PAGE_TOO_LARGE,
                f"{item[0]!r} is {len(item[1]):,} bytes, past the {PAGE_MAX_BYTES:,} a page can carry (its heat map "
                f"reads the file as one JavaScript string); {outcome}.",
                where=item[0],
                remedy=f"export to a .onnx.json path and open the files at netron.app or in the Netron app, "
                f"which open up to {MAX_BYTES:,} bytes, or export a smaller view (granularity module, a lower depth).",
            )


def read_input(path: Path, flag: str, outcome: str) -> bytes:
    """The bytes of a regular file a page can show, or ``invalid_path`` (a FIFO, a device, a folder, past
    :data:`PAGE_MAX_BYTES`)."""

    def refuse(
        why: str,
        remedy: str = "pass the artifact (*.onnx.json) and its companion (*.onnx.attachment.json) "
        "written by tlnetron export.",
    ) -> TlnetronError:
        return TlnetronError(
            ErrorCode.INVALID_PATH,
            f"{flag}{' ' if flag else ''}{str(path)!r} {why}; {outcome}.",
            where=str(path),
            remedy=remedy,
        )

    try:
        info = path.stat()
    except OSError as exc:
        raise refuse(f"cannot be read ({exc.strerror or exc})") from None
    if not stat.S_ISREG(info.st_mode):
        raise refuse("is a folder" if stat.S_ISDIR(info.st_mode) else "is not a regular file")
    if info.st_size > PAGE_MAX_BYTES:
        raise refuse(
            f"is {info.st_size:,} bytes, "
            f"past the {PAGE_MAX_BYTES:,} a page's heat map can read (one JavaScript string)",
            f"open it at netron.app or in the Netron app, which open up to {MAX_BYTES:,} bytes "
            "(tlnetron validate checks it), or export a smaller view (granularity module, a lower depth).",
        )
    try:
        return path.read_bytes()
    except OSError as exc:
        raise refuse(f"cannot be read ({exc.strerror or exc})") from None


def saved_trace(path: str | Path) -> Path:
    """The folder of a trace saved with ``torchlens.save``, checked without loading it.

    Raises:
        TlnetronError: ``trace_unreadable`` when the path is not a TorchLens save.
    """
    p = Path(path)
    if not p.exists():
        raise TlnetronError(
            ErrorCode.TRACE_UNREADABLE,
            f"{str(p)!r} does not exist.",
            where=str(p),
            remedy="check the path, or save the trace first with torchlens.save(log, 'run.tlspec').",
        )
    if not p.is_dir() or not (p / "manifest.json").is_file():
        raise TlnetronError(
            ErrorCode.TRACE_UNREADABLE,
            f"{str(p)!r} is not a TorchLens save (a folder with manifest.json written by torchlens.save).",
            where=str(p),
            remedy="save the trace with torchlens.save(log, 'run.tlspec') and pass that folder.",
        )
    return p

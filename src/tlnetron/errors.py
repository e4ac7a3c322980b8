"""Typed refusals and warnings (every stage raises these, never a bare exception).

Every refusal carries a stable ``code`` from the closed ``error_code`` vocabulary in
``schema/vocabularies.schema.json``; every warning a code from ``warning_code``. A refusal
is raised before anything is written, so an existing file stays as it was.
"""

from __future__ import annotations

import contextlib
import os
import sys
import types
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeAlias

from ._generated.vocab import ERROR_CODE, VALIDATION_CODE, WARNING_CODE

__all__ = ["Opt", "Placeholder", "Problem", "Text", "TlnetronError", "TlnetronWarning", "warn"]


@dataclass(frozen=True, slots=True)
class Placeholder:
    """A value a remedy names by a stand-in: ``Opt("baseline", Placeholder("ref_log"))`` is
    ``baseline=ref_log`` (a reference Trace) in Python, ``--baseline ref.tlspec`` on the
    command line."""

    name: str

    def __repr__(self) -> str:
        return self.name


@dataclass(frozen=True, slots=True)
class Opt:
    """An option of ``tlnetron.export`` named in a refusal, spelt for whoever reads it.

    ``str(opt)`` is the Python spelling (``granularity="module"``, ``depth=1``, ``depth=``
    for the option alone); the command line spells the same option its own way
    (``--granularity module``, ``--depth N``: ``tlnetron.cli``), so one refusal reads right
    to both.

    Attributes:
        keyword: the keyword of ``tlnetron.export`` (``path`` included).
        value: the value named, or ``...`` for the option alone.
    """

    keyword: str
    value: object = ...

    def __str__(self) -> str:
        if self.value is ...:
            return f"{self.keyword}="
        value = self.value
        if isinstance(value, str) and value.isprintable() and '"' not in value and "\\" not in value:
            return f'{self.keyword}="{value}"'
        return f"{self.keyword}={value!r}"


Text: TypeAlias = "str | tuple[str | Opt, ...]"
"""A refusal's message or remedy: plain text, or text with the options it names as
:class:`Opt` parts (spelt when the text is shown)."""


def _spelt(text: Text, spell: Callable[[Opt], str]) -> str:
    if isinstance(text, str):
        return text
    return "".join(part if isinstance(part, str) else spell(part) for part in text)


class TlnetronError(Exception):
    """A typed refusal: ``code`` is stable, the message says what, where and the remedy.

    ``str(error)`` is ``[code] message Remedy: remedy``, with options spelt as Python
    keywords; :meth:`text` spells them another way (the command line's flags).

    Attributes:
        code: a member of the ``error_code`` vocabulary.
        where: what the problem is about (a keyword, a path, a companion row), or "".
        remedy: what to do instead, or "" (options spelt as Python keywords).
        problems: for validation refusals, every problem found.
    """

    def __init__(
        self,
        code: str,
        message: Text,
        *,
        where: str = "",
        remedy: Text = "",
        problems: tuple[Problem, ...] = (),
    ) -> None:
        if code not in ERROR_CODE:
            raise AssertionError(f"unknown error code {code!r}")  # a bug in tlnetron
        self.code = code
        self.where = where
        self._message = message
        self._remedy = remedy
        self.remedy = _spelt(remedy, str)
        self.problems = problems
        super().__init__(self.text())

    def text(self, spell: Callable[[Opt], str] = str) -> str:
        """The refusal's line, ``[code] message Remedy: remedy``, each :class:`Opt` spelt by ``spell``."""
        text = f"[{self.code}] {_spelt(self._message, spell)}"
        remedy = _spelt(self._remedy, spell)
        if remedy:
            text += f" Remedy: {remedy}"
        return text


class TlnetronWarning(UserWarning):
    """A warning with a stable ``code`` from the ``warning_code`` vocabulary.

    Attributes:
        code: a member of the ``warning_code`` vocabulary.
        message: what the warning says, options spelt as Python keywords (``str(warning)``
            is ``[code] message``); :meth:`text` spells them another way.
    """

    def __init__(self, code: str, message: Text) -> None:
        if code not in WARNING_CODE:
            raise AssertionError(f"unknown warning code {code!r}")
        self.code = code
        self._message = message
        self.message = _spelt(message, str)
        super().__init__(f"[{code}] {self.message}")

    def text(self, spell: Callable[[Opt], str] = str) -> str:
        """The warning's message, each :class:`Opt` spelt by ``spell``."""
        return _spelt(self._message, spell)


def warn(code: str, message: Text, *, stacklevel: int | None = None) -> TlnetronWarning:
    """Emit a :class:`TlnetronWarning` and return it (so callers can record the code).

    By default it is attributed to the first frame outside tlnetron: the caller's line, however
    many decorators and stages lie between (a fixed count pointed inside api.py).
    """
    w = TlnetronWarning(code, message)
    warnings.warn(w, stacklevel=_caller_level() if stacklevel is None else stacklevel)
    return w


_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep
_WRAPPERS = (os.path.abspath(contextlib.__file__),)  # gc_paused() decorates through contextlib


def _caller_level() -> int:
    """warnings.warn's stacklevel of the first frame outside this package (called from warn)."""
    frame: types.FrameType | None = sys._getframe(2)  # warn's caller
    level = 2
    while frame is not None and (
        (path := os.path.abspath(frame.f_code.co_filename)).startswith(_PACKAGE_DIR) or path in _WRAPPERS
    ):
        frame = frame.f_back
        level += 1
    return level


@dataclass(frozen=True, slots=True)
class Problem:
    """One problem found by validation: a code, where it is, and what is wrong."""

    code: str
    where: str
    what: str

    def __post_init__(self) -> None:
        if self.code not in VALIDATION_CODE:
            raise AssertionError(f"unknown validation code {self.code!r}")

    def line(self) -> str:
        """The one-line form ``tlnetron validate`` prints."""
        return f"{self.code}\t{self.where}\t{self.what}"

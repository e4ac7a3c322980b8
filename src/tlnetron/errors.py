"""Typed refusals and warnings (every stage raises these, never a bare exception).

Every refusal carries a stable ``code`` from the closed ``error_code`` vocabulary in
``schema/vocabularies.schema.json``; every warning a code from ``warning_code``. A refusal
is raised before anything is written, so an existing file stays as it was.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

from ._generated.vocab import ERROR_CODE, VALIDATION_CODE, WARNING_CODE

__all__ = ["Problem", "TlnetronError", "TlnetronWarning", "warn"]


class TlnetronError(Exception):
    """A typed refusal: ``code`` is stable, the message says what, where and the remedy.

    Attributes:
        code: a member of the ``error_code`` vocabulary.
        where: what the problem is about (a keyword, a path, a companion row), or "".
        remedy: what to do instead, or "".
        problems: for validation refusals, every problem found.
    """

    def __init__(
        self,
        code: str,
        message: str,
        *,
        where: str = "",
        remedy: str = "",
        problems: tuple[Problem, ...] = (),
    ) -> None:
        if code not in ERROR_CODE:
            raise AssertionError(f"unknown error code {code!r}")  # a bug in tlnetron
        self.code = code
        self.where = where
        self.remedy = remedy
        self.problems = problems
        text = f"[{code}] {message}"
        if remedy:
            text += f" Remedy: {remedy}"
        super().__init__(text)


class TlnetronWarning(UserWarning):
    """A warning with a stable ``code`` from the ``warning_code`` vocabulary."""

    def __init__(self, code: str, message: str) -> None:
        if code not in WARNING_CODE:
            raise AssertionError(f"unknown warning code {code!r}")
        self.code = code
        super().__init__(f"[{code}] {message}")


def warn(code: str, message: str, *, stacklevel: int = 3) -> TlnetronWarning:
    """Emit a :class:`TlnetronWarning` and return it (so callers can record the code)."""
    w = TlnetronWarning(code, message)
    warnings.warn(w, stacklevel=stacklevel)
    return w


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

"""Developer tasks. Every session runs in the interpreter that runs nox (no new virtualenv), so they work offline."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import nox

PY = sys.executable


def session(*, default: bool = True) -> Callable[[Callable[..., Any]], Any]:
    """nox.session in the current interpreter (venv_backend="none")."""
    return nox.session(venv_backend="none", default=default)


@session(default=False)
def codegen(s: nox.Session) -> None:
    """Regenerate src/tlnetron/_generated/ from schema/*.json."""
    s.run(PY, "codegen/generate.py", *s.posargs)


@session()
def codegen_check(s: nox.Session) -> None:
    """Fail if src/tlnetron/_generated/ is stale, missing or has extra files."""
    s.run(PY, "codegen/generate.py", "--check", *s.posargs)


@session()
def tests(s: nox.Session) -> None:
    """Run the test suite."""
    s.run(PY, "-m", "pytest", *s.posargs)


@session()
def property_long(s: nox.Session) -> None:
    """Run the property tests with the long 'ci' Hypothesis profile."""
    s.run(PY, "-m", "pytest", "tests/property", "--hypothesis-profile=ci", *s.posargs)


@session(default=False)
def screenshots(s: nox.Session) -> None:
    """Screenshot exported artifacts in the real Netron (headless Chromium)."""
    s.run(PY, "tests/e2e/screenshots.py", *s.posargs)


@session(default=False)
def bench(s: nox.Session) -> None:
    """Run the benchmarks."""
    s.run(PY, "benchmarks/run.py", *s.posargs)

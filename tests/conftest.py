"""Shared pytest fixtures: the model zoo, traced at most once per session; a guard that
the suite leaves nothing in the temporary folder.

``zoo_trace(name)`` returns the TorchLens trace of zoo entry ``name`` (see
``tests/zoo.py``), tracing it on first use and caching it for the rest of the
session. Tests must treat the returned trace as read-only. ``ALL_ZOO`` lists every
entry, for ``pytest.mark.parametrize``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import torchlens

from tmp_guard import own_temporary_folder
from zoo import ALL_ZOO, ZooTrace, trace

__all__ = ["ALL_ZOO", "DEEP_OPTION", "zoo_trace"]

DEEP_OPTION = "--deep-zoo"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        DEEP_OPTION,
        action="store_true",
        help="trace every real-depth model of tests/zoo.py DEEP (the default run traces DEEP_DEFAULT)",
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.getoption(DEEP_OPTION):
        return
    skip = pytest.mark.skip(reason=f"a real-depth model outside the default run (pass {DEEP_OPTION})")
    for item in items:
        if item.get_closest_marker("deep_only"):
            item.add_marker(skip)


@pytest.fixture(scope="session")
def zoo_trace() -> ZooTrace:
    """A function ``zoo_trace(name)`` returning the cached trace of zoo entry ``name``."""
    cache: dict[str, torchlens.Trace] = {}

    def get(name: str) -> torchlens.Trace:
        if name not in cache:
            cache[name] = trace(name)
        return cache[name]

    return get


@pytest.fixture(scope="session", autouse=True)
def _nothing_left_in_tmp(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The session's temporary files go to a folder of their own, which must be empty at
    the end (``tests/tmp_guard.py``)."""
    with own_temporary_folder(tmp_path_factory) as root:
        yield root

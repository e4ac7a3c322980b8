"""Shared pytest fixtures: the model zoo, traced at most once per session.

``zoo_trace(name)`` returns the TorchLens trace of zoo entry ``name`` (see
``tests/zoo.py``), tracing it on first use and caching it for the rest of the
session. Tests must treat the returned trace as read-only. ``ALL_ZOO`` lists every
entry, for ``pytest.mark.parametrize``.
"""

from __future__ import annotations

import pytest
import torchlens

from zoo import ALL_ZOO, ZooTrace, trace

__all__ = ["ALL_ZOO", "zoo_trace"]


@pytest.fixture(scope="session")
def zoo_trace() -> ZooTrace:
    """A function ``zoo_trace(name)`` returning the cached trace of zoo entry ``name``."""
    cache: dict[str, torchlens.Trace] = {}

    def get(name: str) -> torchlens.Trace:
        if name not in cache:
            cache[name] = trace(name)
        return cache[name]

    return get

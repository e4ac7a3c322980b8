"""Hypothesis profiles for the property tests (``tests/property/``).

Two profiles:

* ``default`` -- fast (about 40 examples per test, no deadline); the whole folder runs in
  well under 90 s on 2 CPUs. Loaded unless another profile is selected.
* ``ci`` -- more than ten times as many examples (500 per test), for CI and for hunting.

Select one with Hypothesis' own pytest option ``--hypothesis-profile=ci`` or with the
environment variable ``HYPOTHESIS_PROFILE=ci`` (the option wins).

Measured on 2 CPUs: ``pytest tests/property`` about 15 s (default), about 2 min 10 s (ci).
"""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, settings

PROFILE_ENV = "HYPOTHESIS_PROFILE"

settings.register_profile(
    "default",
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile(
    "ci",
    max_examples=500,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    print_blob=True,
)


def pytest_configure(config: pytest.Config) -> None:
    """Load the selected profile (the pytest option wins; Hypothesis' plugin loads it)."""
    if config.getoption("--hypothesis-profile", default=None):
        return
    settings.load_profile(os.environ.get(PROFILE_ENV) or "default")

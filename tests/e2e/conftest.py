"""Fixtures for the real-browser (Netron in headless Chromium) tests.

* ``netron_browser`` -- one headless Chromium per session (:class:`NetronBrowser`).
* ``netron`` -- a fresh page (own browser context and cookies) per test (:class:`NetronPage`).
* ``visitor(delay)`` -- pages of first-time visitors, who read the cookie notice ``delay``
  seconds before clicking Accept (no cookie is seeded).

Without ``/usr/bin/chromium`` these tests are skipped, unless ``TLNETRON_E2E_REQUIRED``
is set (CI sets it to 1): then they fail instead.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest

from netron_driver import CHROMIUM, NetronBrowser, NetronPage

REQUIRED_ENV = "TLNETRON_E2E_REQUIRED"


def _require_chromium() -> None:
    if os.path.exists(CHROMIUM):
        return
    if os.environ.get(REQUIRED_ENV):
        pytest.fail(f"{CHROMIUM} is missing and {REQUIRED_ENV} is set: the e2e tests must run here")
    pytest.skip(f"{CHROMIUM} is missing (set {REQUIRED_ENV}=1 to make this a failure)")


@pytest.fixture(autouse=True)
def _chromium_present() -> None:
    _require_chromium()


@pytest.fixture(scope="session")
def netron_browser() -> Iterator[NetronBrowser]:
    _require_chromium()
    with NetronBrowser() as browser:
        yield browser


@pytest.fixture
def netron(netron_browser: NetronBrowser) -> Iterator[NetronPage]:
    with netron_browser.new_page() as page:
        yield page


@pytest.fixture
def visitor(netron_browser: NetronBrowser) -> Iterator[Any]:
    """``visitor(delay)``: a first-time visitor's page (fresh context, no cookie) who reads
    the cookie notice for ``delay`` seconds before clicking Accept."""
    pages: list[NetronPage] = []

    def new(delay: float) -> NetronPage:
        page = netron_browser.new_page(consent="click", consent_delay=delay, timeout=60)
        pages.append(page)
        return page

    yield new
    for page in pages:
        page.close()

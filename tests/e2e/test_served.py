"""``tlnetron.pages.serve``: what a person gets from ``serve=True`` / ``tlnetron serve``, in the real Netron.

* tlnetron's own loopback page runs Netron's unmodified app in ``<iframe id="netron">``
  and drops the model, then the companion, into it: the companion's rows must show in the
  sidebar with no manual step. Without a companion (``path=None``) the model alone.
* Every page is opened as a first-time visitor: a fresh browser context with no cookie,
  whose cookie notice is read for a few seconds (or clicked at once) before Accept; a
  reload draws it again without asking.
* The page makes no request to any host but 127.0.0.1: the requests Netron tries (its
  location lookup, its analytics) are refused inside the browser by the page's policy.
* Every server is stopped at the end and its port no longer accepts connections.
"""

from __future__ import annotations

import json
import socket
import time
import urllib.error
import urllib.parse
import urllib.request
import warnings
import webbrowser
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import tlnetron
from netron_driver import NetronPage
from test_artifacts import (
    check_drawn_body,
    check_pair_in_page,
    companion_rows,
    export_quietly,
    op_boxes,
    rows_once_attached,
)
from tlnetron._generated.vocab import Granularity, MetaKey
from tlnetron.pages.serve import serve_files

pytestmark = pytest.mark.e2e

COMPANION_SUFFIX = "+ companion"
MODEL_SUFFIX = "+ model"
FRAME = "#netron"
READING_SECONDS = 4.0  # how long a person looks at the cookie notice before clicking Accept


# --------------------------------------------------------------------------- helpers


def port_closed(host: str, port: int, *, within: float = 3.0) -> bool:
    """True once (host, port) refuses connections (netron.stop lags about 0.25 s)."""
    deadline = time.monotonic() + within
    while True:
        try:
            with socket.create_connection((host, port), timeout=0.5):
                pass
        except OSError:
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)


def host_port(url: str) -> tuple[str, int]:
    parts = urllib.parse.urlsplit(url)
    assert parts.hostname == "127.0.0.1", f"served beyond loopback: {url}"
    assert parts.port is not None
    return parts.hostname, parts.port


def console_errors_except_favicon(netron: NetronPage) -> list[str]:
    return [e for e in netron.console_errors() if not e.rstrip(")").endswith("/favicon.ico")]


@pytest.fixture
def demo_log(zoo_trace: Any) -> Any:
    return zoo_trace("demo")


@pytest.fixture
def no_browser(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Record webbrowser.open calls instead of opening anything."""
    calls: list[str] = []

    def record(url: str, *args: Any, **kwargs: Any) -> bool:
        calls.append(url)
        return True

    monkeypatch.setattr(webbrowser, "open", record)
    return calls


@pytest.fixture
def stop_later() -> Iterator[list[Any]]:
    """Servers to stop at the end of the test, whatever happened."""
    servers: list[Any] = []
    yield servers
    for server in servers:
        server.stop()


def check_stays_on_loopback(netron: NetronPage) -> None:
    """Nothing left for another host; what Netron tried was refused by the page's policy."""
    assert netron.blocked_requests() == []  # no request to another host ever left the browser
    refused = netron.csp_refused()
    assert all(urllib.parse.urlsplit(u).hostname not in ("127.0.0.1", "localhost") for u in refused), refused


def check_companion_page(netron: NetronPage, artifact: Path, companion: Path, url: str) -> None:
    """The served page shows the graph, then the companion's rows, with no manual step."""
    model = json.loads(artifact.read_text("utf-8"))
    attachment = json.loads(companion.read_text("utf-8"))
    graph = model["graph"]
    assert netron._context.cookies() == []  # a first visit
    netron.open_url(url, frame=FRAME)
    title = netron.wait_title(COMPANION_SUFFIX)
    assert title.startswith(artifact.name)
    assert netron.consent_clicks == 1, "the cookie notice was shown and accepted once"
    check_drawn_body(netron, graph, f"served {artifact.name}")

    check_pair_in_page(netron, model, attachment, f"served {artifact.name}")
    op = next(n for n in graph["node"] if "overload" not in n)  # its rows are read again after each reload
    assert console_errors_except_favicon(netron) == []
    check_stays_on_loopback(netron)

    # A reload (and every one after it) draws the model and companion again, without asking.
    for _ in range(2):
        netron.reload()
        assert netron.wait_title(COMPANION_SUFFIX).startswith(artifact.name)
        assert netron.consent_clicks == 1, "the notice came back after Accept"
        props = rows_once_attached(netron, op["name"])
        assert props.get("Metrics") == companion_rows(attachment, "metrics", "node", op["name"]), props
    check_stays_on_loopback(netron)


# --------------------------------------------------------------------------- tests


def test_serve_files_drops_the_companion(visitor: Any, demo_log: Any, tmp_path: Path, stop_later: list[Any]) -> None:
    """A person who reads the cookie notice for a few seconds before Accept still gets both files."""
    netron = visitor(READING_SECONDS)
    exported = export_quietly(demo_log, tmp_path / "demo.onnx.json")
    assert exported.companion is not None
    served = serve_files(exported.artifact, exported.companion, browse=False)  # type: ignore[arg-type]
    stop_later.append(served.server)
    host, port = host_port(served.url)
    check_companion_page(netron, exported.artifact, exported.companion, served.url)  # type: ignore[arg-type]
    served.server.stop()
    assert port_closed(host, port), f"{host}:{port} still accepts connections after stop()"


def test_export_serve_true_opens_the_companion_page(
    visitor: Any, demo_log: Any, tmp_path: Path, no_browser: list[str], stop_later: list[Any]
) -> None:
    """Accept clicked at once."""
    netron = visitor(0.0)
    result = export_quietly(demo_log, tmp_path / "demo.onnx.json", serve=True)
    stop_later.append(result)
    assert result.url is not None and result.companion is not None and result.artifact is not None
    assert no_browser == [result.url]  # one tab, on the page that drops the companion
    host, port = host_port(result.url)
    check_companion_page(netron, result.artifact, result.companion, result.url)
    result.stop()
    assert port_closed(host, port), f"{host}:{port} still accepts connections after result.stop()"


def test_export_serve_memory_only(visitor: Any, demo_log: Any, no_browser: list[str], stop_later: list[Any]) -> None:
    netron = visitor(READING_SECONDS)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", tlnetron.TlnetronWarning)
        result = tlnetron.export(demo_log, None, serve=True)
    stop_later.append(result)
    assert result.artifact is None and result.companion is None and result.companion_json is None
    assert result.url is not None and no_browser == [result.url]
    host, port = host_port(result.url)
    model = json.loads(result.artifact_json)
    netron.open_url(result.url, frame=FRAME)
    assert netron.wait_title(MODEL_SUFFIX).startswith("model.onnx.json")
    assert netron.consent_clicks == 1
    check_drawn_body(netron, model["graph"], "memory-only serve")
    assert len(op_boxes(netron)) == result.node_count
    props = netron.open_model_properties()
    assert dict(props["Metadata"])[MetaKey.GRANULARITY] == Granularity.MODULE
    assert "Metrics" not in props  # no companion
    assert not netron.title().endswith(COMPANION_SUFFIX)
    assert console_errors_except_favicon(netron) == []
    netron.reload()
    assert netron.wait_title(MODEL_SUFFIX) and netron.consent_clicks == 1
    check_stays_on_loopback(netron)
    result.stop()
    assert port_closed(host, port), f"{host}:{port} still accepts connections after result.stop()"


def test_companion_page_serves_a_favicon(demo_log: Any, tmp_path: Path, stop_later: list[Any]) -> None:
    exported = export_quietly(demo_log, tmp_path / "demo.onnx.json")
    served = serve_files(exported.artifact, exported.companion, browse=False)  # type: ignore[arg-type]
    stop_later.append(served.server)
    try:
        with urllib.request.urlopen(served.url + "favicon.ico", timeout=5) as response:  # noqa: S310 (loopback)
            status = response.status
    except urllib.error.HTTPError as error:
        status = error.code
    assert status == 200

"""Serving (``serve=True`` and ``tlnetron serve``), with no real browser.

Spec ("Opening it"): ``serve=True`` serves through the ``netron`` package on loopback with an
ephemeral port and opens a browser tab or a notebook widget; it needs the netron extra
(refusal ``netron_serve_unavailable`` teaches the install); with ``path=None`` the artifact
serves from memory and no companion is written (``attachment=True`` then refuses with
``attachment_needs_path``). With a companion, tlnetron's own loopback page serves Netron's
installed web app byte-for-byte in an iframe, plus the files. Netron's web app refuses to
start 180 days after its build date (``netron_age_gate``).

``webbrowser.open`` is replaced by a recorder in every test (the ``browser`` fixture), so
nothing ever opens.
"""

from __future__ import annotations

import http.client
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import types
import urllib.error
import urllib.request
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any

import pytest
import torch
import torchlens
from torch import nn

import tlnetron
import tlnetron.serve as tlserve
from tlnetron import TlnetronError, TlnetronWarning

LOOPBACK = "127.0.0.1"
URL_RE = re.compile(r"^http://127\.0\.0\.1:(\d+)/$")


class Tiny(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.block = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 4))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out: torch.Tensor = torch.tanh(self.block(x)) * 2
        return out


@pytest.fixture(scope="module")
def log() -> torchlens.Trace:
    torch.manual_seed(0)
    trace: torchlens.Trace = torchlens.trace(Tiny().eval(), torch.randn(2, 4))
    return trace


@dataclass
class Browser:
    calls: list[tuple[Any, ...]] = field(default_factory=list)

    def open(self, url: str, *args: Any, **kwargs: Any) -> bool:
        self.calls.append((url, *args))
        return True


@pytest.fixture
def browser(monkeypatch: pytest.MonkeyPatch) -> Browser:
    """Record ``webbrowser.open`` as tlnetron.serve sees it; no real IPython shell."""
    rec = Browser()
    monkeypatch.setattr("tlnetron.serve.webbrowser.open", rec.open)
    monkeypatch.delitem(sys.modules, "IPython", raising=False)
    return rec


def export(*args: Any, **kwargs: Any) -> tlnetron.ExportResult:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TlnetronWarning)
        return tlnetron.export(*args, **kwargs)


@pytest.fixture
def served() -> Iterator[list[tlnetron.ExportResult]]:
    """Results to stop at teardown, whatever the test did."""
    results: list[tlnetron.ExportResult] = []
    yield results
    for r in results:
        r.stop()


def get(url: str) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=10) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def raw_get(port: int, path: str) -> tuple[int, bytes]:
    """GET with the path sent verbatim (no client-side normalisation)."""
    conn = http.client.HTTPConnection(LOOPBACK, port, timeout=10)
    try:
        conn.putrequest("GET", path, skip_accept_encoding=True)
        conn.endheaders()
        resp = conn.getresponse()
        return resp.status, resp.read()
    finally:
        conn.close()


def port_of(result: tlnetron.ExportResult) -> int:
    assert result.url is not None
    m = URL_RE.match(result.url)
    assert m, result.url
    return int(m.group(1))


def refuses(port: int, within: float = 3.0) -> bool:
    end = time.monotonic() + within
    while time.monotonic() < end:
        try:
            socket.create_connection((LOOPBACK, port), timeout=0.5).close()
        except OSError:
            return True
        time.sleep(0.05)
    return False


def listening_addresses(port: int) -> list[str]:
    """Local addresses of LISTEN sockets on ``port`` (from /proc/net/tcp and tcp6)."""
    found: list[str] = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            cols = line.split()
            addr, hexport = cols[1].split(":")
            if int(hexport, 16) == port and cols[3] == "0A":
                if len(addr) == 8:
                    found.append(socket.inet_ntop(socket.AF_INET, bytes.fromhex(addr)[::-1]))
                else:
                    raw = bytes.fromhex(addr)
                    found.append(socket.inet_ntop(socket.AF_INET6, b"".join(raw[i : i + 4][::-1] for i in range(0, 16, 4))))
    return found


def assert_loopback_only(result: tlnetron.ExportResult) -> None:
    port = port_of(result)
    assert result.server is not None and result.server.host == LOOPBACK
    assert result.server.port == port
    if Path("/proc/net/tcp").exists():
        assert listening_addresses(port) == [LOOPBACK]


def netron_dir() -> Path:
    import netron

    return Path(netron.__file__).resolve().parent


# ------------------------------------------------------------------ (a) memory-only serve


def test_memory_only_serve(log: torchlens.Trace, browser: Browser, served: list[Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    result = export(log, serve=True)
    served.append(result)
    port = port_of(result)
    assert [c[0] for c in browser.calls] == [result.url]
    status, page = get(result.url)  # type: ignore[arg-type]
    assert status == 200
    m = re.search(rb'<meta name="file" content="/data/([^"]+)">', page)
    assert m, "Netron's page names the data it will fetch"
    name = m.group(1).decode()
    assert name.endswith(".json")
    status, body = get(f"{result.url}data/{name}")
    assert status == 200 and body == result.artifact_json.encode("utf-8")
    json.loads(body)
    # no companion anywhere: not in the result, not on disk
    assert result.artifact is None and result.companion is None and result.companion_json is None
    assert list(tmp_path.iterdir()) == []
    assert_loopback_only(result)
    result.stop()
    assert refuses(port), "the port still accepts connections after stop()"
    result.stop()  # idempotent


@pytest.mark.parametrize("with_path", [False, True], ids=["memory", "path-no-attachment"])
def test_memory_only_serve_exposes_no_files(
    log: torchlens.Trace, browser: Browser, served: list[Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, with_path: bool
) -> None:
    (tmp_path / "secret.txt").write_text("top secret\n")
    (tmp_path / "out").mkdir()
    monkeypatch.chdir(tmp_path)
    # Without a companion both serve the artifact from memory through netron.serve.
    result = export(log, tmp_path / "out" / "m.onnx.json" if with_path else None, attachment=False if with_path else None, serve=True)
    served.append(result)
    status, body = raw_get(port_of(result), "/data/secret.txt")
    assert status == 404 and b"top secret" not in body


# ------------------------------------------------------------------ (b) with a path: the companion page


def test_serve_with_a_path_uses_the_companion_page(log: torchlens.Trace, browser: Browser, served: list[Any], tmp_path: Path) -> None:
    result = export(log, tmp_path / "m.onnx.json", serve=True)
    served.append(result)
    assert result.artifact == tmp_path / "m.onnx.json" and result.artifact.is_file()
    assert result.companion == tmp_path / "m.onnx.attachment.json" and result.companion.is_file()
    assert [c[0] for c in browser.calls] == [result.url]
    url = result.url
    assert url is not None
    status, page = get(url)
    assert status == 200
    assert re.search(rb'<iframe[^>]*src="/netron/index.html"', page), page[:400]
    status, index = get(url + "netron/index.html")
    assert status == 200 and index == (netron_dir() / "index.html").read_bytes()
    # the app's own scripts and styles, byte-for-byte
    assets = re.findall(rb'(?:src|href)="([A-Za-z0-9_.-]+\.(?:js|css))"', index)
    assert assets, "Netron's index.html references its scripts"
    for asset in {a.decode() for a in assets}:
        status, body = get(url + "netron/" + asset)
        assert status == 200 and body == (netron_dir() / asset).read_bytes(), asset
    status, boot = get(url + "tlnetron/bootstrap.js")
    assert status == 200 and boot == (Path(tlserve.__file__).parent / "serve_bootstrap.js").read_bytes()
    status, listing_raw = get(url + "tlnetron/files.json")
    assert status == 200
    listing = json.loads(listing_raw)
    assert {listing["model"]["name"], listing["companion"]["name"]} == {"m.onnx.json", "m.onnx.attachment.json"}
    assert listing["model"]["name"] == "m.onnx.json"
    status, model = get(url + listing["model"]["url"].lstrip("/"))
    assert status == 200 and model == result.artifact.read_bytes()
    status, companion = get(url + "tlnetron/data/companion")
    assert status == 200 and companion == result.companion.read_bytes()
    assert listing["companion"]["url"] == "/tlnetron/data/companion"
    assert_loopback_only(result)
    port = port_of(result)
    result.stop()
    assert refuses(port)


TRAVERSALS = [
    "/netron/../../etc/passwd",
    "/netron/../../../../../../etc/passwd",
    "/netron/..%2f..%2f..%2f..%2f..%2f..%2fetc%2fpasswd",
    "/netron/%2e%2e/%2e%2e/%2e%2e/%2e%2e/%2e%2e/%2e%2e/etc/passwd",
    "/netron/%252e%252e/%252e%252e/etc/passwd",
    "/netron//etc/passwd",
    "/netron/%2fetc%2fpasswd",
    "/netron/..\\..\\..\\..\\etc\\passwd",
    "/netron/../torch/__init__.py",
    "/netron/../tlnetron/serve.py",
    "/tlnetron/data/../../etc/passwd",
    "/tlnetron/data/..%2f..%2fetc%2fpasswd",
    "/../../etc/passwd",
    "/etc/passwd",
]


def test_companion_page_blocks_path_traversal(log: torchlens.Trace, browser: Browser, served: list[Any], tmp_path: Path) -> None:
    result = export(log, tmp_path / "m.onnx.json", serve=True)
    served.append(result)
    port = port_of(result)
    for path in TRAVERSALS:
        status, body = raw_get(port, path)
        assert status == 404, path
        assert b"root:" not in body and b"import" not in body, path
    # the app itself still serves
    assert raw_get(port, "/netron/index.html")[0] == 200


# ------------------------------------------------------------------ (c) in a notebook


@dataclass
class FakeNotebook:
    shown: list[Any] = field(default_factory=list)
    frames: list[tuple[Any, Any, Any]] = field(default_factory=list)


@pytest.fixture
def notebook(monkeypatch: pytest.MonkeyPatch) -> FakeNotebook:
    nb = FakeNotebook()

    class IFrame:
        def __init__(self, src: Any, width: Any, height: Any, **kwargs: Any) -> None:
            self.src = src
            nb.frames.append((src, width, height))

    display_mod = types.ModuleType("IPython.display")
    display_mod.IFrame = IFrame  # type: ignore[attr-defined]
    display_mod.display = lambda obj, *a, **k: nb.shown.append(obj)  # type: ignore[attr-defined]
    ipython = types.ModuleType("IPython")
    shell = types.SimpleNamespace(kernel=object())
    ipython.get_ipython = lambda: shell  # type: ignore[attr-defined]
    ipython.display = display_mod  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "IPython", ipython)
    monkeypatch.setitem(sys.modules, "IPython.display", display_mod)
    return nb


@pytest.mark.parametrize("with_path", [False, True], ids=["memory", "path"])
def test_notebook_shows_an_iframe_and_opens_no_tab(
    log: torchlens.Trace, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, served: list[Any], notebook: FakeNotebook, with_path: bool
) -> None:
    calls: list[Any] = []
    monkeypatch.setattr("tlnetron.serve.webbrowser.open", lambda *a, **k: calls.append(a))
    nb = notebook
    monkeypatch.chdir(tmp_path)
    result = export(log, tmp_path / "m.onnx.json" if with_path else None, serve=True)
    served.append(result)
    assert calls == []
    assert len(nb.frames) == 1
    src, width, height = nb.frames[0]
    assert src == result.url
    assert width and height
    assert len(nb.shown) == 1 and nb.shown[0].src == result.url
    assert get(result.url)[0] == 200  # type: ignore[arg-type]


def test_ipython_without_a_kernel_opens_a_tab(log: torchlens.Trace, browser: Browser, served: list[Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A terminal IPython shell (no kernel) is not a notebook: the browser tab opens."""
    ipython = types.ModuleType("IPython")
    ipython.get_ipython = lambda: types.SimpleNamespace()  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "IPython", ipython)
    monkeypatch.chdir(tmp_path)
    result = export(log, serve=True)
    served.append(result)
    assert [c[0] for c in browser.calls] == [result.url]


# ------------------------------------------------------------------ (d) without netron


def test_serve_without_netron_teaches_the_install(log: torchlens.Trace, browser: Browser, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "netron", None)  # `import netron` now raises ImportError
    with pytest.raises(ImportError):
        import netron  # noqa: F401
    for path in (None, tmp_path / "m.onnx.json"):
        with pytest.raises(TlnetronError) as info:
            export(log, path, serve=True)
        assert info.value.code == "netron_serve_unavailable"
        assert "pip install 'tlnetron[netron]'" in str(info.value)
    assert list(tmp_path.iterdir()) == [], "a refused serve wrote the file"
    assert browser.calls == []
    # the plain file export does not need netron
    result = export(log, tmp_path / "m.onnx.json")
    assert result.artifact is not None and result.artifact.is_file()
    assert result.companion is not None and result.companion.is_file()


# ------------------------------------------------------------------ (e) attachment=True without a path


def test_attachment_true_without_a_path_refuses(log: torchlens.Trace, browser: Browser, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(TlnetronError) as info:
        export(log, None, attachment=True, serve=True)
    assert info.value.code == "attachment_needs_path"
    assert browser.calls == [] and list(tmp_path.iterdir()) == []


# ------------------------------------------------------------------ (f) serve_files with a bad companion


@pytest.mark.parametrize(
    ("name", "content"),
    [
        ("m.onnx.attachment.json", json.dumps({"metadata": [], "metrics": []})),
        ("m.onnx.attachment.json", json.dumps({"signature": "netron:metadata", "metadata": [], "metrics": []})),
        ("m.onnx.attachment.json", "not json"),
        ("m.onnx.attachment.txt", json.dumps({"signature": "netron:attachment", "metadata": [], "metrics": []})),
        ("m.other.json", None),  # the artifact itself passed as the companion
    ],
    ids=["no-signature", "wrong-signature", "not-json", "not-dot-json", "artifact-as-companion"],
)
def test_serve_files_refuses_a_companion_without_the_signature(
    log: torchlens.Trace, browser: Browser, tmp_path: Path, name: str, content: str | None
) -> None:
    result = export(log, tmp_path / "m.onnx.json", attachment=False)
    assert result.artifact is not None
    bad = tmp_path / name
    bad.write_text(content if content is not None else result.artifact.read_text(encoding="utf-8"), encoding="utf-8")
    before = {t.ident for t in threading.enumerate()}
    with pytest.raises(TlnetronError) as info:
        tlserve.serve_files(result.artifact, bad)
    assert info.value.code == "netron_attachment_invalid"
    assert browser.calls == []
    assert {t.ident for t in threading.enumerate()} <= before, "a server was started anyway"


# ------------------------------------------------------------------ (g) Netron's age gate


def test_netron_age_gate() -> None:
    index = (netron_dir() / "index.html").read_text(encoding="utf-8")
    m = re.search(r'<meta name="date" content="(\d{4}-\d{2}-\d{2})', index)
    assert m, "the installed Netron records its build date"
    built = m.group(1)
    message = tlserve.netron_age_gate(today=date(2027, 6, 1))
    assert message is not None
    assert built in message
    assert "pip install --upgrade netron" in message
    assert tlserve.netron_age_gate(today=date(2026, 11, 30)) is None
    assert tlserve.netron_age_gate(today=date.fromisoformat(built)) is None


# ------------------------------------------------------------------ the command line


def test_cli_serve_prints_a_url_and_stops_on_sigint(log: torchlens.Trace, tmp_path: Path) -> None:
    result = export(log, tmp_path / "m.onnx.json")
    assert result.artifact is not None and result.companion is not None
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    env["PYTHONUNBUFFERED"] = "1"
    proc = subprocess.Popen(
        [sys.executable, "-u", "-m", "tlnetron.cli", "serve", str(result.artifact), "--attachment", str(result.companion), "--no-browser"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=tmp_path,
    )
    lines: list[str] = []
    url: list[str] = []
    got = threading.Event()

    def read() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.append(line)
            m = re.search(r"(http://\S+/)", line)
            if m and not url:
                url.append(m.group(1))
                got.set()
        got.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        assert got.wait(60) and url, f"no URL printed: {lines!r}"
        assert URL_RE.match(url[0]), url[0]
        status, page = get(url[0])
        assert status == 200 and b"/netron/index.html" in page
        status, companion = get(url[0] + "tlnetron/data/companion")
        assert status == 200 and companion == result.companion.read_bytes()
        port = int(URL_RE.match(url[0]).group(1))  # type: ignore[union-attr]
        if Path("/proc/net/tcp").exists():
            assert listening_addresses(port) == [LOOPBACK]
        proc.send_signal(signal.SIGINT)
        code = proc.wait(timeout=10)
        assert code == 0, proc.stderr.read() if proc.stderr else ""
        assert refuses(port, within=1.0)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()

"""Serving (``serve=True`` and ``tlnetron serve``), with no real browser.

Spec ("Opening it"): ``serve=True`` serves through the ``netron`` package on loopback with an
ephemeral port and opens a browser tab or a notebook widget; it needs the netron extra
(refusal ``netron_serve_unavailable`` teaches the install); with ``path=None`` the artifact
serves from memory and no companion is written (``attachment=True`` then refuses with
``attachment_needs_path``). tlnetron's own loopback page serves Netron's installed web app
byte-for-byte in an iframe, plus the files, under a Content-Security-Policy that keeps every
request on the server, and answers only its own Host. Netron's web app refuses to start 180
days after its build date (``netron_age_gate``).

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
import tlnetron.pages.serve as tlserve
from tlnetron.pages.app import netron_age_gate
from tlnetron import TlnetronError, TlnetronWarning
from tlnetron._generated.vocab import COMPANION_SIGNATURE, Granularity

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
    """Record ``webbrowser.open`` as tlnetron.pages.serve sees it; no real IPython shell."""
    rec = Browser()
    monkeypatch.setattr("tlnetron.pages.serve.webbrowser.open", rec.open)
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


def raw_get(port: int, path: str, host: str | None = None) -> tuple[int, bytes]:
    """GET with the path sent verbatim (no client-side normalisation), and the given Host."""
    conn = http.client.HTTPConnection(LOOPBACK, port, timeout=10)
    try:
        conn.putrequest("GET", path, skip_host=True, skip_accept_encoding=True)
        conn.putheader("Host", host if host is not None else f"{LOOPBACK}:{port}")
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
                    found.append(
                        socket.inet_ntop(socket.AF_INET6, b"".join(raw[i : i + 4][::-1] for i in range(0, 16, 4)))
                    )
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


def serve_from_memory(log: torchlens.Trace, **kwargs: Any) -> Any:
    """``export(log, serve=True)`` with no path: it says, once, that no companion is served."""
    with pytest.warns(TlnetronWarning) as caught:
        result = tlnetron.export(log, None, serve=True, **kwargs)
    assert [w.message.code for w in caught] == ["served_without_companion"]  # type: ignore[union-attr]
    return result


def test_memory_only_serve_says_it_has_no_companion_and_how_to_get_one(
    log: torchlens.Trace, browser: Browser, served: list[Any], tmp_path: Path
) -> None:
    """The spec's rule holds (no file, no companion), but the user hears it, at their own line."""
    with pytest.warns(TlnetronWarning) as caught:
        line = sys._getframe().f_lineno + 1
        result = tlnetron.export(log, serve=True)
    served.append(result)
    (w,) = caught
    assert w.message.code == "served_without_companion"  # type: ignore[union-attr]
    text = str(w.message)
    assert "no companion" in text and "no metrics" in text
    assert "tlnetron.export(trace, 'model.onnx.json', serve=True)" in text  # the remedy: give a path
    assert (w.filename, w.lineno) == (__file__, line)
    # Given a path, or asked for no companion, there is nothing to say (warnings are errors here).
    with warnings.catch_warnings():
        warnings.simplefilter("error", TlnetronWarning)
        served.append(tlnetron.export(log, tmp_path / "m.onnx.json", serve=True))
        served.append(tlnetron.export(log, None, attachment=False, serve=True))


def test_cli_memory_only_serve_names_the_command_with_a_path(
    log: torchlens.Trace,
    browser: Browser,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """``tlnetron export run.tlspec --serve``: the notice, on stderr, names the same command with ``-o``."""
    import tlnetron.cli

    saved = tmp_path / "run.tlspec"
    torchlens.save(log, saved)
    monkeypatch.setattr(tlserve, "wait_forever", lambda result: result.server.stop())
    assert tlnetron.cli.main(["export", str(saved), "--serve", "--no-progress"]) == 0
    err = capsys.readouterr().err
    (notice,) = [ln for ln in err.splitlines() if ln.startswith("warning served_without_companion ")]
    assert f"tlnetron export {saved} --serve --no-progress -o model.onnx.json" in notice
    assert "tlnetron.export(" not in notice


def test_memory_only_serve(
    log: torchlens.Trace, browser: Browser, served: list[Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    result = serve_from_memory(log)
    served.append(result)
    port = port_of(result)
    assert [c[0] for c in browser.calls] == [result.url]
    status, page = get(result.url)  # type: ignore[arg-type]
    assert status == 200 and b'src="/netron/index.html"' in page
    status, listing = get(f"{result.url}tlnetron/files.json")
    assert status == 200 and list(json.loads(listing)) == ["model", "schemes", "colour"]  # no companion to hand over
    assert json.loads(listing)["colour"] == "none"  # the heat map starts off: Netron's own colours
    assert json.loads(listing)["model"]["name"].endswith(".onnx.json")
    status, body = get(f"{result.url}tlnetron/data/model")
    assert status == 200 and body == result.artifact_json.encode("utf-8")
    assert get(f"{result.url}tlnetron/data/companion")[0] == 404
    # no companion anywhere: not in the result, not on disk
    assert result.artifact is None and result.companion is None and result.companion_json is None
    assert list(tmp_path.iterdir()) == []
    assert_loopback_only(result)
    result.stop()
    assert refuses(port), "the port still accepts connections after stop()"
    result.stop()  # idempotent


def test_serve_starts_coloured_by_colour_by(
    log: torchlens.Trace, browser: Browser, served: list[Any], tmp_path: Path
) -> None:
    """``export(log, serve=True, colour_by=...)``, with or without a file: the page's first scheme."""
    for path, scheme in ((None, "time"), (tmp_path / "m.onnx.json", "params")):
        result = (
            serve_from_memory(log, colour_by=scheme)
            if path is None
            else export(log, path, serve=True, colour_by=scheme)
        )
        served.append(result)
        status, listing = get(f"{result.url}tlnetron/files.json")
        assert status == 200 and json.loads(listing)["colour"] == scheme


def test_cli_export_serve_starts_coloured_by_colour_by(
    log: torchlens.Trace, browser: Browser, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``tlnetron export run.tlspec --serve --colour-by time``: the served page's first scheme."""
    import tlnetron.cli

    saved = tmp_path / "run.tlspec"
    torchlens.save(log, saved)
    seen: list[str] = []

    def read_then_stop(result: Any) -> None:  # instead of serving until Ctrl+C
        seen.append(json.loads(get(f"{result.url}tlnetron/files.json")[1])["colour"])
        result.server.stop()

    monkeypatch.setattr(tlserve, "wait_forever", read_then_stop)
    assert tlnetron.cli.main(["export", str(saved), "--serve", "--colour-by", "time", "--no-progress"]) == 0
    assert seen == ["time"] and len(browser.calls) == 1


@pytest.mark.parametrize("with_path", [False, True], ids=["memory", "path-no-attachment"])
def test_memory_only_serve_exposes_no_files(
    log: torchlens.Trace,
    browser: Browser,
    served: list[Any],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    with_path: bool,
) -> None:
    (tmp_path / "secret.txt").write_text("top secret\n")
    (tmp_path / "out").mkdir()
    monkeypatch.chdir(tmp_path)
    # Without a companion the artifact is served from memory, and nothing from the folders.
    result = (
        export(log, tmp_path / "out" / "m.onnx.json", attachment=False, serve=True)
        if with_path
        else serve_from_memory(log)
    )
    served.append(result)
    status, body = raw_get(port_of(result), "/data/secret.txt")
    assert status == 404 and b"top secret" not in body


# ------------------------------------------------------------------ (b) with a path: the companion page


def test_serve_with_a_path_uses_the_companion_page(
    log: torchlens.Trace, browser: Browser, served: list[Any], tmp_path: Path
) -> None:
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


def test_companion_page_blocks_path_traversal(
    log: torchlens.Trace, browser: Browser, served: list[Any], tmp_path: Path
) -> None:
    result = export(log, tmp_path / "m.onnx.json", serve=True)
    served.append(result)
    port = port_of(result)
    for path in TRAVERSALS:
        status, body = raw_get(port, path)
        assert status in (400, 404), path
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
    log: torchlens.Trace,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    served: list[Any],
    notebook: FakeNotebook,
    with_path: bool,
) -> None:
    calls: list[Any] = []
    monkeypatch.setattr("tlnetron.pages.serve.webbrowser.open", lambda *a, **k: calls.append(a))
    nb = notebook
    monkeypatch.chdir(tmp_path)
    result = export(log, tmp_path / "m.onnx.json", serve=True) if with_path else serve_from_memory(log)
    served.append(result)
    assert calls == []
    assert len(nb.frames) == 1
    src, width, height = nb.frames[0]
    assert src == result.url
    assert width and height
    assert len(nb.shown) == 1 and nb.shown[0].src == result.url
    assert get(result.url)[0] == 200  # type: ignore[arg-type]


def test_ipython_without_a_kernel_opens_a_tab(
    log: torchlens.Trace, browser: Browser, served: list[Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A terminal IPython shell (no kernel) is not a notebook: the browser tab opens."""
    ipython = types.ModuleType("IPython")
    ipython.get_ipython = lambda: types.SimpleNamespace()  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "IPython", ipython)
    monkeypatch.chdir(tmp_path)
    result = serve_from_memory(log)
    served.append(result)
    assert [c[0] for c in browser.calls] == [result.url]


# ------------------------------------------------------------------ (d) without netron


def test_serve_without_netron_teaches_the_install(
    log: torchlens.Trace, browser: Browser, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
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


def test_attachment_true_without_a_path_refuses(
    log: torchlens.Trace, browser: Browser, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
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
        ("m.onnx.attachment.txt", json.dumps({"signature": COMPANION_SIGNATURE, "metadata": [], "metrics": []})),
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
    message = netron_age_gate(today=date(2027, 6, 1))
    assert message is not None
    assert built in message
    assert "pip install --upgrade netron" in message
    assert netron_age_gate(today=date(2026, 11, 30)) is None
    assert netron_age_gate(today=date.fromisoformat(built)) is None


# ------------------------------------------------------------------ the command line


def test_cli_serve_prints_a_url_and_stops_on_sigint(log: torchlens.Trace, tmp_path: Path) -> None:
    result = export(log, tmp_path / "m.onnx.json")
    assert result.artifact is not None and result.companion is not None
    env = dict(os.environ)
    env["PYTHONPATH"] = str(Path(tlnetron.__file__).resolve().parent.parent)  # the tlnetron under test, not the tests
    env["PYTHONUNBUFFERED"] = "1"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-u",
            "-m",
            "tlnetron.cli",
            "serve",
            str(result.artifact),
            "--attachment",
            str(result.companion),
            "--no-browser",
        ],
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


# ------------------------------------------------------------------ (h) what the server answers


def test_every_response_keeps_the_page_on_this_server(
    log: torchlens.Trace, browser: Browser, served: list[Any], tmp_path: Path
) -> None:
    """The policy the browser enforces: fetch, XHR, beacons, scripts, frames - this server only."""
    result = export(log, tmp_path / "m.onnx.json", serve=True)
    served.append(result)
    for path in (
        "",
        "netron/index.html",
        "netron/browser.js",
        "tlnetron/bootstrap.js",
        "tlnetron/data/model",
        "nothing-here",
    ):
        try:
            with urllib.request.urlopen(f"{result.url}{path}", timeout=10) as resp:  # noqa: S310 (loopback)
                headers = resp.headers
        except urllib.error.HTTPError as exc:
            headers = exc.headers
        policy = {d.split()[0]: d.split()[1:] for d in headers["Content-Security-Policy"].split("; ")}
        assert policy["default-src"] == ["'self'"] and policy["connect-src"] == ["'self'"], path
        assert policy["script-src"] == ["'self'"] and policy["frame-src"] == ["'self'"], path
        assert all("http" not in " ".join(v) and "*" not in v for v in policy.values()), policy
        assert headers["X-Content-Type-Options"] == "nosniff"


@pytest.mark.parametrize(
    "host", ["evil.example", "evil.example:{port}", "127.0.0.1", "127.0.0.1:1", "localhost.evil:{port}", ""]
)
def test_requests_for_another_host_get_no_model(
    log: torchlens.Trace, browser: Browser, served: list[Any], tmp_path: Path, host: str
) -> None:
    """DNS rebinding: a page on evil.example resolved to 127.0.0.1 sends its own Host."""
    result = export(log, tmp_path / "m.onnx.json", serve=True)
    served.append(result)
    port = port_of(result)
    model = result.artifact_bytes
    for path in ("/", "/tlnetron/data/model", "/tlnetron/data/companion", "/tlnetron/files.json", "/netron/index.html"):
        status, body = raw_get(port, path, host=host.format(port=port))
        assert status == 403, (host, path)
        assert model[:200] not in body and b"attachment" not in body
    assert raw_get(port, "/tlnetron/data/model")[1] == model  # its own Host still works
    assert raw_get(port, "/tlnetron/data/model", host=f"localhost:{port}")[1] == model


BAD_TARGETS = [
    ("/netron/index.html%00", 400),
    ("/%00", 400),
    ("/tlnetron/data/model%00.json", 400),
    ("/netron/%ff%fe", 400),
    ("/netron/a%0d%0aSet-Cookie:x=1", 400),
    ("/" + "a" * 5000, 414),
    ("/netron/" + "%2e" * 3000, 414),
    ("*", 400),
    ("http://127.0.0.1/", 400),
    ("http://evil.example/tlnetron/data/model", 400),
]


def test_bad_request_targets_get_a_4xx_and_no_traceback(
    log: torchlens.Trace, browser: Browser, served: list[Any], tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    result = export(log, tmp_path / "m.onnx.json", serve=True)
    served.append(result)
    port = port_of(result)
    capfd.readouterr()
    for target, expected in BAD_TARGETS:
        status, _ = raw_get(port, target)
        assert status == expected, target
    # Garbage on the wire, a request line past the server's limit, a client that hangs up.
    for raw in (
        b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" + bytes(200) + b"\r\n\r\n",
        b"GET /" + b"a" * 70000 + b" HTTP/1.1\r\n\r\n",
        b"GET / HTTP/1.1\r\n",
    ):
        with socket.create_connection((LOOPBACK, port), timeout=5) as sock:
            sock.sendall(raw)
            sock.shutdown(socket.SHUT_WR)
            reply = sock.recv(4096)
            # A request line with no version is HTTP/0.9: the 4xx page comes without a status line.
            assert reply == b"" or re.match(rb"(HTTP/1\.[01] )?4\d\d ", reply), reply
    with socket.create_connection((LOOPBACK, port), timeout=5) as sock:
        sock.sendall(f"GET /netron/view.js HTTP/1.1\r\nHost: {LOOPBACK}:{port}\r\n\r\n".encode())
        sock.recv(10)  # hang up mid-answer
    time.sleep(0.3)
    assert raw_get(port, "/netron/index.html")[0] == 200  # still serving
    out, err = capfd.readouterr()
    assert err == "" and out == "", (out, err)


def free_port() -> int:
    with socket.socket() as s:
        s.bind((LOOPBACK, 0))
        return int(s.getsockname()[1])


def test_serve_on_a_chosen_address_and_port(
    log: torchlens.Trace, browser: Browser, served: list[Any], tmp_path: Path
) -> None:
    exported = export(log, tmp_path / "m.onnx.json")
    assert exported.artifact is not None and exported.companion is not None
    port = free_port()
    result = tlserve.serve_files(exported.artifact, exported.companion, host="127.0.0.2", port=port)
    served.append(result)
    assert result.url == f"http://127.0.0.2:{port}/"
    assert get(f"{result.url}tlnetron/data/companion") == (200, exported.companion.read_bytes())
    assert refuses(port, within=0.5), "bound beyond the address asked for"  # 127.0.0.1:port is not served
    # The same port again is taken: a typed refusal naming the remedy.
    with pytest.raises(TlnetronError) as info:
        tlserve.serve_files(exported.artifact, exported.companion, host="127.0.0.2", port=port)
    assert info.value.code == "serve_address_unavailable" and "another port" in str(info.value)


@pytest.mark.parametrize(
    ("host", "port", "says"),
    [
        ("0.0.0.0", 0, "every network interface"),
        ("::", 0, "every network interface"),
        ("example.com", 0, "not an IP address"),
        ("192.0.2.1", 0, "cannot serve on"),  # TEST-NET-1: not an address of this machine
        (LOOPBACK, 70000, "not a port number"),
        (LOOPBACK, -1, "not a port number"),
    ],
)
def test_serve_refuses_an_address_it_cannot_honour(
    log: torchlens.Trace, browser: Browser, tmp_path: Path, host: str, port: int, says: str
) -> None:
    exported = export(log, tmp_path / "m.onnx.json")
    assert exported.artifact is not None
    before = {t.ident for t in threading.enumerate()}
    with pytest.raises(TlnetronError) as info:
        tlserve.serve_files(exported.artifact, exported.companion, host=host, port=port)
    assert info.value.code == "serve_address_unavailable" and says in str(info.value)
    assert browser.calls == [] and {t.ident for t in threading.enumerate()} <= before


@pytest.mark.parametrize(
    ("flags", "says"),
    [
        (["--host", "0.0.0.0"], "every network interface"),
        (["--port", "70000"], "not a port number"),
        (["--host", "nowhere.example"], "not an IP address"),
    ],
)
def test_cli_serve_refuses_an_address_it_cannot_honour(
    log: torchlens.Trace, tmp_path: Path, flags: list[str], says: str
) -> None:
    result = export(log, tmp_path / "m.onnx.json")
    assert result.artifact is not None and result.companion is not None
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "tlnetron.cli",
            "serve",
            str(result.artifact),
            "--attachment",
            str(result.companion),
            "--no-browser",
            *flags,
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 3, proc.stderr
    assert proc.stderr.startswith("tlnetron: [serve_address_unavailable]") and says in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr and proc.stdout == ""


def test_cli_serve_on_a_chosen_port(log: torchlens.Trace, tmp_path: Path) -> None:
    result = export(log, tmp_path / "m.onnx.json")
    assert result.artifact is not None
    port = free_port()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-u",
            "-m",
            "tlnetron.cli",
            "serve",
            str(result.artifact),
            "--no-browser",
            "--host",
            LOOPBACK,
            "--port",
            str(port),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.split()[:2] == ["serving", f"http://{LOOPBACK}:{port}/"], line
        assert get(f"http://{LOOPBACK}:{port}/tlnetron/data/model") == (200, result.artifact.read_bytes())
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=10) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()


def test_serve_refuses_a_companion_of_another_export(log: torchlens.Trace, browser: Browser, tmp_path: Path) -> None:
    """A pair mixed up by hand (or by a crash) is named before anything is served."""
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    first = export(log, tmp_path / "a" / "m.onnx.json")
    second = export(log, tmp_path / "b" / "m.onnx.json", granularity=Granularity.OP)
    assert first.artifact is not None and second.companion is not None
    before = {t.ident for t in threading.enumerate()}
    with pytest.raises(TlnetronError) as info:
        tlserve.serve_files(first.artifact, second.companion)
    assert info.value.code == "companion_mismatch" and "another export" in str(info.value)
    assert browser.calls == [] and {t.ident for t in threading.enumerate()} <= before
    # Its own companion is served.
    result = tlserve.serve_files(first.artifact, first.companion)
    result.stop()

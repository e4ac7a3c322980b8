"""Stage 6, serving: open the artifact in Netron on 127.0.0.1 (a browser tab or a notebook).

Without a companion the artifact is served from memory through the ``netron`` package's own
server (``netron.serve``). Netron ignores a file dropped onto a *served* model (its drop
handlers exist only on the welcome screen), so to show the companion with no manual step a
small loopback server of ours serves Netron's installed web app byte-for-byte inside an
``<iframe>``, plus a bootstrap script (ours) that hands the model and then the companion to
the app as file drops - the same thing a person does by hand. Nothing binds beyond loopback.
"""

from __future__ import annotations

import datetime as _dt
import http.server
import json
import mimetypes
import os
import re
import shutil
import sys
import tempfile
import threading
import time
import urllib.parse
import webbrowser
from dataclasses import dataclass, field, replace
from importlib import resources
from pathlib import Path
from typing import Any

from ._generated.vocab import ErrorCode
from .errors import TlnetronError

__all__ = [
    "AGE_GATE_DAYS",
    "Served",
    "netron_age_gate",
    "require_netron",
    "serve_files",
    "serve_result",
    "wait_forever",
]

AGE_GATE_DAYS = 180
LOOPBACK = "127.0.0.1"


def require_netron() -> Any:
    """Import the ``netron`` package or refuse with ``netron_serve_unavailable``."""
    try:
        import netron
    except ImportError as exc:
        raise TlnetronError(
            ErrorCode.NETRON_SERVE_UNAVAILABLE,
            "serving needs the netron package, which is not installed (the file export does not need it).",
            where="serve",
            remedy="pip install 'tlnetron[netron]', or open the written file at netron.app / in the Netron desktop app.",
        ) from exc
    return netron


def _netron_dir() -> Path:
    netron = require_netron()
    return Path(netron.__file__).resolve().parent


def netron_age_gate(today: _dt.date | None = None) -> str | None:
    """Netron's web app refuses to start 180 days after its build date: say so, or None."""
    index = (_netron_dir() / "index.html").read_text(encoding="utf-8")
    m = re.search(r'<meta name="date" content="(\d{4}-\d{2}-\d{2})', index)
    if not m:
        return None
    built = _dt.date.fromisoformat(m.group(1))
    today = today or _dt.date.today()
    if (today - built).days > AGE_GATE_DAYS:
        return (
            f"the installed Netron web app was built on {built} and refuses to start {AGE_GATE_DAYS} days later "
            "('Please update to the newest version'): pip install --upgrade netron."
        )
    return None


@dataclass
class Served:
    """A running server: its address, the page to open, and how to stop it."""

    host: str
    port: int
    url: str
    kind: str
    _stop: Any = field(default=None, repr=False)

    def stop(self) -> None:
        """Stop serving (idempotent)."""
        if self._stop is not None:
            self._stop()
            self._stop = None


_PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{title} - Netron (tlnetron)</title>
<link rel="icon" href="/netron/favicon.ico">
<style>html,body{{margin:0;height:100%;overflow:hidden}}iframe{{border:0;width:100%;height:100%}}</style>
<script defer src="/tlnetron/bootstrap.js"></script></head>
<body><iframe id="netron" src="/netron/index.html" title="Netron"></iframe></body></html>
"""


def _bootstrap_js() -> bytes:
    return (resources.files("tlnetron") / "serve_bootstrap.js").read_bytes()


class _Handler(http.server.BaseHTTPRequestHandler):
    server_version = "tlnetron"
    files: dict[str, tuple[str, bytes]] = {}
    page: bytes = b""
    app_dir: Path = Path(".")

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        return

    def _send(self, code: int, ctype: str, body: bytes) -> None:
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def do_HEAD(self) -> None:
        self.do_GET()

    def do_GET(self) -> None:
        path = urllib.parse.unquote(urllib.parse.urlparse(self.path).path)
        if path == "/favicon.ico":
            path = "/netron/favicon.ico"
        if path in ("/", "/index.html"):
            return self._send(200, "text/html; charset=utf-8", self.page)
        if path == "/tlnetron/bootstrap.js":
            return self._send(200, "text/javascript", _bootstrap_js())
        if path == "/tlnetron/files.json":
            listing = {k: {"url": f"/tlnetron/data/{k}", "name": name} for k, (name, _) in self.files.items()}
            return self._send(200, "application/json", json.dumps(listing).encode())
        if path.startswith("/tlnetron/data/"):
            key = path.rsplit("/", 1)[-1]
            if key in self.files:
                return self._send(200, "application/json", self.files[key][1])
        if path.startswith("/netron/"):
            base = self.app_dir
            target = (base / path[len("/netron/"):]).resolve()
            if target.is_file() and base in target.parents:
                ctype = mimetypes.guess_type(target.name)[0] or "application/octet-stream"
                return self._send(200, ctype, target.read_bytes())
        self._send(404, "text/plain", b"not found")


def _start_companion_server(model: tuple[str, bytes], companion: tuple[str, bytes] | None) -> Served:
    files = {"model": model}
    if companion is not None:
        files["companion"] = companion
    handler = type(
        "_BoundHandler",
        (_Handler,),
        {"files": files, "page": _PAGE.format(title=model[0]).encode(), "app_dir": _netron_dir()},
    )
    httpd = http.server.ThreadingHTTPServer((LOOPBACK, 0), handler)
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, name="tlnetron-serve", daemon=True)
    thread.start()
    host, port = str(httpd.server_address[0]), int(httpd.server_address[1])

    def stop() -> None:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=5)

    return Served(host, port, f"http://{host}:{port}/", "tlnetron-companion-page", stop)


def _start_netron_server(name: str, data: bytes) -> Served:
    netron = require_netron()
    # netron.serve also answers /data/<file> from the model's folder: give it an empty
    # private folder so nothing but the artifact is ever served.
    folder = tempfile.mkdtemp(prefix="tlnetron-serve-")
    address = netron.serve(os.path.join(folder, name), bytearray(data), address=(LOOPBACK, 0), browse=False)
    host, port = address[0], int(address[1])

    def stop() -> None:
        netron.stop(address)
        shutil.rmtree(folder, ignore_errors=True)

    return Served(host, port, f"http://{host}:{port}/", "netron.serve", stop)


def _in_notebook() -> bool:
    ipython = sys.modules.get("IPython")
    get = getattr(ipython, "get_ipython", None)
    shell = get() if callable(get) else None
    return shell is not None and getattr(shell, "kernel", None) is not None


def _show(served: Served, browse: bool) -> None:
    if _in_notebook():
        from IPython.display import IFrame, display

        display(IFrame(served.url, width="100%", height=800))
    elif browse:
        webbrowser.open(served.url)


def _check_companion_signature(name: str, data: bytes) -> None:
    try:
        obj = json.loads(data)
    except ValueError:
        obj = None
    if not isinstance(obj, dict) or obj.get("signature") != "netron:attachment" or not name.lower().endswith(".json"):
        raise TlnetronError(
            ErrorCode.NETRON_ATTACHMENT_INVALID,
            f"{name!r} is not a netron:attachment companion (Netron would open it as a model and replace the graph).",
            where=name,
            remedy="pass the <stem>.attachment.json file tlnetron wrote beside the artifact.",
        )


def serve_bytes(
    model: tuple[str, bytes], companion: tuple[str, bytes] | None, *, browse: bool = True
) -> Served:
    """Serve an artifact (and companion) on 127.0.0.1 with an ephemeral port and show it."""
    require_netron()
    gate = netron_age_gate()
    if gate:
        print(f"tlnetron: warning: {gate}", file=sys.stderr)
    if companion is not None:
        _check_companion_signature(*companion)
        served = _start_companion_server(model, companion)
    else:
        served = _start_netron_server(*model)
    _show(served, browse)
    return served


def serve_result(result: Any, *, browse: bool = True) -> Any:
    """Serve what :func:`tlnetron.export` produced; returns the result with ``url`` set."""
    name = result.artifact.name if result.artifact is not None else "model.onnx.json"
    companion = None
    if result.companion is not None and result.companion_bytes is not None:
        companion = (result.companion.name, result.companion_bytes)
    served = serve_bytes((name, result.artifact_bytes), companion, browse=browse)
    return replace(result, url=served.url, server=served)


def serve_files(artifact: Path, companion: Path | None, *, browse: bool = True) -> Any:
    """Serve files from disk (``tlnetron serve``)."""
    from .api import ExportResult

    try:
        data = artifact.read_bytes()
        cdata = companion.read_bytes() if companion is not None else None
    except OSError as exc:
        raise TlnetronError(
            ErrorCode.INVALID_PATH,
            f"cannot read {exc.filename} ({exc.strerror}).",
            where=str(exc.filename),
            remedy="pass the path of an artifact written by tlnetron export.",
        ) from exc
    served = serve_bytes((artifact.name, data), (companion.name, cdata) if companion and cdata is not None else None, browse=browse)
    return ExportResult(
        artifact=artifact, companion=companion, granularity="", node_count=0, edge_count=0,
        typed_edge_count=0, function_count=0, warnings=(), seconds=0.0, url=served.url, server=served,
    )


def wait_forever(result: Any) -> None:
    """Block until Ctrl+C, then stop the server."""
    try:
        while True:
            time.sleep(0.5)
    except KeyboardInterrupt:
        pass
    finally:
        if getattr(result, "server", None) is not None:
            result.server.stop()

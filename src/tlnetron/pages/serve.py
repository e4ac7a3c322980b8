"""Serving: open the artifact in Netron on 127.0.0.1 (a browser tab or a notebook).

Netron ignores a file dropped onto a *served* model (its drop handlers exist only on the
welcome screen), so a small loopback server of ours serves Netron's installed web app
byte-for-byte inside an ``<iframe>``, plus a bootstrap script (ours) that hands the model and
then the companion to the app as file drops - what a person does by hand.

What the server promises the person who runs it:

* every response carries a Content-Security-Policy that lets the page talk to this server
  only, so Netron's location lookup and analytics beacons never leave the machine;
* it answers only requests whose ``Host`` is the address it bound (DNS rebinding gets a 403);
* a malformed or hostile request gets a 4xx, never a traceback on the terminal.
"""

from __future__ import annotations

import errno
import http
import http.server
import ipaddress
import json
import socket
import sys
import threading
import time
import urllib.parse
import webbrowser
from dataclasses import dataclass, field, replace
from importlib import resources
from pathlib import Path
from typing import Any

from .._generated.vocab import ErrorCode, WarningCode
from ..errors import TlnetronError, warn
from ..read.files import companion_object
from ..result import ExportResult
from .app import netron_age_gate, netron_dir, require_netron

__all__ = [
    "CONTENT_SECURITY_POLICY",
    "LOOPBACK",
    "Served",
    "serve_bytes",
    "serve_files",
    "serve_result",
    "wait_forever",
]

LOOPBACK = "127.0.0.1"
MAX_TARGET = 2048
"""Longest request target answered; longer ones get 414 (no route of ours is near it)."""

CONTENT_SECURITY_POLICY = "; ".join(
    (
        "default-src 'self'",
        "connect-src 'self'",  # fetch, XHR and sendBeacon: ipinfo.io and analytics stay unsent
        "script-src 'self'",
        "worker-src 'self'",
        "style-src 'self' 'unsafe-inline'",  # Netron's index.html carries an inline <style>
        "img-src 'self' data: blob:",
        "font-src 'self' data:",
        "frame-src 'self'",
        "object-src 'none'",
        "base-uri 'none'",
        "form-action 'none'",
    )
)


@dataclass
class Served:
    """A running server: its address, the page to open, and how to stop it."""

    host: str
    port: int
    url: str
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
<script defer src="/tlnetron/heatmap.js"></script>
<script defer src="/tlnetron/bootstrap.js"></script></head>
<body><iframe id="netron" src="/netron/index.html" title="Netron"></iframe></body></html>
"""


@dataclass(frozen=True, slots=True)
class _Site:
    """Everything one server answers, fixed when it starts: route -> (content type, bytes)."""

    routes: dict[str, tuple[str, bytes]]
    app_dir: Path
    app_files: frozenset[str]
    hosts: frozenset[str]


_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript",
    ".css": "text/css",
    ".json": "application/json",
    ".png": "image/png",
    ".ico": "image/x-icon",
}


def _site(
    model: tuple[str, bytes], companion: tuple[str, bytes] | None, hosts: frozenset[str], colour_by: str = "none"
) -> _Site:
    from .colours import page_colours

    files = {"model": model, **({"companion": companion} if companion is not None else {})}
    listing: dict[str, Any] = {k: {"url": f"/tlnetron/data/{k}", "name": name} for k, (name, _) in files.items()}
    listing.update(page_colours(colour_by))
    page = _PAGE.format(title=model[0].replace("&", "&amp;").replace("<", "&lt;")).encode()
    routes = {
        "/": (_TYPES[".html"], page),
        "/index.html": (_TYPES[".html"], page),
        "/tlnetron/bootstrap.js": (_TYPES[".js"], (resources.files(__package__) / "serve_bootstrap.js").read_bytes()),
        "/tlnetron/heatmap.js": (_TYPES[".js"], (resources.files(__package__) / "heatmap.js").read_bytes()),
        "/tlnetron/files.json": (_TYPES[".json"], json.dumps(listing).encode()),
        **{f"/tlnetron/data/{k}": (_TYPES[".json"], data) for k, (_, data) in files.items()},
    }
    app_dir = netron_dir()
    # Only the app's own top-level files are reachable: no path is ever joined onto a folder.
    app_files = frozenset(p.name for p in app_dir.iterdir() if p.is_file() and p.suffix in _TYPES)
    return _Site(routes, app_dir, app_files, hosts)


class _Handler(http.server.BaseHTTPRequestHandler):
    server_version = "tlnetron"
    sys_version = ""
    site: _Site

    def log_message(self, format: str, *args: Any) -> None:  # quiet: the terminal is the user's
        return

    def _send(self, code: int, ctype: str, body: bytes) -> None:
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.send_header("Content-Security-Policy", CONTENT_SECURITY_POLICY)
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Referrer-Policy", "no-referrer")
        self.send_header("Cross-Origin-Resource-Policy", "same-origin")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    timeout = 30
    """Seconds a connection may sit idle (or half-open) before its thread lets it go."""

    def _refuse(self, code: int, why: str) -> None:
        self.close_connection = True
        self._send(code, "text/plain; charset=utf-8", f"{code} {why}\n".encode())

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        """http.server's own errors (bad request line, long headers, unknown method) with our headers."""
        if code == 501:  # a method with no do_ handler: only GET and HEAD are served
            self._allow = True
            return self._refuse(405, "only GET and HEAD are served")
        self._refuse(code, message or http.HTTPStatus(code).phrase)

    def end_headers(self) -> None:
        if getattr(self, "_allow", False):
            self.send_header("Allow", "GET, HEAD")
        super().end_headers()

    def do_HEAD(self) -> None:  # noqa: N802
        self.do_GET()

    def do_GET(self) -> None:  # noqa: N802
        try:
            self._answer()
        except (BrokenPipeError, ConnectionResetError, TimeoutError):
            self.close_connection = True
        except Exception:  # noqa: BLE001  (a bug of ours still must not print a traceback)
            self.close_connection = True
            try:
                self._refuse(500, "internal error")
            except OSError:
                pass

    def _answer(self) -> None:
        site = self.site
        if len(self.headers.get_all("Host") or ()) > 1:  # which one decides would differ between proxies and us
            return self._refuse(400, "more than one Host header")
        if self.headers.get("Host", "").lower() not in site.hosts:
            return self._refuse(403, "this server answers only " + " or ".join(sorted(site.hosts)))
        if len(self.path) > MAX_TARGET:
            return self._refuse(414, "request target too long")
        if not self.path.startswith("/"):  # absolute-form would name a host of its own
            return self._refuse(400, "malformed request target")
        try:
            path = urllib.parse.unquote(urllib.parse.urlsplit(self.path).path, errors="strict")
        except (ValueError, UnicodeDecodeError):
            return self._refuse(400, "malformed request target")
        if any(c < " " or c in "\x7f\\" for c in path):
            return self._refuse(400, "malformed request target")
        if path == "/favicon.ico":
            path = "/netron/favicon.ico"
        route = site.routes.get(path)
        if route is not None:
            return self._send(200, *route)
        name = path[len("/netron/") :] if path.startswith("/netron/") else ""
        if name in site.app_files:
            return self._send(200, _TYPES[Path(name).suffix], (site.app_dir / name).read_bytes())
        self._refuse(404, "not found")


class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128  # a browser opens many connections at once

    def handle_error(self, request: Any, client_address: Any) -> None:
        return  # a client that hung up or sent garbage is not the user's concern


def _bind_address(host: str) -> tuple[str, bool]:
    """The address to bind for ``host`` (an IP literal or "localhost") and whether it is loopback."""
    try:
        ip = ipaddress.ip_address("127.0.0.1" if host == "localhost" else host)
    except ValueError:
        raise TlnetronError(
            ErrorCode.SERVE_ADDRESS_UNAVAILABLE,
            f"host {host!r} is not an IP address.",
            where="host",
            remedy="use 127.0.0.1 (the default: this machine only), or one of this machine's own IP addresses.",
        ) from None
    if ip.is_unspecified:
        raise TlnetronError(
            ErrorCode.SERVE_ADDRESS_UNAVAILABLE,
            f"host {host!r} would answer on every network interface.",
            where="host",
            remedy="name one address: 127.0.0.1 (the default), or the one address other machines should reach.",
        )
    return str(ip), ip.is_loopback


def _start_server(
    model: tuple[str, bytes], companion: tuple[str, bytes] | None, host: str, port: int, colour_by: str = "none"
) -> Served:
    if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port <= 65535:
        raise TlnetronError(
            ErrorCode.SERVE_ADDRESS_UNAVAILABLE,
            f"port {port!r} is not a port number.",
            where="port",
            remedy="use a port from 1 to 65535, or 0 (the default) for any free one.",
        )
    address, loopback = _bind_address(host)
    server_class = type(
        "_Server6" if ":" in address else "_Server4",
        (_Server,),
        {"address_family": socket.AF_INET6 if ":" in address else socket.AF_INET},
    )
    handler: type[_Handler] = type("_BoundHandler", (_Handler,), {})
    try:
        httpd = server_class((address, port), handler)
    except OSError as exc:
        taken = exc.errno in (errno.EADDRINUSE, errno.EACCES)
        raise TlnetronError(
            ErrorCode.SERVE_ADDRESS_UNAVAILABLE,
            f"cannot serve on {address}:{port} ({exc.strerror or exc}).",
            where=f"{address}:{port}",
            remedy=(
                "choose another port, or 0 for any free one."
                if taken
                else "use 127.0.0.1, or an address this machine has (ip addr lists them)."
            ),
        ) from None
    bound_port = int(httpd.server_address[1])
    netloc = f"[{address}]:{bound_port}" if ":" in address else f"{address}:{bound_port}"
    hosts = {netloc}
    if loopback:
        hosts.add(f"localhost:{bound_port}")  # browsers resolve localhost to loopback only
    handler.site = _site(model, companion, frozenset(hosts), colour_by)
    thread = threading.Thread(target=httpd.serve_forever, name="tlnetron-serve", daemon=True)
    thread.start()

    def stop() -> None:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=5)

    if not loopback:
        warn(
            WarningCode.SERVE_BEYOND_LOOPBACK,
            f"serving on {netloc}: anyone who can reach this address can read the model. "
            "Remedy: serve on 127.0.0.1 (the default) and forward the port over ssh.",
        )
    return Served(address, bound_port, f"http://{netloc}/", stop)


def _in_notebook() -> bool:
    ipython = sys.modules.get("IPython")
    get = getattr(ipython, "get_ipython", None)
    shell = get() if callable(get) else None
    return shell is not None and getattr(shell, "kernel", None) is not None


def _show(served: Served, browse: bool) -> None:
    if _in_notebook():
        import IPython.display

        shown: Any = IPython.display  # typed or not, depending on the IPython installed
        shown.display(shown.IFrame(served.url, width="100%", height=800))
    elif browse:
        webbrowser.open(served.url)


def serve_bytes(
    model: tuple[str, bytes],
    companion: tuple[str, bytes] | None,
    *,
    browse: bool = True,
    host: str = LOOPBACK,
    port: int = 0,
    colour_by: str = "none",
) -> Served:
    """Serve an artifact (and companion) and show it.

    Args:
        model: the artifact's file name and bytes.
        companion: the companion's file name and bytes, or None.
        browse: open a browser tab (a notebook shows an iframe instead).
        host: the address to bind: 127.0.0.1 (default) or another IP address of this machine.
        port: the port; 0 (default) picks a free one.
        colour_by: the heat map's first colour scheme (``none``: Netron's own colours).

    Raises:
        TlnetronError: ``netron_serve_unavailable``, ``netron_attachment_invalid``,
            ``companion_mismatch``, ``serve_address_unavailable``, ``invalid_colour_scheme``,
            ``page_too_large``.
    """
    from ..read.files import check_page_fits
    from .colours import check_colour

    check_colour(colour_by)
    check_page_fits((model, companion), "nothing was served")
    require_netron()
    gate = netron_age_gate()
    if gate:
        warn(WarningCode.NETRON_APP_EXPIRED, gate)
    if companion is not None:
        from ..check.pairs import mismatched_pair

        refusal = mismatched_pair(
            model, (companion[0], companion_object(*companion)), "serve the model alone without --attachment"
        )
        if refusal is not None:
            raise refusal
    served = _start_server(model, companion, host, port, colour_by)
    _show(served, browse)
    return served


def serve_result(result: Any, *, browse: bool = True, colour_by: str = "none") -> Any:
    """Serve what :func:`tlnetron.export` produced; returns the result with ``url`` set."""
    name = result.artifact.name if result.artifact is not None else "model.onnx.json"
    companion = None
    if result.companion is not None and result.companion_bytes is not None:
        companion = (result.companion.name, result.companion_bytes)
    served = serve_bytes((name, result.artifact_bytes), companion, browse=browse, colour_by=colour_by)
    return replace(result, url=served.url, server=served)


def serve_files(
    artifact: Path,
    companion: Path | None,
    *,
    browse: bool = True,
    host: str = LOOPBACK,
    port: int = 0,
    colour_by: str = "none",
) -> Any:
    """Serve files from disk (``tlnetron serve``); see :func:`serve_bytes` for the arguments.

    Raises:
        TlnetronError: ``invalid_path`` (a path no system call takes, a file that cannot be
            read or is past the size limit), and those of :func:`serve_bytes`.
    """
    from ..options import check_os_limits
    from ..read.files import read_input
    from ..write.pair import read_pair
    from .colours import check_colour

    check_colour(colour_by)  # before the files are read: the same refusal as every other page

    for path, flag in ((artifact, "artifact"), *(((companion, "attachment"),) if companion is not None else ())):
        check_os_limits(path, flag)

    def read(p: Path) -> bytes:
        return read_input(p, "--attachment" if p == companion else "", "nothing was served")

    data, cdata = read_pair(artifact, companion, read) if companion is not None else (read(artifact), None)
    pair = (companion.name, cdata) if companion is not None and cdata is not None else None
    served = serve_bytes((artifact.name, data), pair, browse=browse, host=host, port=port, colour_by=colour_by)
    return ExportResult(
        artifact=artifact,
        companion=companion,
        granularity="",
        node_count=0,
        edge_count=0,
        typed_edge_count=0,
        function_count=0,
        warnings=(),
        seconds=0.0,
        url=served.url,
        server=served,
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

"""A small real-browser driver for Netron 9.3.3 (test code, not product code).

It opens an artifact in the real Netron web app (the files installed by
``pip install netron``) in headless Debian Chromium, driven by Python Playwright
over CDP, and reads back what a person sees: node boxes, edge labels, the
sidebars, the drill-down breadcrumb.

Typical use::

    with NetronBrowser() as browser, browser.new_page() as netron:
        netron.open_dropped("model.onnx.json", "model.companion.json")
        netron.drawn_nodes()
        netron.open_node_properties("relu_1_1")

Two ways to open an artifact:

* :meth:`NetronPage.open_served` -- ``netron.serve(...)`` on a loopback ephemeral port,
  the way ``netron MODEL`` / the Python API shows a model.  A companion cannot be
  delivered in this mode (the app registers no drop/open handler there).
* :meth:`NetronPage.open_dropped` -- our own loopback server serves the *bare* app
  (Netron's installed files, unmodified; see :class:`NetronAppServer` for the one
  optional test-only rewrite), then the model is dropped on the page like a person
  would, and once the graph is drawn the companion is dropped the same way.

Facts this relies on (measured, see shared/reference/netron-in-a-browser.md):

* ``page.evaluate()`` and every Playwright call that evaluates in the page's main
  world (``all_text_contents``, ``locator.evaluate``...) fail, because the app
  replaces ``window.eval``.  Clicks, waits and ``get_attribute``/``text_content``
  work (they run in Playwright's utility world).  Bulk reads of in-page state go
  through a CDP session's ``Runtime.evaluate``, which does not use ``window.eval``.
* ``--host-resolver-rules=MAP * ~NOTFOUND`` also maps the literal ``127.0.0.1``;
  it needs ``EXCLUDE 127.0.0.1`` or the loopback server cannot be reached.
* Every non-loopback request is aborted.  Netron's analytics beacons (sent once the
  consent cookie exists) then log ``Failed to load resource: net::ERR_FAILED``;
  those are kept out of :meth:`NetronPage.console_errors` (they are ours) and are
  listed by :meth:`NetronPage.blocked_requests`.
"""

from __future__ import annotations

import atexit
import datetime as _dt
import http.server
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import threading
import time
import urllib.parse
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

__all__ = [
    "AGE_GATE_DAYS",
    "AgeGateError",
    "AppTerminatedError",
    "CHROMIUM",
    "ConsentGateError",
    "DropIgnoredError",
    "ErrorDialogError",
    "LayoutTimeoutError",
    "NetronAppServer",
    "NetronBrowser",
    "NetronDriverError",
    "NetronGateError",
    "NetronPage",
    "NotOpenedError",
    "netron_app_date",
    "netron_app_dir",
    "netron_page",
]

CHROMIUM = "/usr/bin/chromium"
AGE_GATE_DAYS = 180
DEFAULT_TIMEOUT = 30.0  # seconds, for a layout to finish
REACTION_TIMEOUT = 5.0  # seconds, for the app to react at all to a delivered file
POLL = 0.025

CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    # MAP * also captures the literal 127.0.0.1; without the EXCLUDE the loopback
    # servers are unreachable (net::ERR_NAME_NOT_RESOLVED).
    "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
)

CONSENT_COOKIE = "consent"  # browser.js: `if (this._getCookie('consent') || this._getCookie('_ga')) return;`
CONSENT_TEXT = "This app uses cookies"
AGE_GATE_TEXT = "Please update to the newest version."
LAYOUT_NOTICE_TEXT = "This large graph layout might take a very long time to complete."
FUNCTION_ITEM_TITLE = "Show Function Definition"

_CSP_REFUSAL = re.compile(
    r"(?:Refused to (?:connect to|load)|Connecting to) '([^']+)'.* violates the following Content Security Policy"
)
_META_DATE = re.compile(r'(<meta name="date" content=")([^"]*)(">)')


# --------------------------------------------------------------------------- errors


class NetronDriverError(AssertionError):
    """Something the driver checked did not hold (an AssertionError so pytest shows it plainly)."""


class NetronGateError(NetronDriverError):
    """The app stopped at a gate; ``gate`` names it, ``message`` is what the page said."""

    gate = "gate"

    def __init__(self, detail: str, *, message: str = "", classes: str = "") -> None:
        self.message = message
        self.classes = classes
        super().__init__(f"[{self.gate}] {detail}")


class ErrorDialogError(NetronGateError):
    gate = "error dialog"


class AgeGateError(NetronGateError):
    gate = "age gate"


class ConsentGateError(NetronGateError):
    gate = "cookie consent"


class LayoutTimeoutError(NetronGateError):
    gate = "layout"


class AppTerminatedError(NetronGateError):
    gate = "app terminated"


class NotOpenedError(NetronGateError):
    """The app went back to its welcome screen without drawing and without an error dialog."""

    gate = "not opened"


class DropIgnoredError(NotOpenedError):
    """A delivered file caused no screen change at all (not accepted, or no drop handler)."""

    gate = "drop ignored"


# --------------------------------------------------------------------------- Netron files


def netron_app_dir() -> Path:
    """The directory of Netron's installed web app (index.html, *.js)."""
    import netron  # noqa: PLC0415  (optional test dependency)

    return Path(netron.__file__).resolve().parent


def netron_app_date(index_html: str | None = None) -> _dt.datetime:
    """The UTC build date in index.html's ``<meta name="date">`` (what the age gate compares)."""
    text = index_html if index_html is not None else (netron_app_dir() / "index.html").read_text("utf-8")
    match = _META_DATE.search(text)
    if not match:
        raise NetronDriverError('Netron index.html has no <meta name="date">')
    return _dt.datetime.fromisoformat(match.group(2).replace(" ", "T")).replace(tzinfo=_dt.timezone.utc)


def _age_gate_would_fire(now: _dt.datetime | None = None) -> tuple[bool, float]:
    now = now or _dt.datetime.now(_dt.timezone.utc)
    days = (now - netron_app_date()).total_seconds() / 86400.0
    return days > AGE_GATE_DAYS, days


_MIME = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".json": "application/json",
    ".png": "image/png",
    ".ico": "image/x-icon",
}


class _QuietHTTPServer(http.server.ThreadingHTTPServer):
    """Does not print a traceback when the browser drops a connection (a page left mid-load)."""

    def handle_error(self, request: Any, client_address: Any) -> None:
        import sys  # noqa: PLC0415

        if isinstance(sys.exc_info()[1], ConnectionError):
            return
        super().handle_error(request, client_address)


class NetronAppServer:
    """Serve the bare Netron app (no model) from its installed directory on 127.0.0.1:<ephemeral>.

    Files are served unmodified from disk.  ``index.html`` is served as-is, except that
    when ``app_date`` is given its ``<meta name="date">`` content is replaced by it (a
    test-only way past the age gate).  ``app_date="auto"`` rewrites the date to now only
    if the installed date is more than 180 days old (so today the page is byte-identical),
    ``None`` never rewrites, any other string is used verbatim (``"2020-01-01 00:00:00"``
    makes the gate fire, to test its detection).
    """

    def __init__(self, app_date: str | None = "auto") -> None:
        self.root = netron_app_dir()
        index = (self.root / "index.html").read_bytes()
        self.original_date = netron_app_date(index.decode("utf-8"))
        if app_date == "auto":
            fire, _ = _age_gate_would_fire()
            app_date = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S") if fire else None
        self.app_date = app_date
        if app_date is not None:
            text = _META_DATE.sub(lambda m: f"{m.group(1)}{app_date}{m.group(3)}", index.decode("utf-8"), count=1)
            index = text.encode("utf-8")
        self._index = index
        self.requests: list[str] = []
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802
                server.requests.append(self.path)
                path = urllib.parse.unquote(urllib.parse.urlsplit(self.path).path)
                name = "index.html" if path in ("/", "/index.html") else path.lstrip("/")
                body: bytes | None = None
                if name == "index.html":
                    body = server._index
                elif "/" not in name and "\\" not in name and name not in ("", ".", ".."):
                    file = server.root / name
                    if file.suffix in _MIME and file.is_file():
                        body = file.read_bytes()
                if body is None:
                    self.send_response(404)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                self.send_response(200)
                self.send_header("Content-Type", _MIME.get(Path(name).suffix, "application/octet-stream"))
                self.send_header("Content-Length", str(len(body)))
                self.send_header("Cache-Control", "no-store")
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
                pass

        self._httpd = _QuietHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, name="netron-app-server", daemon=True
        )
        self._thread.start()
        self.address: tuple[str, int] = self._httpd.server_address[:2]  # type: ignore[assignment]
        self.origin = f"http://127.0.0.1:{self.address[1]}"

    def close(self) -> None:
        if self._thread.is_alive():
            self._httpd.shutdown()
            self._thread.join(5)
        self._httpd.server_close()

    def __enter__(self) -> NetronAppServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# --------------------------------------------------------------------------- in-page JS (via CDP)

_JS_ARM = r"""(() => {
  let s = window.__tlnetron_state;
  if (!s) {
    s = { log: [] };
    Object.defineProperty(window, '__tlnetron_state', { value: s, configurable: true });
    new MutationObserver((records) => {
      for (let i = 1; i < records.length; i++) { s.log.push(records[i].oldValue || ''); }
      s.log.push(document.body.className);
    }).observe(document.body, { attributes: true, attributeFilter: ['class'], attributeOldValue: true });
  }
  s.log.length = 0;
  const c = document.getElementById('canvas');
  if (c) { c.__tlnetron_old = true; }
  return document.body.className;
})()"""

_JS_STATE = r"""(() => {
  const b = document.body;
  const m = document.getElementById('message-text');
  const btn = document.getElementById('message-button');
  const c = document.getElementById('canvas');
  const s = window.__tlnetron_state;
  return {
    ready: document.readyState,
    classes: b ? b.className : '',
    message: m ? m.textContent : '',
    button: btn && btn.style.display !== 'none' ? btn.textContent : '',
    viewBox: c ? c.getAttribute('viewBox') : null,
    fresh: c ? !c.__tlnetron_old : false,
    log: s ? s.log.slice() : null
  };
})()"""

_JS_IN_FRAME = r"""((frame) => {{
  if (!frame || !frame.contentDocument || !frame.contentWindow) {{
    return (() => {{ throw new Error('no same-origin frame ' + {selector}); }})();
  }}
  const window = frame.contentWindow;
  const document = frame.contentDocument;
  const getComputedStyle = window.getComputedStyle.bind(window);
  const MutationObserver = window.MutationObserver;
  return ({expression});
}})(document.querySelector({selector}))"""

_JS_NODES = r"""(() => {
  const out = [];
  for (const g of document.querySelectorAll('#origin > #nodes > g.node')) {
    const items = [];
    for (const child of g.children) {
      if (child.classList && child.classList.contains('node-item')) {
        const title = Array.from(child.children).find((e) => e.localName === 'title');
        const text = Array.from(child.children).filter((e) => e.localName === 'text')
          .map((e) => e.textContent).join('');
        items.push({ text, title: title ? title.textContent : null, classes: Array.from(child.classList) });
      }
    }
    const args = [];
    for (const arg of g.querySelectorAll(':scope > g.node-argument-list > g.node-argument')) {
      args.push(Array.from(arg.querySelectorAll(':scope > text > tspan')).map((e) => e.textContent).join(''));
    }
    out.push({ id: g.getAttribute('id'), classes: Array.from(g.classList), items, args });
  }
  return out;
})()"""

_JS_EDGES = r"""(() => ({
  labels: Array.from(document.querySelectorAll('#edge-labels > text.edge-label')).map((e) => e.textContent),
  paths: document.querySelectorAll('#edge-paths > path.edge-path').length
}))()"""

_JS_SIDEBAR = r"""(() => {
  const sidebar = document.getElementById('sidebar');
  const title = document.getElementById('sidebar-title');
  const content = document.getElementById('sidebar-content');
  const rows = [];
  const lineText = (value) => {
    const lines = [];
    for (const child of value.children) {
      const cls = child.classList;
      if (cls.contains('sidebar-item-value-expander') || cls.contains('sidebar-item-value-button')) { continue; }
      const t = child.innerText !== undefined ? child.innerText : child.textContent;
      lines.push(t.replace(/\u00a0/g, ' ').replace(/\s+$/, ''));
    }
    return lines.join('\n');
  };
  let object = content ? content.querySelector('.sidebar-object') : null;
  const children = object ? Array.from(object.children) : [];
  for (const el of children) {
    if (el.classList.contains('sidebar-section')) {
      rows.push({ section: el.textContent });
    } else if (el.classList.contains('sidebar-item')) {
      const input = el.querySelector(':scope > .sidebar-item-name input');
      const values = Array.from(el.querySelectorAll(':scope > .sidebar-item-value-list > .sidebar-item-value'));
      const expanders = Array.from(el.querySelectorAll(
          ':scope > .sidebar-item-value-list > .sidebar-item-value > .sidebar-item-value-expander'))
        .map((e) => e.textContent);
      rows.push({ name: input ? input.getAttribute('value') : '', value: values.map(lineText).join('\n'), expanders });
    }
  }
  return {
    open: sidebar ? getComputedStyle(sidebar).opacity === '1' : false,
    title: title ? title.textContent : '',
    rows
  };
})()"""


# --------------------------------------------------------------------------- browser


_LIVE_PROCESSES: set[subprocess.Popen[bytes]] = set()


class _Playwright:
    """One Playwright (sync API) per process, shared by every NetronBrowser, ref-counted.

    A second ``sync_playwright().start()`` while one is active fails ("Sync API inside
    the asyncio loop"), so two browsers alive at once must share it.
    """

    _instance: Any = None
    _users = 0

    @classmethod
    def acquire(cls) -> Any:
        if cls._instance is None:
            from playwright.sync_api import sync_playwright  # noqa: PLC0415

            cls._instance = sync_playwright().start()
        cls._users += 1
        return cls._instance

    @classmethod
    def release(cls) -> None:
        cls._users -= 1
        if cls._users <= 0 and cls._instance is not None:
            instance, cls._instance, cls._users = cls._instance, None, 0
            instance.stop()


def _kill_process_group(proc: subprocess.Popen[bytes]) -> None:
    """Stop a browser *we* started: its main process first (so it reaps its own children),
    then anything left in the process group it leads (created by ``start_new_session``)."""
    if proc.poll() is None:
        try:
            proc.terminate()
            proc.wait(5.0)
        except subprocess.TimeoutExpired:
            pass
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        proc.wait(5.0)
    except subprocess.TimeoutExpired:
        pass
    _LIVE_PROCESSES.discard(proc)


def _remove_singleton_dir(user_data_dir: str) -> None:
    """Remove the folder Chromium made for its profile's singleton socket.

    Chromium puts the socket in a fresh ``org.chromium.Chromium.XXXXXX`` folder of the
    temporary folder (a socket's path must be short) and links it from the profile as
    ``SingletonSocket``; a headless Chromium that is terminated leaves that folder behind.
    Only the folder the link names, and only one of that name, is removed.
    """
    try:
        socket_path = Path(os.readlink(Path(user_data_dir, "SingletonSocket")))
    except OSError:
        return
    folder = socket_path.parent
    if folder.name.startswith("org.chromium.Chromium.") and folder.is_dir():
        shutil.rmtree(folder, ignore_errors=True)


@atexit.register
def _kill_leftovers() -> None:
    for proc in list(_LIVE_PROCESSES):
        _kill_process_group(proc)


class NetronBrowser:
    """Headless Debian Chromium, started by us, driven by Python Playwright over CDP.

    ``with NetronBrowser() as browser:`` -- the browser process (and its process group)
    is always terminated on exit, even when the body raised.
    """

    def __init__(
        self,
        executable: str = CHROMIUM,
        *,
        extra_args: Sequence[str] = (),
        launch_timeout: float = 30.0,
        timeout: float = DEFAULT_TIMEOUT,
    ) -> None:
        self.executable = executable
        self.extra_args = tuple(extra_args)
        self.launch_timeout = launch_timeout
        self.timeout = timeout
        self._proc: subprocess.Popen[bytes] | None = None
        self._user_data_dir: str | None = None
        self._pw: Any = None
        self._browser: Any = None
        self._pages: list[NetronPage] = []
        self.launch_seconds: float | None = None

    # -- lifecycle
    def start(self) -> NetronBrowser:
        if not os.path.exists(self.executable):
            raise NetronDriverError(f"Chromium not found at {self.executable}")
        t0 = time.monotonic()
        self._user_data_dir = tempfile.mkdtemp(prefix="tlnetron-chromium-")
        args = [
            self.executable,
            *CHROMIUM_FLAGS,
            f"--user-data-dir={self._user_data_dir}",
            "--remote-debugging-address=127.0.0.1",
            "--remote-debugging-port=0",
            *self.extra_args,
            "about:blank",
        ]
        try:
            self._proc = subprocess.Popen(
                args,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
            )
            _LIVE_PROCESSES.add(self._proc)
            port_file = Path(self._user_data_dir, "DevToolsActivePort")
            deadline = t0 + self.launch_timeout
            port = None
            while time.monotonic() < deadline:
                if self._proc.poll() is not None:
                    raise NetronDriverError(f"[launch] chromium exited with code {self._proc.returncode}")
                try:
                    first = port_file.read_text().split("\n", 1)[0].strip()
                except FileNotFoundError:
                    first = ""
                if first.isdigit():
                    port = int(first)
                    break
                time.sleep(POLL)
            if port is None:
                raise NetronDriverError(f"[launch] no DevTools port within {self.launch_timeout:.0f}s")
            self._pw = _Playwright.acquire()
            self._browser = self._pw.chromium.connect_over_cdp(
                f"http://127.0.0.1:{port}", timeout=self.launch_timeout * 1000
            )
        except BaseException:
            self.close()
            raise
        self.launch_seconds = time.monotonic() - t0
        return self

    def close(self) -> None:
        for page in list(self._pages):
            try:
                page.close()
            except Exception:  # noqa: BLE001  (best effort; the process is killed below)
                pass
        self._pages.clear()
        if self._browser is not None:
            try:
                self._browser.close()
            except Exception:  # noqa: BLE001
                pass
            self._browser = None
        if self._proc is not None:
            _kill_process_group(self._proc)
            self._proc = None
        if self._pw is not None:
            self._pw = None
            try:
                _Playwright.release()
            except Exception:  # noqa: BLE001
                pass
        if self._user_data_dir is not None:
            _remove_singleton_dir(self._user_data_dir)
            shutil.rmtree(self._user_data_dir, ignore_errors=True)
            self._user_data_dir = None

    def __enter__(self) -> NetronBrowser:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    @property
    def version(self) -> str:
        return str(self._browser.version) if self._browser is not None else ""

    def new_page(
        self, *, consent: str = "cookie", consent_delay: float = 0.0, timeout: float | None = None
    ) -> NetronPage:
        """A fresh browser context + page (own cookies); close it (or use ``with``) when done.

        ``consent="click"`` clicks the cookie notice's Accept button once it has been on
        screen for ``consent_delay`` seconds, as a person reading it would.
        """
        if self._browser is None:
            raise NetronDriverError("browser not started")
        page = NetronPage(
            self, consent=consent, consent_delay=consent_delay, timeout=self.timeout if timeout is None else timeout
        )
        self._pages.append(page)
        return page

    def _forget(self, page: NetronPage) -> None:
        if page in self._pages:
            self._pages.remove(page)


def _is_loopback(url: str) -> bool:
    """Whether ``url`` stays on this machine: loopback hosts, and files, data and blobs (no host)."""
    parts = urllib.parse.urlsplit(url)
    if parts.scheme in ("data", "blob", "about") or (parts.scheme == "file" and parts.netloc in ("", "localhost")):
        return True
    return parts.scheme in ("http", "https", "ws") and parts.hostname in ("127.0.0.1", "localhost", "::1")


class NetronPage:
    """One tab showing Netron.  Readers return plain Python data of what a person sees."""

    def __init__(
        self,
        browser: NetronBrowser,
        *,
        consent: str = "cookie",
        consent_delay: float = 0.0,
        timeout: float = DEFAULT_TIMEOUT,
    ) -> None:
        if consent not in ("cookie", "click", "none"):
            raise ValueError("consent must be 'cookie', 'click' or 'none'")
        self._owner = browser
        self.consent = consent
        self.consent_delay = consent_delay
        self.consent_clicks = 0  # Accept clicks made on this page
        self._consent_seen: float | None = None
        self.timeout = timeout
        self.reaction_timeout = REACTION_TIMEOUT
        self.render_seconds: float | None = None
        self.mode: str | None = None
        self.origin: str | None = None
        self._served: tuple[str, int] | None = None
        self._app_server: NetronAppServer | None = None
        self._frame: str | None = None  # CSS selector of the <iframe> the app runs in (open_url(frame=...))
        self._console: list[dict[str, Any]] = []
        self._blocked: list[str] = []
        self._closed = False
        self._context = browser._browser.new_context(viewport={"width": 1280, "height": 800})
        self._context.route("**/*", self._route)
        self.page = self._context.new_page()
        self.page.set_default_timeout(timeout * 1000)
        self.page.on("console", self._on_console)
        self.page.on("pageerror", self._on_pageerror)
        self._cdp = self._context.new_cdp_session(self.page)

    # -- lifecycle
    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            self._blank()
            self._context.close()
        finally:
            self._stop_servers()
            self._owner._forget(self)

    def _blank(self) -> None:
        """Leave the app (cancelling its pending loads) before its server is stopped."""
        if self.mode is not None:
            try:
                self.page.goto("about:blank", timeout=5000)
            except Exception:  # noqa: BLE001  (best effort)
                pass

    def __enter__(self) -> NetronPage:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _stop_servers(self) -> None:
        if self._served is not None:
            import netron  # noqa: PLC0415

            netron.stop(self._served)
            self._served = None
        if self._app_server is not None:
            self._app_server.close()
            self._app_server = None

    # -- network + console
    def _route(self, route: Any) -> None:
        url = route.request.url
        if _is_loopback(url):
            route.continue_()
        else:
            self._blocked.append(url)
            route.abort()

    def _on_console(self, msg: Any) -> None:
        location = msg.location or {}
        self._console.append({"type": msg.type, "text": msg.text, "url": location.get("url", "")})

    def _on_pageerror(self, error: Any) -> None:
        self._console.append({"type": "pageerror", "text": str(error), "url": ""})

    def console_messages(self) -> list[dict[str, Any]]:
        return list(self._console)

    def csp_refused(self) -> list[str]:
        """URLs the page's Content-Security-Policy stopped before any request was made."""
        out = []
        for m in self._console:
            found = _CSP_REFUSAL.match(m["text"]) if m["type"] == "error" else None
            if found:
                out.append(found.group(1))
        return out

    def console_errors(self) -> list[str]:
        """Console errors and uncaught page errors, minus the failures of requests *we* aborted
        and the requests to other hosts a Content-Security-Policy refused (see :meth:`csp_refused`)."""
        blocked = set(self._blocked)
        out = []
        for m in self._console:
            if m["type"] not in ("error", "pageerror"):
                continue
            found = _CSP_REFUSAL.match(m["text"]) if m["type"] == "error" else None
            if found and not _is_loopback(found.group(1)):
                continue
            if (
                m["type"] == "error"
                and m["text"].startswith("Failed to load resource")
                and (m["url"] in blocked or not _is_loopback(m["url"]))
            ):
                continue
            out.append(m["text"] + (f" ({m['url']})" if m["url"] else ""))
        return out

    def blocked_requests(self) -> list[str]:
        """Non-loopback requests the page attempted (all aborted)."""
        return list(self._blocked)

    # -- CDP
    @property
    def _root(self) -> Any:
        """Where the app's elements live: the page, or a FrameLocator of its iframe."""
        return self.page.frame_locator(self._frame) if self._frame else self.page

    def _js(self, expression: str) -> Any:
        if self._frame:
            # Runtime.evaluate in the (same-origin) embedding page, with the app's frame
            # globals shadowed: the frame's own window.eval is replaced by Netron.
            expression = _JS_IN_FRAME.format(selector=json.dumps(self._frame), expression=expression)
        return self._top_js(expression)

    def _top_js(self, expression: str) -> Any:
        """Evaluate in the top-level page (not the app's frame)."""
        result = self._cdp.send(
            "Runtime.evaluate", {"expression": expression, "returnByValue": True, "awaitPromise": False}
        )
        if "exceptionDetails" in result:
            details = result["exceptionDetails"]
            text = details.get("exception", {}).get("description") or details.get("text")
            raise NetronDriverError(f"in-page read failed: {text}")
        return result["result"].get("value")

    def body_classes(self) -> list[str]:
        return str(self._js("document.body ? document.body.className : ''")).split()

    def _state(self) -> dict[str, Any]:
        return self._js(_JS_STATE)  # type: ignore[no-any-return]

    # -- gates
    def _seed_consent(self, origin: str) -> None:
        if self.consent == "cookie":
            # browser.js only checks that a non-empty `consent` (or `_ga`) cookie exists.
            self._context.add_cookies([{"name": CONSENT_COOKIE, "value": str(int(time.time() * 1000)), "url": origin}])

    def _check_gates(self, state: dict[str, Any], what: str) -> bool:
        """Raise for a gate the app stopped at; return True if a consent click was made."""
        classes = state["classes"].split()
        message = (state["message"] or "").strip()
        if "alert" in classes:
            raise ErrorDialogError(
                f"Netron showed an error dialog while {what}: {message!r}", message=message, classes=state["classes"]
            )
        if "message" in classes and "welcome" in classes:
            raise AppTerminatedError(
                f"Netron stopped while {what}: {message!r}", message=message, classes=state["classes"]
            )
        if "notification" in classes:
            if message.startswith(AGE_GATE_TEXT.rstrip(".")):
                served = netron_app_date()
                if self._app_server is not None and self._app_server.app_date:
                    served = netron_app_date(f'<meta name="date" content="{self._app_server.app_date}">')
                days = (_dt.datetime.now(_dt.timezone.utc) - served).total_seconds() / 86400.0
                raise AgeGateError(
                    f"Netron's age gate fired while {what}: the page says {message!r} and loops forever. "
                    f'The page\'s <meta name="date"> is {served:%Y-%m-%d}, {days:.0f} days ago; the app '
                    f"refuses after {AGE_GATE_DAYS} days. Upgrade netron (the bare-app server may rewrite "
                    "the meta date for tests; netron.serve cannot).",
                    message=message,
                    classes=state["classes"],
                )
            if message.startswith(CONSENT_TEXT):
                if self.consent == "click":
                    now = time.monotonic()
                    self._consent_seen = self._consent_seen if self._consent_seen is not None else now
                    if now - self._consent_seen < self.consent_delay:
                        return True  # a person is still reading the notice
                    self._root.locator("#message-button").click()
                    self._consent_seen = None
                    self.consent_clicks += 1
                    return True
                raise ConsentGateError(
                    f"Netron waits for the cookie-consent 'Accept' click while {what} "
                    f"(consent={self.consent!r}: no '{CONSENT_COOKIE}' cookie was seeded and no click allowed)",
                    message=message,
                    classes=state["classes"],
                )
            # LAYOUT_NOTICE_TEXT (Cancel button): keep waiting, never cancel.
        return False

    def _wait(self, what: str, done: Any, timeout: float | None, *, reaction: float | None = None) -> dict[str, Any]:
        timeout = self.timeout if timeout is None else timeout
        t0 = time.monotonic()
        deadline = t0 + timeout
        state: dict[str, Any] = {}
        while True:
            state = self._state()
            if self._check_gates(state, what):
                time.sleep(POLL)
                continue
            if done(state):
                return state
            now = time.monotonic()
            if reaction is not None and now - t0 > reaction and state.get("log") == []:
                raise DropIgnoredError(
                    f"Netron did not react within {reaction:.0f}s while {what} (no screen change at all: "
                    f"the app did not accept the file, or registered no drop/open handler); body class "
                    f"{state['classes']!r}",
                    classes=state["classes"],
                )
            if now > deadline:
                notice = f"; notice on screen: {state['message']!r}" if "notification" in state["classes"] else ""
                raise LayoutTimeoutError(
                    f"nothing drawn within {timeout:.0f}s while {what}: body class {state['classes']!r}, "
                    f"canvas viewBox {state['viewBox']!r}{notice}",
                    message=state.get("message", ""),
                    classes=state["classes"],
                )
            time.sleep(POLL)

    @staticmethod
    def _settled(state: dict[str, Any]) -> bool:
        """A graph is on the canvas and Netron's loading logo and spinner have left it."""
        classes = state["classes"].split()
        return "default" in classes and "spinner" not in classes and bool(state["viewBox"])

    @classmethod
    def _drawn(cls, state: dict[str, Any]) -> bool:
        return cls._settled(state) and bool(state["fresh"])

    # -- opening
    def open_served(self, artifact_path: str | os.PathLike[str], *, timeout: float | None = None) -> float:
        """Open via ``netron.serve(name, bytearray(data), address=("127.0.0.1", 0))``; returns render seconds."""
        import netron  # noqa: PLC0415

        path = Path(artifact_path)
        self._blank()
        self._stop_servers()
        data = bytearray(path.read_bytes())
        address = netron.serve(path.name, data, address=("127.0.0.1", 0), browse=False)
        self._served = (str(address[0]), int(address[1]))
        origin = f"http://{address[0]}:{address[1]}"
        self.mode, self.origin, self._frame = "served", origin, None
        self._seed_consent(origin)
        t0 = time.monotonic()
        self.page.goto(origin + "/", wait_until="load")
        what = f"opening {path.name} served by netron.serve"

        def done(state: dict[str, Any]) -> bool:
            classes = state["classes"].split()
            if classes == ["welcome"]:
                raise NotOpenedError(
                    f"Netron fell back to its welcome screen while {what}: no reader accepted the file "
                    f"(nothing drawn, no error dialog)",
                    classes=state["classes"],
                )
            return self._settled(state)

        self._wait(what, done, timeout)
        self.render_seconds = time.monotonic() - t0
        return self.render_seconds

    def open_dropped(
        self,
        artifact_path: str | os.PathLike[str],
        companion_path: str | os.PathLike[str] | None = None,
        *,
        via: str = "drop",
        app_date: str | None = "auto",
        timeout: float | None = None,
    ) -> float:
        """Serve the bare app, deliver the model like a person, wait until drawn, then the companion.

        ``via="drop"`` makes real drag-and-drop events carrying the file (CDP
        ``Input.dispatchDragEvent``); ``via="input"`` picks it in the hidden
        ``#open-file-dialog`` (what Ctrl/Cmd+O does).  ``app_date`` is passed to
        :class:`NetronAppServer` (default "auto": index.html byte-identical unless the
        age gate would fire).  Returns the model's render seconds.
        """
        self._blank()
        self._stop_servers()
        server = NetronAppServer(app_date)
        self._app_server = server
        self.mode, self.origin, self._frame = "dropped", server.origin, None
        self._seed_consent(server.origin)
        self.page.goto(server.origin + "/", wait_until="load")
        self._wait(
            "starting the bare Netron app",
            lambda s: s["classes"].split() == ["welcome"],
            timeout,
        )
        path = Path(artifact_path)
        self._js(_JS_ARM)
        t0 = time.monotonic()
        self._deliver(path, via)
        self._wait(f"opening {path.name} ({via})", self._drawn, timeout, reaction=self.reaction_timeout)
        self.render_seconds = time.monotonic() - t0
        if companion_path is not None:
            self.drop_companion(companion_path, via=via, timeout=timeout)
        return self.render_seconds

    def drop_companion(
        self,
        companion_path: str | os.PathLike[str],
        *,
        via: str = "drop",
        check_signature: bool = True,
        timeout: float | None = None,
    ) -> float:
        """Deliver a ``netron:attachment`` companion onto the drawn model; returns seconds taken."""
        if self.mode != "dropped":
            raise NetronDriverError(
                "a companion can only be delivered to a dropped model: in served mode Netron registers "
                "no drop/open handler"
            )
        path = Path(companion_path)
        if check_signature:
            if not path.name.lower().endswith(".json"):
                raise NetronDriverError(f"companion {path.name!r} must end in .json or Netron opens it as a model")
            try:
                signature = json.loads(path.read_text("utf-8")).get("signature")
            except (ValueError, AttributeError) as error:
                raise NetronDriverError(f"companion {path.name!r} is not a JSON object: {error}") from error
            if signature != "netron:attachment":
                raise NetronDriverError(
                    f'companion {path.name!r} lacks "signature": "netron:attachment" '
                    "(Netron would open it as a model and replace the graph)"
                )
        self._close_sidebar()
        self._js(_JS_ARM)
        t0 = time.monotonic()
        self._deliver(path, via)

        def done(state: dict[str, Any]) -> bool:
            log = state["log"] or []
            seen_spinner = any("spinner" in entry.split() for entry in log)
            # An attachment keeps the drawn canvas (not fresh); a model would redraw it.
            return seen_spinner and self._settled(state)

        self._wait(f"attaching companion {path.name} ({via})", done, timeout, reaction=self.reaction_timeout)
        return time.monotonic() - t0

    def open_url(self, url: str, *, frame: str | None = None, timeout: float | None = None) -> float:
        """Open a page someone else serves (e.g. ``tlnetron.pages.serve``) and wait until a graph is drawn.

        ``frame`` is the CSS selector of the ``<iframe>`` the Netron app runs in (e.g.
        ``"#netron"``); every reader and click then works inside that frame.  The consent
        cookie is seeded for the URL's origin (``consent="cookie"``).  The server is not
        ours: it is not stopped by this page.  Returns seconds from navigation to drawn.
        """
        self._blank()
        self._stop_servers()
        parts = urllib.parse.urlsplit(url)
        origin = f"{parts.scheme}://{parts.netloc}"
        self.mode, self.origin, self._frame = "url", origin, frame
        self._seed_consent(origin)
        t0 = time.monotonic()
        self.page.goto(url, wait_until="load")
        what = f"opening {url}" + (f" (app in {frame})" if frame else "")

        self._wait(what, self._settled, timeout)
        self.render_seconds = time.monotonic() - t0
        return self.render_seconds

    def open_file_url(self, path: str | os.PathLike[str], *, timeout: float | None = None) -> float:
        """Open a page from disk (``file://``, no server) that runs the app top-level; wait until drawn.

        A ``file://`` page keeps no cookie, so Netron's cookie notice shows on every visit: the
        page must have been made with ``consent="click"`` (a person clicks Accept). Returns
        seconds from navigation to drawn.
        """
        if self.consent != "click":
            raise NetronDriverError(
                f"consent={self.consent!r}: a file:// page keeps no cookie to seed, so its notice must be clicked "
                '(new_page(consent="click"))'
            )
        return self.open_url(Path(path).resolve().as_uri(), timeout=timeout)

    def reload(self, *, timeout: float | None = None) -> float:
        """Reload the page as a person does (F5) and wait until a graph is drawn again.

        Cookies the page set stay; none is seeded. Returns seconds from reload to drawn.
        """
        t0 = time.monotonic()
        self.page.reload(wait_until="load")

        def done(state: dict[str, Any]) -> bool:
            return self._settled(state)

        self._wait(f"reloading {self.origin}", done, timeout)
        return time.monotonic() - t0

    def title(self) -> str:
        """The top-level page's ``document.title``."""
        return str(self._top_js("document.title"))

    def wait_title(self, suffix: str, *, timeout: float | None = None) -> str:
        """Wait until the top-level page's title ends with ``suffix``; return the title."""
        timeout = self.timeout if timeout is None else timeout
        deadline = time.monotonic() + timeout
        while True:
            title = self.title()
            if title.endswith(suffix):
                # the title changes before Netron redraws with the companion: let the page settle as a person does
                self._wait(
                    f"drawing after the title ended with {suffix!r}",
                    self._settled,
                    max(deadline - time.monotonic(), POLL),
                )
                return title
            self._check_gates(self._state(), f"waiting for the page title to end with {suffix!r}")
            if time.monotonic() > deadline:
                raise NetronDriverError(f"[title] {title!r} does not end with {suffix!r} after {timeout:.0f}s")
            time.sleep(POLL)

    def _deliver(self, path: Path, via: str) -> None:
        path = path.resolve()
        if not path.is_file():
            raise FileNotFoundError(path)
        if via == "input":
            self.page.set_input_files("#open-file-dialog", str(path))
        elif via == "drop":
            viewport = self.page.viewport_size or {"width": 1280, "height": 800}
            x, y = viewport["width"] * 0.3, viewport["height"] * 0.5
            data = {"items": [], "files": [str(path)], "dragOperationsMask": 1}
            for kind in ("dragEnter", "dragOver", "drop"):
                self._cdp.send("Input.dispatchDragEvent", {"type": kind, "x": x, "y": y, "data": data})
        else:
            raise ValueError("via must be 'drop' or 'input'")

    # -- readers: canvas
    def drawn_nodes(self) -> list[dict[str, Any]]:
        """Each ``#origin > #nodes > g.node`` box, in DOM order, as a dict:

        ``id`` (``node-name-<name>`` for op nodes, ``input-name-<name>`` for graph inputs,
        None for outputs), ``name`` (the op node's name), ``classes`` (of the box),
        ``kind`` ("node" / "input" / "output" / "other"), ``header`` (the first header
        text, i.e. the op type's last segment or the value name), ``title`` (its tooltip),
        ``items`` ([(text, tooltip)] of every header item, e.g. ("ƒ", "Show Function
        Definition")), ``function`` (has the ƒ drill-down item), ``arguments`` (texts of
        the argument rows drawn inside the box, e.g. an initializer on port 1: ``1〈4×3〉``).
        """
        nodes = self._js(_JS_NODES)
        out = []
        for n in nodes:
            classes = n["classes"]
            item_classes = {c for item in n["items"] for c in item["classes"]}
            if "graph-input" in classes or "graph-item-input" in item_classes:
                kind = "input"
            elif "graph-output" in classes or "graph-item-output" in item_classes:
                kind = "output"
            elif "graph-node" in classes:
                kind = "node"
            else:
                kind = "other"
            header = n["items"][0]["text"] if n["items"] else ""
            name = n["id"][len("node-name-") :] if n["id"] and n["id"].startswith("node-name-") else None
            out.append(
                {
                    "id": n["id"],
                    "name": name,
                    "classes": classes,
                    "kind": kind,
                    "header": header,
                    "title": n["items"][0]["title"] if n["items"] else None,
                    "items": [(item["text"], item["title"]) for item in n["items"]],
                    "function": any(item["title"] == FUNCTION_ITEM_TITLE for item in n["items"]),
                    "arguments": n["args"],
                }
            )
        return out

    def edge_labels(self) -> list[str]:
        """The drawn edge labels (``#edge-labels > text.edge-label``), in DOM order."""
        return list(self._js(_JS_EDGES)["labels"])

    def edge_path_count(self) -> int:
        """How many edges are drawn (``#edge-paths > path.edge-path``)."""
        return int(self._js(_JS_EDGES)["paths"])

    # -- readers: sidebar
    def _node_locator(self, node_name: str) -> Any:
        node_id = "node-name-" + node_name
        escaped = node_id.replace("\\", "\\\\").replace('"', '\\"')
        locator = self._root.locator(f'#origin > #nodes > g.node[id="{escaped}"]')
        if locator.count() != 1:
            drawn = [n["name"] for n in self.drawn_nodes() if n["name"]]
            raise NetronDriverError(f"no drawn node box with id {node_id!r}; drawn: {drawn}")
        return locator

    def _close_sidebar(self) -> None:
        if self._js(_JS_SIDEBAR)["open"]:
            # Escape, not the x button: that is an <a href="javascript:void(0)">, and clicking
            # it logs a CSP violation ("Running the JavaScript URL violates ... script-src").
            self.page.keyboard.press("Escape")
            self._wait_sidebar(lambda s: not s["open"], "closing the sidebar")

    def _wait_sidebar(self, cond: Any, what: str, timeout: float = 5.0) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while True:
            sidebar = self._js(_JS_SIDEBAR)
            if cond(sidebar):
                return sidebar  # type: ignore[no-any-return]
            self._check_gates(self._state(), what)
            if time.monotonic() > deadline:
                raise NetronDriverError(f"[sidebar] not as expected within {timeout:.0f}s while {what}: {sidebar}")
            time.sleep(POLL)

    def sidebar(self, *, expand: bool = False) -> dict[str, list[tuple[str, str]]]:
        """The open sidebar as ``{section: [(row name, row value text), ...]}``.

        Rows above the first section are keyed by the sidebar's title (e.g. "Node
        Properties").  A value's visible lines are joined with newlines; the ``+``/``ƒ``
        expander glyphs are not part of the text.  ``expand=True`` clicks every ``+``
        first (so e.g. a companion row's ``type: X`` line is included).
        """
        if expand:
            expanders = self._root.locator("#sidebar-content .sidebar-item-value-expander")
            for i in range(expanders.count()):
                item = expanders.nth(i)
                if (item.text_content() or "").strip() == "+":
                    item.click()
        data = self._js(_JS_SIDEBAR)
        if not data["open"]:
            raise NetronDriverError("[sidebar] no sidebar is open")
        title = data["title"]
        result: dict[str, list[tuple[str, str]]] = {title: []}
        current = title
        for row in data["rows"]:
            if "section" in row:
                current = row["section"]
                result.setdefault(current, [])
            else:
                result[current].append((row["name"], row["value"]))
        if not result[title]:
            del result[title]
        return result

    def sidebar_title(self) -> str:
        return str(self._js(_JS_SIDEBAR)["title"])

    def open_node_properties(self, node_name: str, *, expand: bool = False) -> dict[str, list[tuple[str, str]]]:
        """Click the type header of node ``node_name`` and return its Node Properties sidebar."""
        node = self._node_locator(node_name)
        self._close_sidebar()
        node.locator(":scope > g.node-item-type").first.click()
        self._wait_sidebar(lambda s: s["open"] and s["title"] == "Node Properties", f"opening node {node_name!r}")
        return self.sidebar(expand=expand)

    def open_model_properties(self, *, expand: bool = False) -> dict[str, list[tuple[str, str]]]:
        """Click ``#sidebar-model-button`` and return the Model Properties sidebar."""
        self._close_sidebar()
        self._root.locator("#sidebar-model-button").click()
        self._wait_sidebar(lambda s: s["open"] and s["title"] == "Model Properties", "opening Model Properties")
        return self.sidebar(expand=expand)

    def open_connection_properties(self, value_name: str, *, expand: bool = False) -> dict[str, list[tuple[str, str]]]:
        """Click the drawn edge of value ``value_name`` (``#edge-paths > path#edge-<name>``)
        where a person would, on its stroke, and return the Connection Properties sidebar.

        Netron listens on the invisible hit-test path built beside each edge path (same
        order in ``#edge-paths-hit-test``); the mouse clicks a point of that stroke (its
        middle, else a third or two thirds along), whatever is drawn there on top.
        """
        index = self._js(
            "((id) => Array.from(document.querySelectorAll('#edge-paths > path.edge-path'))"
            ".findIndex((e) => e.getAttribute('id') === id))(" + json.dumps("edge-" + value_name) + ")"
        )
        if index is None or int(index) < 0:
            raise NetronDriverError(f"no drawn edge with id {'edge-' + value_name!r}")
        hit = self._root.locator("#edge-paths-hit-test > path").nth(int(index))
        self._close_sidebar()
        hit.scroll_into_view_if_needed()
        frame_x = frame_y = 0.0
        if self._frame:
            box = self._top_js(
                f"(() => {{ const r = "
                f"document.querySelector({json.dumps(self._frame)}).getBoundingClientRect(); return [r.left, "
                f"r.top]; }})()"
            )
            frame_x, frame_y = float(box[0]), float(box[1])
        for share in (0.5, 1 / 3, 2 / 3):
            point = self._js(
                "((i, share) => {"
                " const path = document.querySelectorAll('#edge-paths-hit-test > path')[i];"
                " const p = path.getPointAtLength(path.getTotalLength() * share); const m = path.getScreenCTM();"
                " return [m.a * p.x + m.c * p.y + m.e, m.b * p.x + m.d * p.y + m.f];"
                f"}})({int(index)}, {share})"
            )
            self.page.mouse.click(frame_x + float(point[0]), frame_y + float(point[1]))
            try:
                self._wait_sidebar(
                    lambda s: s["open"] and s["title"] == "Connection Properties",
                    f"opening edge {value_name!r}",
                    timeout=2.0,
                )
            except NetronDriverError:
                continue
            return self.sidebar(expand=expand)
        raise NetronDriverError(f"clicking edge {value_name!r} opened no Connection Properties")

    # -- drill-down
    def drill_into(self, node_name: str, *, timeout: float | None = None) -> float:
        """Click the ƒ "Show Function Definition" item of call node ``node_name``; wait for the new canvas."""
        node = self._node_locator(node_name)
        items = node.locator(":scope > g.node-item")
        index = None
        for i in range(items.count()):
            if items.nth(i).locator(":scope > title").text_content() == FUNCTION_ITEM_TITLE:
                index = i
                break
        if index is None:
            raise NetronDriverError(f"node {node_name!r} has no {FUNCTION_ITEM_TITLE!r} item (not a function call)")
        self._close_sidebar()
        self._js(_JS_ARM)
        t0 = time.monotonic()
        items.nth(index).click()
        self._wait(f"drilling into {node_name!r}", self._drawn, timeout)
        self.render_seconds = time.monotonic() - t0
        return self.render_seconds

    def breadcrumb(self) -> list[str]:
        """Texts of ``#toolbar-path .toolbar-path-name-button`` (outermost first; empty at top level)."""
        buttons = self._root.locator("#toolbar-path .toolbar-path-name-button")
        return [(buttons.nth(i).text_content() or "").replace("\u00a0", " ") for i in range(buttons.count())]

    def go_up(self, *, timeout: float | None = None) -> float:
        """Click the breadcrumb back button and wait for the enclosing graph's new canvas."""
        if not self.breadcrumb():
            raise NetronDriverError("already at the top level (no breadcrumb)")
        self._close_sidebar()
        self._js(_JS_ARM)
        t0 = time.monotonic()
        self._root.locator("#toolbar-path-back-button").click()
        self._wait("going up", self._drawn, timeout)
        self.render_seconds = time.monotonic() - t0
        return self.render_seconds

    # -- misc
    def screenshot(self, path: str | os.PathLike[str], clip: dict[str, float] | None = None) -> Path:
        """Save a PNG of the viewport (or ``clip={"x","y","width","height"}``)."""
        out = Path(path)
        if clip is None:
            self.page.screenshot(path=str(out))
        else:
            self.page.screenshot(path=str(out), clip=clip)  # type: ignore[arg-type]
        return out


@contextmanager
def netron_page(**browser_kwargs: Any) -> Iterator[NetronPage]:
    """One-off convenience: a browser and a page, both closed on exit."""
    with NetronBrowser(**browser_kwargs) as browser, browser.new_page() as page:
        yield page

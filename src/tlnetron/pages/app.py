"""The installed Netron web app, read for a page: its modules (their relative imports made
bare, for the page's import map), its layout worker and the modules it imports, and the build
date its age gate counts from."""

from __future__ import annotations

import base64
import datetime as _dt
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .._generated.vocab import ErrorCode
from ..errors import TlnetronError

__all__ = [
    "AGE_GATE_DAYS",
    "APP_MODULES",
    "ASSETS",
    "WORKER",
    "WORKER_MODULES",
    "App",
    "app_unavailable",
    "data_url",
    "js_url",
    "netron_age_gate",
    "netron_dir",
    "read_app",
    "require_netron",
]

AGE_GATE_DAYS = 180
"""Netron's web app refuses to start this many days after its build date."""

APP_MODULES: tuple[str, ...] = (
    "view",
    "browser",
    "base",
    "grapher",
    "text",
    "json",
    "protobuf",
    "flatbuffers",
    "zip",
    "tar",
    "onnx",
    "onnx-proto",
)
"""Netron's modules the page holds: the app (view, browser and what they import), what it
imports to start (zip) and to open an ``*.onnx.json`` file (json, flatbuffers: Netron
peeks at every file as JSON and as a flatbuffer; onnx, protobuf, onnx-proto), and what it
imports to say why a file it cannot read is unsupported (zip, tar). Every other format's
reader is left out (the app imports some ahead of need, and ignores their absence)."""

WORKER = "worker"
"""The layout worker, which imports :data:`WORKER_MODULES`."""
WORKER_MODULES: tuple[str, ...] = ("dagre",)

ASSETS: tuple[str, ...] = ("onnx-metadata.json",)
"""Netron's data files the page holds (the ONNX operators' documentation and categories)."""

_SPECIFIER = re.compile(r"""(\bfrom\s*|\bimport\s*\(\s*|\bimport\s+)'\./([A-Za-z0-9_-]+)\.js'""")
_ANY_RELATIVE = re.compile(r"""(\bfrom\s*|\bimport\s*\(\s*|\bimport\s+)['"`]\.{1,2}/""")
_STATIC_IMPORT = re.compile(r"""^\s*(?:import|export)\b[^;'"]*?\bfrom\s*'([A-Za-z0-9_-]+)\.js'""", re.MULTILINE)
_META_DATE = re.compile(r'<meta name="date" content="(\d{4}-\d{2}-\d{2})(?: (\d{2}:\d{2}:\d{2}))?">')
_META_VERSION = re.compile(r'<meta name="version" content="([^"]*)">')

_PAGE_REMEDY = "pip install 'tlnetron[netron]' (netron 9.3 or later, before 10)."


@dataclass(frozen=True, slots=True)
class App:
    """What a page takes from the installed Netron web app.

    Attributes:
        folder: the netron package's web app folder.
        index: its index.html.
        version: its version (index.html's ``<meta name="version">``).
        built: its build date (UTC, ``<meta name="date">``).
        expires: when its age gate starts refusing to show anything (UTC).
        modules: each of :data:`APP_MODULES`'s source, relative imports made bare.
        worker: the layout worker's source, as it is.
        worker_imports: each module the worker imports (``./dagre.js``) as a ``data:`` URL.
    """

    folder: Path
    index: str
    version: str
    built: _dt.datetime
    expires: _dt.datetime
    modules: dict[str, str]
    worker: str
    worker_imports: dict[str, str]

    def file(self, name: str) -> str:
        """One of the app's text files (CRLF line ends read as LF)."""
        return _read_file(self.folder, name)


def read_app() -> App:
    """Read the installed web app, refusing one tlnetron cannot put in a page.

    Raises:
        TlnetronError: ``netron_serve_unavailable``.
    """
    folder = _app_folder()
    index = _read_file(folder, "index.html")
    version, built = _app_date(index)
    expires = built + _dt.timedelta(days=AGE_GATE_DAYS)

    modules = {name: _bare_specifiers(f"{name}.js", _read_file(folder, f"{name}.js")) for name in APP_MODULES}
    for name, text in modules.items():
        for needed in _STATIC_IMPORT.findall(text):
            if needed not in modules:
                raise app_unavailable(
                    f"the installed netron's {name}.js imports {needed}.js, which tlnetron does not put in the page."
                )
    worker = _read_file(folder, f"{WORKER}.js")
    worker_imports = {f"./{name}.js": js_url(_read_file(folder, f"{name}.js")) for name in WORKER_MODULES}
    probe = worker
    for specifier in worker_imports:
        if f"import('{specifier}')" not in worker:
            raise app_unavailable(
                f"the installed netron's {WORKER}.js does not import {specifier} as tlnetron expects."
            )
        probe = probe.replace(f"import('{specifier}')", "import(url)")
    _bare_specifiers(f"{WORKER}.js", probe)  # refuses a relative import the loader would not replace
    return App(folder, index, version, built, expires, modules, worker, worker_imports)


def app_unavailable(message: str) -> TlnetronError:
    return TlnetronError(
        ErrorCode.NETRON_SERVE_UNAVAILABLE,
        message,
        where="netron",
        remedy=_PAGE_REMEDY,
    )


def _app_folder() -> Path:
    return netron_dir(
        "the page holds Netron's web app, from the netron package, which is not installed.",
        where="netron",
        remedy=_PAGE_REMEDY,
    )


def _read_file(folder: Path, name: str) -> str:
    try:
        return (folder / name).read_text(encoding="utf-8").replace("\r\n", "\n")
    except (OSError, UnicodeDecodeError) as exc:
        raise app_unavailable(f"the installed netron has no readable {name} in {folder} ({exc}).") from None


def _bare_specifiers(name: str, text: str) -> str:
    """``'./NAME.js'`` module specifiers -> ``'NAME.js'`` (resolved by the import map)."""
    text = _SPECIFIER.sub(lambda m: f"{m.group(1)}'{m.group(2)}.js'", text)
    left = _ANY_RELATIVE.search(text)
    if left is not None:
        line = text.count("\n", 0, left.start()) + 1
        raise app_unavailable(
            f"the installed netron's {name} imports a module in a way tlnetron cannot put in a page (line {line})."
        )
    return text


def data_url(mime: str, data: bytes) -> str:
    return f"data:{mime};base64,{base64.b64encode(data).decode('ascii')}"


def js_url(text: str) -> str:
    return data_url("text/javascript", text.encode("utf-8"))


def _app_date(index: str) -> tuple[str, _dt.datetime]:
    version = _META_VERSION.search(index)
    date = _META_DATE.search(index)
    if version is None or date is None:
        raise app_unavailable('the installed netron\'s index.html has no <meta name="version"> or <meta name="date">.')
    built = _dt.datetime.fromisoformat(f"{date.group(1)}T{date.group(2) or '00:00:00'}").replace(
        tzinfo=_dt.timezone.utc
    )
    return version.group(1), built


_SERVE_NEEDS = "serving needs the netron package, which is not installed (the file export does not need it)."
_SERVE_REMEDY = "pip install 'tlnetron[netron]', or open the written file at netron.app / in the Netron desktop app."


def require_netron(message: str = _SERVE_NEEDS, *, where: str = "serve", remedy: str = _SERVE_REMEDY) -> Any:
    """Import the ``netron`` package or refuse with ``netron_serve_unavailable`` (``message``
    says what needed it, in the words of the surface that asked)."""
    try:
        import netron
    except ImportError:
        raise TlnetronError(ErrorCode.NETRON_SERVE_UNAVAILABLE, message, where=where, remedy=remedy) from None
    return netron


def netron_dir(message: str = _SERVE_NEEDS, *, where: str = "serve", remedy: str = _SERVE_REMEDY) -> Path:
    """The folder of Netron's web app, or the refusal of :func:`require_netron`."""
    return Path(require_netron(message, where=where, remedy=remedy).__file__).resolve().parent


def netron_age_gate(today: _dt.date | None = None) -> str | None:
    """Netron's web app refuses to start 180 days after its build date: say so, or None."""
    index = (netron_dir() / "index.html").read_text(encoding="utf-8")
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

"""A page: one self-contained HTML file that shows the artifact (and companion) in Netron.

The page holds Netron's own web app, from the installed ``netron`` package (only the
modules its ONNX JSON reader and its layout need), the artifact and the companion. Opened
from ``file://`` with no server and no network, it draws the model and then loads the
companion, as ``tlnetron serve`` does, and asks no host for anything: its
Content-Security-Policy allows its own four inline scripts (by hash), scripts, the worker
and images from ``data:`` URLs (and images from ``blob:``), and no connection at all, so
Netron's location lookup and analytics beacons are refused inside the browser.

What the page changes in Netron's files, exactly (anything else is byte-for-byte Netron's):

* ``index.html``: its Content-Security-Policy ``<meta>`` is replaced by the page's own; its
  ``<title>`` names the model; ``<link href="grapher.css">`` becomes a ``<style>`` holding
  grapher.css (and one styling the note); its five icon ``<link>`` tags become one holding
  icon.png as a ``data:`` URL; ``<script src="index.js">`` becomes the import map, index.js
  itself (inline, unmodified), the heat map (``heatmap.js``, ours), the page's data and the
  loader (``html_loader.js``, ours); and a small note is added at the start of ``<body>``: when
  Netron's age gate will stop the page, and how to regenerate it. The
  ``<meta name="date">`` the age gate reads is kept as it is.
* every included module: each relative module specifier in an ``import ... from`` or an
  ``import(...)``, ``'./NAME.js'``, becomes the bare ``'NAME.js'``, which the page's import
  map resolves to the module's ``data:`` URL (a browser refuses module files beside a
  ``file://`` page, and a relative specifier cannot be resolved from a ``data:`` URL).
* ``worker.js`` (the layout worker; workers have no import map): ``import('./dagre.js')``
  becomes an import of dagre.js's ``data:`` URL. The page holds worker.js as it is and
  dagre.js once; the loader makes this one replacement when it starts the worker.

The loader also runs index.js's start with two of Netron's own seams filled in (no Netron
file is changed for them): ``window.exports.preload`` imports ``browser.js`` and ``view.js``
through the import map, and the app's host is Netron's ``browser.Host`` with three methods
that find files in the page (``require``: a module, and for a format's reader the page does
not hold, one that matches no file; ``worker``: the layout worker; ``asset``:
``onnx-metadata.json``, stored gzip-compressed).

Netron's web app refuses to start :data:`~tlnetron.pages.app.AGE_GATE_DAYS` days after the
date in its index.html, with "Please update to the newest version": so does the page. The
page says when, in its title and in a note, and how to regenerate it with a newer netron
(``tlnetron html ARTIFACT --attachment COMPANION -o PAGE``).
"""

from __future__ import annotations

import base64
import datetime as _dt
import gzip
import hashlib
import html
import json
import os
import re
import shlex
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import orjson

from .._generated.vocab import COMPANION_SIGNATURE, ErrorCode, WarningCode
from ..errors import TlnetronError, warn
from ..read.files import check_page_fits, companion_object, read_input
from .app import APP_MODULES, ASSETS, App, app_unavailable, data_url, js_url, read_app

__all__ = [
    "APP_MODULES",
    "ASSETS",
    "PAGE_POLICY",
    "Page",
    "build_page",
    "page_from_files",
    "warn_if_expired",
    "write_page",
]

PAGE_POLICY_DIRECTIVES: tuple[str, ...] = (
    "default-src 'none'",
    "script-src {hashes} data:",  # the import map, index.js, the loader; modules are data: URLs
    "worker-src data:",  # the layout worker
    "connect-src 'none'",  # no fetch, XHR or beacon: ipinfo.io and analytics stay unsent
    "style-src 'unsafe-inline'",  # index.html's <style>, grapher.css, Netron's style attributes
    "img-src data: blob:",
    "object-src 'none'",
    "base-uri 'none'",
    "form-action 'none'",
)
PAGE_POLICY = "; ".join(PAGE_POLICY_DIRECTIVES)
"""The page's Content-Security-Policy (``{hashes}``: the sha256 of its four inline scripts)."""


@dataclass(frozen=True, slots=True)
class Page:
    """A built page.

    Attributes:
        html: the page's bytes (UTF-8).
        netron_version: the version of the Netron web app inside.
        built: the build date of that app (UTC), from its index.html.
        expires: when the app's age gate starts refusing to show anything (UTC).
    """

    html: bytes
    netron_version: str
    built: _dt.datetime
    expires: _dt.datetime

    def expired(self, now: _dt.datetime | None = None) -> bool:
        """Whether the app's age gate stops the page at ``now`` (default: now)."""
        return (now or _dt.datetime.now(_dt.timezone.utc)) > self.expires


def _gzip64(data: bytes) -> str:
    return base64.b64encode(gzip.compress(data, compresslevel=9, mtime=0)).decode("ascii")


def _script_safe_json(value: Any) -> str:
    """JSON that cannot end or comment out the ``<script>`` element holding it."""
    text = json.dumps(value, ensure_ascii=True, separators=(",", ":"))
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _sha256(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode("ascii") + "'"


def _inline(text: str, what: str) -> str:
    if re.search(r"</script|<!--", text, re.IGNORECASE):
        raise app_unavailable(f"{what} holds '</script' or '<!--' and cannot be put in a page inline.")
    return text


def _replace_once(text: str, old: str, new: str) -> str:
    if text.count(old) != 1:
        raise app_unavailable(f"the installed netron's index.html does not hold {old!r} once, as tlnetron expects.")
    return text.replace(old, new)


_NOTE_STYLE = (
    # First in <body> and below Netron's own layers: the sidebar and the toolbar cover the note, never the reverse.
    "<style>#tlnetron-note{position:fixed;right:24px;bottom:24px;max-width:min(46em,calc(100vw - 48px));font-size:10px;"
    "color:#777;text-align:right;pointer-events:none;user-select:text}"
    "#tlnetron-note code{font-size:10px;overflow-wrap:anywhere}"
    "#tlnetron-note.tlnetron-expired{font-size:13px;color:#000;background:#fff3c4;padding:8px;"
    "border:1px solid #c9a400;pointer-events:auto;z-index:3}"
    "#tlnetron-note.tlnetron-expired code{font-size:13px}</style>"
)


def _note(version: str, built: _dt.datetime, expires: _dt.datetime, command: str) -> str:
    return (
        '<div id="tlnetron-note">'
        f"This page holds Netron {html.escape(version)} (built {built:%Y-%m-%d}), which shows the model until "
        f"{expires:%Y-%m-%d} and after that only asks to be updated. To regenerate the page with a newer Netron: "
        f"<code>pip install --upgrade netron</code>, then <code>{html.escape(command)}</code>"
        "</div>"
    )


def build_page(
    model: tuple[str, bytes],
    companion: tuple[str, bytes] | None = None,
    *,
    page_name: str = "page.html",
    command: str | None = None,
    colour_by: str = "none",
) -> Page:
    """Build the page: Netron's web app, the artifact and (optionally) the companion in one HTML file.

    Args:
        model: the artifact's file name (ending in ``.json``) and bytes.
        companion: the companion's file name and bytes (a ``netron:attachment`` file), or None.
        page_name: the page's file name, for the regenerate command the page shows.
        command: what the page's note says to run to regenerate it (default: the
            ``tlnetron html`` command for these files and ``page_name``).
        colour_by: the heat map's first colour scheme (``none``: Netron's own colours).

    Returns:
        The page, with the Netron version inside and when its age gate stops it.

    Raises:
        TlnetronError: ``netron_serve_unavailable`` (netron is not installed, or its web
            app is not one tlnetron can put in a page), ``netron_attachment_invalid``,
            ``page_too_large``.
    """
    from .colours import page_colours

    colours = page_colours(colour_by)  # refuses an unknown scheme before anything is built
    check_page_fits((model, companion), "no page was made")
    if companion is not None:
        companion_object(*companion)
    app = read_app()
    names = model[0] + (f" + {companion[0]}" if companion is not None else "")
    title = f"{names} - Netron {app.version} (tlnetron page, works until {app.expires:%Y-%m-%d})"
    if command is None:
        words = [
            "tlnetron",
            "html",
            model[0],
            *(["--attachment", companion[0]] if companion is not None else []),
            "-o",
            page_name,
        ]
        command = " ".join(shlex.quote(word) for word in words)
    scripts, policy = _scripts(app, model, companion, colours)
    note = _note(app.version, app.built, app.expires, command)
    page = _fill_index(app, policy, title, scripts, note, names)
    return Page(page.encode("utf-8"), app.version, app.built, app.expires)


def _scripts(
    app: App, model: tuple[str, bytes], companion: tuple[str, bytes] | None, colours: dict[str, Any]
) -> tuple[str, str]:
    """What takes index.js's ``<script>`` tag (the icon, the import map, index.js, the heat map,
    the page's data and the loader), and the page's Content-Security-Policy."""
    folder = app.folder
    import_map = _inline(
        _script_safe_json({"imports": {f"{name}.js": js_url(text) for name, text in app.modules.items()}}),
        "the import map",
    )
    index_js = _inline(app.file("index.js"), "index.js")
    loader = _inline((resources.files(__package__) / "html_loader.js").read_text(encoding="utf-8"), "html_loader.js")
    heatmap = _inline((resources.files(__package__) / "heatmap.js").read_text(encoding="utf-8"), "heatmap.js")
    assets = {name: _gzip64((folder / name).read_bytes()) for name in ASSETS}
    files: dict[str, Any] = {
        "model": {"name": model[0], "gzip": _gzip64(model[1])},
        "companion": {"name": companion[0], "gzip": _gzip64(companion[1])} if companion is not None else None,
        "assets": assets,
        "modules": [f"{name}.js" for name in app.modules],
        "worker": {"source": app.worker, "imports": app.worker_imports},
        "expires": int(app.expires.timestamp() * 1000),
        **colours,
    }
    policy = PAGE_POLICY.format(hashes=" ".join(_sha256(s) for s in (import_map, index_js, heatmap, loader)))
    icon = data_url("image/png", (folder / "icon.png").read_bytes())
    scripts = (
        f'<link rel="icon" type="image/png" href="{icon}">\n'
        f'<script type="importmap">{import_map}</script>\n'
        f"<script>{index_js}</script>\n"
        f"<script>{heatmap}</script>\n"
        f'<script type="application/json" id="tlnetron-data">{_script_safe_json(files)}</script>\n'
        f"<script>{loader}</script>"
    )
    return scripts, policy


def _fill_index(app: App, policy: str, title: str, scripts: str, note: str, names: str) -> str:
    """index.html with the page's policy, title, styles, scripts and note put in."""
    page = app.index
    page = _replace_once(
        page,
        "<meta http-equiv=\"Content-Security-Policy\" content=\"script-src 'self'; frame-src 'none'\">",
        f'<meta http-equiv="Content-Security-Policy" content="{html.escape(policy)}">',
    )
    page = _replace_once(page, "<title>Netron</title>", f"<title>{html.escape(title)}</title>")
    page = _replace_once(
        page,
        '<link rel="stylesheet" type="text/css" href="grapher.css">',
        f"<style>\n{app.file('grapher.css')}</style>\n{_NOTE_STYLE}",
    )
    icons = re.findall(r'<link rel="[a-z -]*icon[a-z-]*" type="image/[a-z-]+" href="[a-z.]+">\n', page)
    if len(icons) != 5:
        raise app_unavailable("the installed netron's index.html does not link its icons as tlnetron expects.")
    for link in icons:
        page = page.replace(link, "")
    page = _replace_once(page, '<script type="text/javascript" src="index.js"></script>', scripts)
    page = _replace_once(page, '<body class="welcome spinner">', '<body class="welcome spinner">\n' + note)
    head = (
        f"<!-- tlnetron page: {html.escape(names)} in Netron {html.escape(app.version)}'s web app "
        "(Copyright (c) Lutz Roeder, MIT License, github.com/lutzroeder/netron), "
        f"packed by tlnetron html; the app refuses to start after {app.expires:%Y-%m-%d}. -->\n"
    )
    return _replace_once(page, "<!DOCTYPE html>\n", "<!DOCTYPE html>\n" + head)


def _check_model(name: str, data: bytes, outcome: str) -> None:
    try:
        obj = orjson.loads(data)
    except orjson.JSONDecodeError:
        obj = None
    if isinstance(obj, dict) and obj.get("signature") == COMPANION_SIGNATURE:
        why = "is a netron:attachment companion, not a model"
    elif not name.lower().endswith(".json"):
        why = "does not end in .json (Netron opens tlnetron's artifacts by that name)"
    elif not isinstance(obj, dict) or not any(k in obj for k in ("irVersion", "producerName", "opsetImport", "graph")):
        why = "is not an ONNX JSON artifact"
    else:
        return
    raise TlnetronError(
        ErrorCode.INVALID_PATH,
        f"{name!r} {why}; {outcome}.",
        where=name,
        remedy="pass the artifact written by tlnetron export (model.onnx.json), and its companion as the attachment.",
    )


def _check_output(output: Path) -> None:
    if output.suffix.lower() not in (".html", ".htm"):
        raise TlnetronError(
            ErrorCode.INVALID_PATH,
            f"-o {str(output)!r} does not end in .html (a browser opens the page by that name); nothing was written.",
            where=str(output),
            remedy="pass -o with a name ending in .html, e.g. -o model.html.",
        )
    if output.is_dir():
        raise TlnetronError(
            ErrorCode.INVALID_PATH,
            f"-o {str(output)!r} is a folder; nothing was written.",
            where=str(output),
            remedy="pass -o with the page's file name, e.g. -o model.html.",
        )
    folder = output.parent
    if not folder.is_dir() or not os.access(folder, os.W_OK | os.X_OK):
        what = (
            "does not exist"
            if not os.path.lexists(folder)
            else "is not a folder"
            if not folder.is_dir()
            else "is not writable"
        )
        raise TlnetronError(
            ErrorCode.DESTINATION_UNWRITABLE,
            f"cannot write {str(output)!r}: the folder {str(folder)!r} {what}; nothing was written.",
            where=str(folder),
            remedy="pass -o with a path in a folder you can write to.",
        )


def page_from_files(
    artifact: Path,
    companion: Path | None,
    *,
    page_name: str = "page.html",
    attachment_flag: str = "--attachment",
    outcome: str = "nothing was written",
    command: str | None = None,
    colour_by: str = "none",
) -> Page:
    """Build the page from the files ``tlnetron export`` wrote (see :func:`build_page`).

    ``attachment_flag`` and ``outcome`` word a refusal for its reader (the command line's
    ``--attachment``, Python's ``attachment=``).

    Raises:
        TlnetronError: ``invalid_path`` (a file cannot be read, or the artifact is not
            one), ``netron_attachment_invalid``, ``companion_mismatch`` (a companion of
            another export), ``netron_serve_unavailable``.
    """
    from ..options import check_os_limits
    from ..write.pair import read_pair

    for path, flag in (
        (artifact, "artifact"),
        *(((companion, attachment_flag.strip("-=")),) if companion is not None else ()),
    ):
        check_os_limits(path, flag)
    if companion is None:
        data, cdata = read_input(artifact, "", outcome), None
    else:
        data, cdata = read_pair(
            artifact, companion, lambda p: read_input(p, "" if p == artifact else attachment_flag, outcome)
        )
    _check_model(artifact.name, data, outcome)
    pair = (companion.name, cdata) if companion is not None and cdata is not None else None
    if pair is not None:
        from ..check.pairs import mismatched_pair

        refusal = mismatched_pair(
            (artifact.name, data),
            (pair[0], companion_object(*pair)),
            f"leave out {attachment_flag} for the model alone",
        )
        if refusal is not None:
            raise refusal
    return build_page((artifact.name, data), pair, page_name=page_name, command=command, colour_by=colour_by)


def write_page(artifact: Path, companion: Path | None, output: Path, colour_by: str = "none") -> Page:
    """Write the page for ``artifact`` (and ``companion``) to ``output``, atomically.

    The page is written to a temporary sibling, synced, and put in place with
    ``os.replace``: ``output`` is either as it was or the whole new page.

    Raises:
        TlnetronError: ``invalid_path``, ``destination_unwritable``,
            ``netron_attachment_invalid``, ``netron_serve_unavailable``.
    """
    from ..options import check_os_limits

    for path, flag in (
        (output, "output"),
        (artifact, "artifact"),
        *(((companion, "attachment"),) if companion is not None else ()),
    ):
        check_os_limits(path, flag)
    from ..write.pair import staged_files
    from .colours import check_colour

    check_colour(colour_by)
    _check_output(output)
    page = page_from_files(artifact, companion, page_name=output.name, colour_by=colour_by)
    warn_if_expired(
        page, "the page will only ask to be updated. Remedy: pip install --upgrade netron, and write the page again."
    )
    with staged_files([output]) as files:
        files.stage(output, page.html)
        files.commit()
    return page


def warn_if_expired(page: Page, then: str) -> None:
    """Warn (``netron_app_expired``) when the page's app no longer starts; ``then``: what the
    reader meets instead, and the remedy, in the words of the surface that made the page."""
    if page.expired():
        warn(
            WarningCode.NETRON_APP_EXPIRED,
            f"the installed Netron web app (netron {page.netron_version}, built {page.built:%Y-%m-%d}) "
            f"stopped starting on {page.expires:%Y-%m-%d}: {then}",
        )

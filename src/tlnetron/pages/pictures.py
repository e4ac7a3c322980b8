"""A picture: Netron's own File > Export (SVG or PNG) of the served page, from headless Chromium.

The artifact (and companion) are served by :mod:`tlnetron.pages.serve` on 127.0.0.1; a headless
Chromium (Debian's ``/usr/bin/chromium``, driven by Playwright, the ``[render]`` extra)
opens the page, optionally drills into one function, and presses Netron's own export
accelerator (Ctrl+Alt+E: SVG, Ctrl+Shift+E: PNG, ``view.View.export``); the file Netron
hands the browser as a download is the picture. Nothing leaves loopback: every other
request is aborted, and the throwaway profile is deleted.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import urllib.parse
from pathlib import Path
from typing import Any

from .._generated.vocab import ErrorCode
from ..errors import TlnetronError

__all__ = ["CHROMIUM", "render"]

CHROMIUM = "/usr/bin/chromium"
_KEYS = {".svg": "Control+Alt+E", ".png": "Control+Shift+E"}


def _unavailable(message: str) -> TlnetronError:
    return TlnetronError(
        ErrorCode.RENDER_UNAVAILABLE,
        message,
        where="render",
        remedy="pip install 'tlnetron[render]' (Playwright) and apt-get install -y chromium "
        "(or pass chromium= the path of a Chromium).",
    )


FUNCTION_ITEM = "Show Function Definition"
"""The title of the item Netron 9.3 draws on a call node to open the function's body."""


def _function_path(model: dict[str, Any], name: str) -> list[str]:
    """The call-node names to drill through, from the root, to reach function ``name``."""
    # A function is (domain, name, overload): blocks of one class with different bodies share the name.
    functions = {(f.get("domain", ""), f["name"], f.get("overload", "")): f for f in model.get("functions", [])}
    if name not in {f[1] for f in functions}:
        raise TlnetronError(
            ErrorCode.INVALID_OPTION,
            f"the artifact has no function {name!r}; nothing was written.",
            where="function",
            remedy="pass the name of one of its functions (Netron's breadcrumb shows them).",
        )
    todo: list[tuple[list[dict[str, Any]], list[str]]] = [(model.get("graph", {}).get("node", []), [])]
    seen: set[tuple[str, str, str]] = set()
    while todo:
        nodes, path = todo.pop(0)
        for node in nodes:
            called = (node.get("domain", ""), node.get("opType", ""), node.get("overload", ""))
            if called not in functions:
                continue
            if called[1] == name:
                return [*path, node["name"]]
            if called not in seen:
                seen.add(called)
                todo.append((functions[called].get("node", []), [*path, node["name"]]))
    raise TlnetronError(
        ErrorCode.INVALID_OPTION,
        f"no drawn node calls function {name!r}; nothing was written.",
        where="function",
        remedy="pass a function a node of the model calls.",
    )


def _until(test: Any, timeout: float, what: str) -> None:
    import time

    deadline = time.monotonic() + timeout
    while not test():
        if time.monotonic() > deadline:
            raise TlnetronError(
                ErrorCode.RENDER_UNAVAILABLE,
                f"the browser did not show {what} within {timeout:.0f} s.",
                where="render",
                remedy="pass a larger timeout=, or open the page with tlnetron serve to see why.",
            )
        time.sleep(0.05)


def _read_artifact(source: Path) -> Any:
    import json

    try:
        return json.loads(source.read_bytes())
    except (OSError, ValueError) as exc:
        raise TlnetronError(
            ErrorCode.INVALID_PATH,
            f"cannot read {str(source)!r} as an artifact ({exc}).",
            where=str(source),
            remedy="pass the path of an artifact written by tlnetron export.",
        ) from None


def render(
    artifact: str | os.PathLike[str],
    output: str | os.PathLike[str],
    *,
    attachment: str | os.PathLike[str] | None = None,
    colour_by: str = "none",
    function: str | None = None,
    chromium: str = CHROMIUM,
    timeout: float = 120.0,
) -> Path:
    """Write the picture Netron draws of ``artifact`` (its own export) to ``output`` (.svg or .png).

    Args:
        artifact: an artifact tlnetron export wrote.
        output: the picture's path, ending in ``.svg`` or ``.png``.
        attachment: its companion (needed to colour by a companion metric).
        colour_by: the heat map's colour scheme (``none``: Netron's own colours).
        function: draw this function's body (drilled into as a person would) instead of the root.
        chromium: the Chromium to drive.
        timeout: seconds to wait for Netron to draw.

    Returns:
        The path written.

    Raises:
        TlnetronError: ``invalid_path`` (not .svg/.png, unreadable input), ``invalid_colour_scheme``,
            ``invalid_option`` (an unknown function), ``render_unavailable`` (no Playwright or
            Chromium), ``netron_serve_unavailable``, ``companion_mismatch``.
    """
    from .colours import check_colour
    from .serve import serve_files

    out = Path(output)
    key = _KEYS.get(out.suffix.lower())
    if key is None:
        raise TlnetronError(
            ErrorCode.INVALID_PATH,
            f"-o {str(out)!r} is neither .svg nor .png; nothing was written.",
            where=str(out),
            remedy="pass -o model.svg or -o model.png.",
        )
    check_colour(colour_by)
    source = Path(artifact)
    model = _read_artifact(source)
    drill = _function_path(model, function) if function else []
    sync_playwright, PlaywrightError = _playwright(chromium)
    result = serve_files(source, Path(attachment) if attachment else None, browse=False)
    profile = tempfile.mkdtemp(prefix="tlnetron-render-")
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(
                executable_path=chromium,
                headless=True,
                args=["--no-sandbox", "--disable-gpu", "--disable-background-networking"],
            )
            try:
                page = _loopback_context(browser, result.url).new_page()
                page.set_default_timeout(timeout * 1000)
                # picture=1: the heat map draws its legend into the graph, where the export takes it.
                page.goto(result.url + f"?colour={colour_by}" + ("&picture=1" if colour_by != "none" else ""))
                _wait_for_drawing(page, attachment is not None, drill, colour_by, timeout)
                frame = page.frame_locator("#netron")
                frame.locator("body").focus()
                with page.expect_download() as download:
                    frame.locator("#canvas").press(key)
                staged = out.with_name(f".{out.name}.tmp")
                download.value.save_as(str(staged))
                os.replace(staged, out)
            finally:
                browser.close()
    except PlaywrightError as exc:
        # The browser failed us: a typed refusal, never a traceback.
        raise _unavailable(f"the headless browser failed ({str(exc).splitlines()[0]}); nothing was written.") from None
    finally:
        result.server.stop()
        shutil.rmtree(profile, ignore_errors=True)
    return out


def _playwright(chromium: str) -> tuple[Any, type[Exception]]:
    """Playwright's entry point and error class, once it and ``chromium`` are known to be there."""
    try:
        from playwright.sync_api import Error as PlaywrightError
        from playwright.sync_api import sync_playwright
    except ImportError:
        raise _unavailable("rendering drives a headless Chromium with Playwright, which is not installed.") from None
    if not os.path.exists(chromium):
        raise _unavailable(f"no Chromium at {chromium}.")
    return sync_playwright, PlaywrightError


def _loopback_context(browser: Any, url: str) -> Any:
    """A fresh browser context that downloads, reaches only loopback, and has said yes to
    Netron's notice (the cookie opts nothing in: the page refuses analytics anyway)."""
    context = browser.new_context(viewport={"width": 1280, "height": 800}, accept_downloads=True)
    # The page's own policy already keeps it on loopback; this also stops any other request.
    context.route(
        "**/*",
        lambda route: (
            route.continue_()
            if urllib.parse.urlsplit(route.request.url).hostname in ("127.0.0.1", None)
            else route.abort()
        ),
    )
    context.add_cookies([{"name": "consent", "value": "1", "url": url}])
    return context


def _wait_for_drawing(page: Any, with_companion: bool, drill: list[str], colour_by: str, timeout: float) -> None:
    """Wait until Netron has drawn the model (drilled into ``drill``'s functions, as a person
    clicks), finished its layout and, with a scheme, the heat map has coloured it."""
    # The page's policy refuses string evaluation: wait by reading the title and the frame's DOM.
    done = " + companion" if with_companion else " + model"
    _until(lambda: page.title().endswith(done), timeout, "Netron to draw the model")
    frame = page.frame_locator("#netron")
    for name in drill:
        node = frame.locator(f'#nodes > g.node[id="node-name-{name}"]')
        # Netron's ƒ item is the one titled FUNCTION_ITEM; a real click: dispatch_event evaluates
        # in the app's world, whose eval Netron replaced.
        node.locator(":scope > g.node-item").filter(has_text=FUNCTION_ITEM).first.click()
        _until(
            lambda: node.count() == 0 and frame.locator("#nodes > g.node").count() > 0,
            timeout,
            f"Netron to draw the body of {name}",
        )
    _until(
        lambda: (
            frame.locator("#nodes > g.node[style*='opacity']").count() == 0
            and frame.locator("body.default").count() == 1
        ),
        timeout,
        "Netron to finish its layout",
    )
    _until(
        lambda: (
            colour_by == "none"
            or (
                frame.locator("#nodes > g.node[data-tlnetron-colour]").count() > 0
                and frame.locator("#tlnetron-picture-legend").count() == 1
            )
        ),
        timeout,
        "the heat map",
    )

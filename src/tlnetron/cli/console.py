"""What the command prints: stderr lines (never failing on odd text), the progress bar, results."""

from __future__ import annotations

import signal
import sys
import threading
import time
from pathlib import Path
from types import TracebackType
from typing import Any


EXIT_OK = 0
EXIT_INVALID = 1
EXIT_USAGE = 2
EXIT_REFUSED = 3
EXIT_PIPE_CLOSED = 128 + signal.SIGPIPE
EXIT_CRASH = 4


def printable(text: str) -> str:
    """``text`` with what UTF-8 cannot encode (lone surrogates a file can hold) escaped, so printing never fails."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


class Stderr:
    """Lines on stderr, and the one progress line redrawn in place beneath them."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._bar_open = False

    def line(self, text: str) -> None:
        """Write a line (ending the progress line first, when one is drawn)."""
        with self._lock:
            stream = sys.stderr
            if self._bar_open:
                stream.write("\n")
                self._bar_open = False
            stream.write(printable(text) + "\n")
            stream.flush()

    def bar(self, text: str, *, final: bool) -> None:
        """(Re)draw the progress line; ``final`` ends it."""
        with self._lock:
            stream = sys.stderr
            stream.write("\r" + text + ("\n" if final else ""))
            stream.flush()
            self._bar_open = not final

    def end_bar(self) -> None:
        """End a progress line left open (a refusal or an error stopped the work)."""
        with self._lock:
            if self._bar_open:
                sys.stderr.write("\n")
                sys.stderr.flush()
                self._bar_open = False


ERR = Stderr()


class Bar:
    """A progress bar on stderr (only when stderr is a terminal or forced): the share of the
    export done, the stage it is in and the time since the command started.

    The command's own steps come first (``import``: torch, torchlens and onnx; ``load``
    or ``trace``), at 0%, then the export's stages (``read`` ... ``done``). While a step
    takes long (an import, a load, the ONNX check) the clock keeps running: the bar is
    redrawn every :attr:`tick` seconds, and otherwise only when the stage changes or it
    grows by a character.
    """

    width = 24
    tick = 0.2

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self.t0 = time.perf_counter()
        self._state: tuple[str, int, int] = ("", 0, 1)
        self._drawn: tuple[str, int] | None = None
        self._finished = False
        self._lock = threading.Lock()  # the ticker and the work both draw
        self._stop = threading.Event()
        self._ticker: threading.Thread | None = None

    def __enter__(self) -> Bar:
        if self.enabled:
            self._ticker = threading.Thread(target=self._tick, name="tlnetron-progress", daemon=True)
            self._ticker.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self._stop.set()
        if self._ticker is not None:
            self._ticker.join()
        if self.enabled:
            ERR.end_bar()

    def stage(self, name: str) -> None:
        """A step of the command before the export starts (the export is 0% done)."""
        self(name, 0, 1)

    def __call__(self, stage: str, done: int, total: int) -> None:
        if not self.enabled:
            return
        self._state = (stage, done, max(total, 1))
        filled = self.width * done // max(total, 1)
        if (stage, filled) != self._drawn:
            self._drawn = (stage, filled)
            self._draw()

    def _draw(self) -> None:
        with self._lock:
            stage, done, total = self._state
            if self._finished or not stage:
                return
            filled = self.width * done // total
            self._finished = done >= total and stage == "done"
            ERR.bar(
                f"[{'#' * filled}{'.' * (self.width - filled)}] {100 * done // total:3d}% "
                f"{stage:<9} {time.perf_counter() - self.t0:6.2f} s",
                final=self._finished,
            )

    def _tick(self) -> None:
        while not self._stop.wait(self.tick):
            if not self._finished:
                self._draw()


def notice_unpickling(path: Path) -> None:
    ERR.line(f"tlnetron: loading {path} (torchlens.load unpickles it: only load files you trust)")


def print_result(result: Any) -> None:
    if result.page is not None:
        print(
            f"wrote      {result.page}  "
            "(one page: open it in a browser, from disk; it holds the model and its companion)"
        )
    else:
        print(f"wrote      {result.artifact}")
    if result.companion:
        print(f"companion  {result.companion}")
    typed = f"{result.typed_edge_count} of {result.edge_count} edges typed"
    print(
        f"view       {result.granularity}: {result.node_count} nodes in the root graph, "
        f"{typed}, {result.function_count} functions"
    )
    print(f"time       {result.seconds:.3f} s")


def how_to_open(result: Any) -> None:
    print()
    print("open it in Netron:")
    print(
        f"  netron.app or the desktop app: open {result.artifact.name}, "
        f"then drop {result.companion.name if result.companion else 'the companion'} onto the open model"
    )
    print(
        f"  or: tlnetron serve {result.artifact}"
        + (f" --attachment {result.companion}" if result.companion else "")
        + "  (needs pip install 'tlnetron[netron]')"
    )
    page = result.artifact.name.removesuffix(".onnx.json") + ".html"
    print(
        f"  or one file to open anywhere: tlnetron html {result.artifact}"
        + (f" --attachment {result.companion}" if result.companion else "")
        + f" -o {result.artifact.with_name(page)}  (also needs netron)"
    )

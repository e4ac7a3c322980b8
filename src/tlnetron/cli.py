"""The ``tlnetron`` command: demo, export, validate, serve, html, schema.

Exit codes (scripts can rely on them):
  0    done (for validate: the files are valid)
  1    validate found problems (one line each: code, where, what)
  2    usage error (bad command-line syntax)
  3    refused: a typed refusal (the line starts with its stable code in brackets)
  4    validate itself failed (a bug in tlnetron, never a verdict on the files)
  141  the reader of the output went away (``tlnetron validate ... | head -1``), as for
       other Unix tools (128 + SIGPIPE); nothing more is printed

Every option is checked before anything slow starts (importing torch and onnx, loading a
trace: seconds), with the exporter's own check (:func:`tlnetron.options.check_options`),
and refusals name the command line's flags (``--granularity module``, not
``granularity="module"``). Warnings are printed once each, on stderr:
``warning <code> <message>``.
"""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import signal
import sys
import threading
import time
import warnings
from pathlib import Path
from types import TracebackType
from typing import Any, TextIO

from ._generated.vocab import BUFFER_POLICY, COLOUR_SCHEME, GRANULARITY, ErrorCode
from .errors import Opt, Problem, TlnetronError, TlnetronWarning

__all__ = [
    "EXIT_CRASH",
    "EXIT_INVALID",
    "EXIT_OK",
    "EXIT_PIPE_CLOSED",
    "EXIT_REFUSED",
    "EXIT_USAGE",
    "cli_spelling",
    "main",
]

EXIT_OK = 0
EXIT_INVALID = 1
EXIT_USAGE = 2
EXIT_REFUSED = 3
EXIT_PIPE_CLOSED = 128 + signal.SIGPIPE
EXIT_CRASH = 4

_EPILOG = """\
examples:
  tlnetron demo --output-dir out/
  tlnetron export run.tlspec -o model.onnx.json
  tlnetron export run.tlspec -o model.onnx.json --granularity op --show-buffers always
  tlnetron export run.tlspec -o model.onnx.json --baseline ref.tlspec
  tlnetron export run.tlspec -o model.onnx.json --baseline-id run-2026-11-29
  tlnetron validate model.onnx.json --attachment model.onnx.attachment.json
  tlnetron serve model.onnx.json --attachment model.onnx.attachment.json
  tlnetron html model.onnx.json --attachment model.onnx.attachment.json -o model.html
  tlnetron export run.tlspec -o model.html --colour-by time
  tlnetron schema --copy-to schemas/

exit codes: 0 done; 1 validate found problems; 2 usage error; 3 refused (typed refusal).

security: `tlnetron export` loads a saved trace with torchlens.load, which UNPICKLES it:
only export saves you trust.
"""

# ------------------------------------------------------------------ how refusals name options

_FLAGS = {
    "path": "-o",
    "granularity": "--granularity",
    "depth": "--depth",
    "show_buffers": "--show-buffers",
    "attachment": "--attachment",
    "baseline": "--baseline",
    "serve": "--serve",
    "activation_stats": "--activation-stats",
    "colour_by": "--colour-by",
}
"""The flag of each keyword of ``tlnetron.export`` (but the trace and the progress hook)."""

_METAVARS = {
    "path": "PATH",
    "granularity": "|".join(GRANULARITY),
    "depth": "N",
    "show_buffers": "|".join(BUFFER_POLICY),
    "attachment": "auto|on|off",
    "baseline": "ref.tlspec",
    "colour_by": "|".join(COLOUR_SCHEME),
}

_ATTACHMENT = {"auto": None, "on": True, "off": False}
"""``--attachment``'s values, as ``tlnetron.export``'s ``attachment=``."""


def cli_spelling(opt: Opt) -> str:
    """How the command line spells an option a refusal names: ``--granularity module``,
    ``--depth N`` (the option alone), ``--attachment off``, ``--serve``, ``no -o``, ...

    A keyword with no flag keeps its Python spelling (tests hold every keyword to a flag).
    """
    flag = _FLAGS.get(opt.keyword)
    if flag is None:
        return str(opt)
    value = opt.value
    if opt.keyword == "serve":
        return flag if value is True or value is ... else f"no {flag}"
    if opt.keyword == "activation_stats":
        return "--no-activation-stats" if value is False else flag
    if value is ...:
        return f"{flag} {_METAVARS[opt.keyword]}"
    if opt.keyword == "attachment":
        spelt = next((word for word, v in _ATTACHMENT.items() if v is value), None)
        return f"{flag} {spelt if spelt is not None else shlex.quote(str(value))}"
    if value is None:
        return f"no {flag}"
    if opt.keyword == "baseline":
        return f"--baseline-id {shlex.quote(value)}" if isinstance(value, str) else f"{flag} {_METAVARS['baseline']}"
    return f"{flag} {shlex.quote(str(value))}"


# ------------------------------------------------------------------ stderr: lines, the bar and warnings


def printable(text: str) -> str:
    """``text`` with what UTF-8 cannot encode (lone surrogates a file can hold) escaped, so printing never fails."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


class _Stderr:
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


_ERR = _Stderr()


class _Bar:
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

    def __enter__(self) -> _Bar:
        if self.enabled:
            self._ticker = threading.Thread(target=self._tick, name="tlnetron-progress", daemon=True)
            self._ticker.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self._stop.set()
        if self._ticker is not None:
            self._ticker.join()
        if self.enabled:
            _ERR.end_bar()

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
            _ERR.bar(
                f"[{'#' * filled}{'.' * (self.width - filled)}] {100 * done // total:3d}% "
                f"{stage:<9} {time.perf_counter() - self.t0:6.2f} s",
                final=self._finished,
            )

    def _tick(self) -> None:
        while not self._stop.wait(self.tick):
            if not self._finished:
                self._draw()


def _notice_unpickling(path: Path) -> None:
    _ERR.line(f"tlnetron: loading {path} (torchlens.load unpickles it: only load files you trust)")


# ------------------------------------------------------------------ commands


def _print_result(result: Any) -> None:
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


def _how_to_open(result: Any) -> None:
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


def _check_folder(dest: Path, flag: str) -> None:
    """Refuse a folder to write into that is a file, or cannot be created or written in.

    Checked before any work, so a refusal writes nothing (and leaves a file in the way as
    it was).
    """
    if os.path.lexists(dest) and not dest.is_dir():
        raise TlnetronError(
            ErrorCode.DESTINATION_UNWRITABLE,
            f"{flag} {str(dest)!r} is a file, not a folder; nothing was written.",
            where=str(dest),
            remedy=f"pass {flag} with a folder (one that does not exist yet is created).",
        )
    probe = dest
    while not os.path.lexists(probe) and probe.parent != probe:
        probe = probe.parent
    if not probe.is_dir() or not os.access(probe, os.W_OK | os.X_OK):
        what = "is not a folder" if not probe.is_dir() else "is not writable"
        raise TlnetronError(
            ErrorCode.DESTINATION_UNWRITABLE,
            f"cannot create or write {str(dest)!r}: {str(probe)!r} {what}; nothing was written.",
            where=str(dest),
            remedy=f"pass {flag} with a folder you can write to.",
        )


def _cmd_demo(args: argparse.Namespace) -> int:
    out = Path(args.output_dir)
    _check_folder(out, "--output-dir")
    with _Bar(args.progress) as bar:
        bar.stage("import")
        from .api import export
        from .demo import DEMO_TRACES, trace_demo

        bar.stage("trace")
        t0 = time.perf_counter()
        log = trace_demo()
        traced = time.perf_counter() - t0
        try:
            out.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            from .write.pair import unwritable

            raise unwritable(exc, out, "--output-dir") from None
        result = export(log, out / "demo.onnx.json", granularity=args.granularity, progress=bar)
    times = "twice" if DEMO_TRACES == 2 else f"{DEMO_TRACES} times"
    print(
        f"traced     tlnetron's demo model (random weights) {times} in {traced:.2f} s: "
        "the last trace is exported (the first in a process runs its first ops slowly)"
    )
    _print_result(result)
    _how_to_open(result)
    return EXIT_OK


def _baseline(args: argparse.Namespace, trace: Path) -> Path | str | None:
    """What ``--baseline`` or ``--baseline-id`` names, checked before anything is loaded:
    a saved reference trace (its folder), a run identifier, or None."""
    from .read.trace import saved_trace, self_baseline_refusal

    if args.baseline_id is not None:
        from .read.baseline import read_baseline

        read_baseline(None, args.baseline_id)  # refuses an empty identifier, loads nothing
        return str(args.baseline_id)
    if args.baseline is None:
        return None
    value: str = args.baseline
    path = Path(value)
    if os.path.lexists(path):
        try:
            folder = saved_trace(path)
        except TlnetronError:
            raise TlnetronError(
                ErrorCode.INVALID_BASELINE,
                f"--baseline {value!r} is not a TorchLens save "
                "(a folder with manifest.json written by torchlens.save).",
                where="baseline",
                remedy=f"pass --baseline with the reference run's folder written by torchlens.save, "
                f"or --baseline-id {shlex.quote(value)} to record a run identifier.",
            ) from None
        if os.path.samefile(folder, trace):
            raise self_baseline_refusal(f"the saved trace being exported ({trace})")
        return folder
    looks_like_path = os.sep in value or bool(os.altsep and os.altsep in value) or value.endswith(".tlspec")
    raise TlnetronError(
        ErrorCode.INVALID_BASELINE,
        f"--baseline {value!r} does not exist" + ("." if looks_like_path else " (--baseline names a saved trace)."),
        where="baseline",
        remedy=(
            "pass --baseline with the reference run's folder written by torchlens.save"
            + (
                f", or --baseline-id {shlex.quote(value)} to record a run identifier."
                if not looks_like_path
                else " (check the path)."
            )
        ),
    )


def _cmd_export(args: argparse.Namespace) -> int:
    from .options import check_options
    from .read.trace import saved_trace

    # Everything a person can get wrong is refused here, before the slow part.
    attachment = _ATTACHMENT[args.attachment]
    options = check_options(
        args.output,
        args.granularity,
        args.depth,
        args.show_buffers,
        attachment,
        args.serve,
        args.activation_stats,
        args.colour_by,
    )
    trace = saved_trace(args.trace)
    baseline = _baseline(args, trace)
    if args.serve:
        from .pages.serve import require_netron

        require_netron()
    with _Bar(args.progress) as bar:
        bar.stage("import")
        from .api import export
        from .read.trace import load_saved_trace, trace_classes

        trace_classes()  # imports torch and torchlens
        _notice_unpickling(trace)
        bar.stage("load")
        log = load_saved_trace(trace)
        if isinstance(baseline, Path):
            _notice_unpickling(baseline)
            reference: Any = load_saved_trace(baseline)
        else:
            reference = baseline
        from .pipeline import PAGE_COMMAND

        again = PAGE_COMMAND.set("tlnetron " + shlex.join(args.argv) if options.page or args.serve else None)
        try:
            result = export(
                log,
                options.page or options.path,
                granularity=args.granularity,
                depth=args.depth,
                show_buffers=args.show_buffers,
                attachment=attachment,
                baseline=reference,
                serve=args.serve,
                progress=bar,
                activation_stats=args.activation_stats,
                colour_by=args.colour_by,
            )
        finally:
            PAGE_COMMAND.reset(again)
    _print_result(result)
    if result.url:
        print(f"serving    {result.url}  (Ctrl+C stops)")
        from .pages.serve import wait_forever

        wait_forever(result)
    return EXIT_OK


def _companion_arg(args: argparse.Namespace) -> Path | None:
    """One rule for every command reading an artifact: the companion given, else the one
    beside the artifact (:func:`_said_beside` says so once the command has done its work),
    unless --no-attachment."""
    if args.attachment:
        return Path(args.attachment)
    if args.no_attachment:
        return None
    from .write.pair import companion_path_for

    beside = companion_path_for(Path(args.artifact))
    try:
        return beside if beside.is_file() else None
    except OSError:  # a name past the OS's limits: the artifact's own read refuses it
        return None


def _said_beside(args: argparse.Namespace, companion: Path | None) -> None:
    if companion is not None and not args.attachment:
        _ERR.line(f"tlnetron: used {companion}, the companion beside the artifact (--no-attachment leaves it out)")


def _cmd_validate(args: argparse.Namespace) -> int:
    try:
        companion = _companion_arg(args)
        problems = _validate(Path(args.artifact), companion)
        _said_beside(args, companion)
    except (BrokenPipeError, KeyboardInterrupt):
        raise
    except Exception as exc:  # noqa: BLE001  (a bug of ours: its own exit code, never "problems found")
        _ERR.line(
            f"tlnetron: validate failed inside tlnetron ({type(exc).__name__}: {str(exc)[:300]}); "
            "this is a bug: please report it with the files."
        )
        return EXIT_CRASH
    for p in problems:
        print(printable(p.line()))
    if problems:
        _ERR.line(f"{len(problems)} problem(s)")
        return EXIT_INVALID
    print(f"valid: {args.artifact}" + (f" and {companion}" if companion is not None else ""))
    return EXIT_OK


def _validate(path: Path, companion_path: Path | None) -> list[Problem]:
    """Every problem of the artifact (and companion), each file read as Netron reads it."""
    from ._generated.vocab import ValidationCode
    from .check.pairs import shown_in_model
    from .check.validation import artifact_problems, companion_problems, parse_artifact
    from .read.files import JsonFile, read_json_file
    from .write.pair import read_pair

    def read(p: Path) -> JsonFile:
        if p == companion_path:
            return read_json_file(p, what="companion", lossy=ValidationCode.NETRON_ATTACHMENT_INVALID)
        return read_json_file(p, what="artifact")

    artifact, companion = read_pair(path, companion_path, read) if companion_path is not None else (read(path), None)
    problems = list(artifact.problems)
    model = None
    if artifact.value is not None:
        model, found = parse_artifact(artifact.text, artifact.value)
        problems.extend(found)
    if model is not None:
        problems.extend(artifact_problems(model))
    if companion is not None:
        problems.extend(companion.problems)
        if companion.value is not None:
            # A broken artifact hides nothing of the companion's own: only its targets go unchecked.
            problems.extend(companion_problems(companion.value, shown_in_model(model) if model is not None else None))
    return problems


def _cmd_serve(args: argparse.Namespace) -> int:
    from .pages.colours import check_colour
    from .pages.serve import serve_files, wait_forever

    check_colour(args.colour_by)  # before netron is looked for: the mistake is named first
    companion = _companion_arg(args)
    result = serve_files(
        Path(args.artifact),
        companion,
        browse=not args.no_browser,
        host=args.host,
        port=args.port,
        colour_by=args.colour_by,
    )
    print(f"serving    {result.url}  (Ctrl+C stops)", flush=True)
    _said_beside(args, companion)
    wait_forever(result)
    return EXIT_OK


def _cmd_render(args: argparse.Namespace) -> int:
    from .pages.colours import check_colour
    from .pages.pictures import render

    check_colour(args.colour_by)
    companion = _companion_arg(args)
    out = render(args.artifact, args.output, attachment=companion, colour_by=args.colour_by, function=args.function)
    _said_beside(args, companion)
    print(f"wrote      {out}")
    return EXIT_OK


def _cmd_html(args: argparse.Namespace) -> int:
    from .pages.colours import check_colour
    from .pages.html import write_page

    check_colour(args.colour_by)
    artifact = Path(args.artifact)
    companion = _companion_arg(args)
    page = write_page(artifact, companion, Path(args.output), colour_by=args.colour_by)
    _said_beside(args, companion)
    held = artifact.name + (f" and {companion.name}" if companion else "")
    print(f"wrote      {args.output} ({len(page.html) / 2**20:.1f} MiB): {held} in Netron {page.netron_version}")
    print("open it    in a browser, from disk: it needs no server and no network")
    print(f"until      {page.expires:%Y-%m-%d}: Netron's age gate then stops it; regenerate it with a newer netron")
    return EXIT_OK


def _cmd_schema(args: argparse.Namespace) -> int:
    from .check.schemas import schema_dir, schema_files

    files = schema_files()
    dest = Path(args.copy_to) if args.copy_to else None
    if dest is not None:
        _check_folder(dest, "--copy-to")
        for path in files.values():
            if (dest / path.name).is_dir():
                raise TlnetronError(
                    ErrorCode.DESTINATION_UNWRITABLE,
                    f"--copy-to {str(dest)!r} holds a folder named {path.name!r}, "
                    "where a schema file goes; nothing was written.",
                    where=str(dest / path.name),
                    remedy="pass --copy-to with another folder.",
                )
    base = schema_dir()
    print(base)
    for sid, path in files.items():
        print(f"  {path.name}\t{sid}")
    if dest is not None:
        try:
            dest.mkdir(parents=True, exist_ok=True)
            for path in files.values():
                shutil.copyfile(path, dest / path.name)
        except OSError as exc:
            from .write.pair import unwritable

            raise unwritable(exc, dest, "--copy-to") from None
        print(f"copied {len(files)} schema files to {dest}")
    return EXIT_OK


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tlnetron",
        description="Export TorchLens traces to the Netron model viewer.",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    from ._version import __version__

    parser.add_argument("--version", action="version", version=f"tlnetron {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    demo = sub.add_parser("demo", help="trace the demo model shipped in the package and export it")
    demo.add_argument("--output-dir", default="tlnetron-demo", help="where to write (default: ./tlnetron-demo)")
    demo.add_argument("--granularity", choices=GRANULARITY, default="module")
    demo.add_argument("--progress", action="store_true", help="show a progress bar on stderr")
    demo.set_defaults(func=_cmd_demo)

    exp = sub.add_parser(
        "export",
        help="export a trace saved with torchlens.save",
        description="Export a trace saved with torchlens.save. "
        "WARNING: loading a saved trace UNPICKLES it; only load files you trust.",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    exp.add_argument("trace", help="folder written by torchlens.save (unpickled: trusted files only)")
    exp.add_argument("-o", "--output", metavar="PATH", help="artifact path ending in .json (e.g. model.onnx.json)")
    exp.add_argument("--granularity", choices=GRANULARITY, default="module")
    exp.add_argument(
        "--depth", type=int, default=None, metavar="N", help="module depth for the root graph (module view)"
    )
    exp.add_argument("--show-buffers", choices=BUFFER_POLICY, default="meaningful")
    exp.add_argument(
        "--attachment",
        choices=("auto", "on", "off"),
        default="auto",
        help="write the metrics companion (auto: beside a file)",
    )
    base = exp.add_mutually_exclusive_group()
    base.add_argument(
        "--baseline",
        metavar="REF",
        help="the reference run's saved trace folder: per-node diff facts (unpickled: trusted files only)",
    )
    base.add_argument(
        "--baseline-id", metavar="ID", help="a run identifier for the baseline, recorded verbatim (nothing is diffed)"
    )
    exp.add_argument("--serve", action="store_true", help="serve the result in Netron on 127.0.0.1")
    exp.add_argument(
        "--activation-stats",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="statistics of each captured tensor (min, max, mean, std, NaN/Inf counts) "
        "on its edge, in the companion (default: on)",
    )
    exp.add_argument(
        "--colour-by",
        default=None,
        metavar="SCHEME",
        help="the page's first heat-map colour scheme (with -o x.html or --serve: none, time, "
        "flops, bytes, params, diff, nonfinite)",
    )
    exp.add_argument(
        "--progress", action=argparse.BooleanOptionalAction, default=sys.stderr.isatty(), help="progress bar on stderr"
    )
    exp.set_defaults(func=_cmd_export)

    val = sub.add_parser("validate", help="check an artifact (and companion) the way tlnetron and Netron read them")
    val.add_argument("artifact")
    val.add_argument("--attachment", help="companion (netron:attachment JSON) to check against the artifact")
    val.add_argument("--no-attachment", action="store_true", help="leave out the companion beside the artifact")
    val.set_defaults(func=_cmd_validate)

    srv = sub.add_parser("serve", help="serve an artifact (and companion) in Netron on 127.0.0.1 until interrupted")
    srv.add_argument("artifact")
    srv.add_argument("--attachment")
    srv.add_argument("--no-attachment", action="store_true", help="leave out the companion beside the artifact")
    srv.add_argument("--no-browser", action="store_true", help="do not open a browser tab")
    srv.add_argument("--host", default="127.0.0.1", help="address to serve on (default 127.0.0.1: this machine only)")
    srv.add_argument("--port", type=int, default=0, help="port to serve on (default 0: any free port)")
    srv.add_argument(
        "--colour-by",
        default="none",
        metavar="SCHEME",
        help="the heat map's first colour scheme (none, time, flops, bytes, params, diff, "
        "nonfinite; ?colour= in the URL too)",
    )
    srv.set_defaults(func=_cmd_serve)

    ren = sub.add_parser(
        "render", help="write the picture Netron draws (its own File > Export, SVG or PNG) from headless Chromium"
    )
    ren.add_argument("artifact")
    ren.add_argument("--attachment")
    ren.add_argument("--no-attachment", action="store_true", help="leave out the companion beside the artifact")
    ren.add_argument("-o", "--output", required=True, metavar="PICTURE", help="model.svg or model.png")
    ren.add_argument(
        "--colour-by",
        default="none",
        metavar="SCHEME",
        help="colour scheme (none, time, flops, bytes, params, diff, nonfinite)",
    )
    ren.add_argument("--function", metavar="NAME", help="draw this function's body instead of the root")
    ren.set_defaults(func=_cmd_render)

    page = sub.add_parser(
        "html",
        help="write one self-contained HTML page showing an artifact (and companion) in Netron, from disk",
        description="Write one HTML file holding Netron's web app (from the installed netron package), the artifact "
        "and the companion: it opens from disk with no server and no network. Netron stops starting 180 days after "
        "its build date: the page says when; regenerate it then with a newer netron.",
    )
    page.add_argument("artifact", help="the artifact written by tlnetron export (model.onnx.json)")
    page.add_argument("--attachment", help="its companion (model.onnx.attachment.json), shown once the model is drawn")
    page.add_argument("--no-attachment", action="store_true", help="leave out the companion beside the artifact")
    page.add_argument("-o", "--output", required=True, metavar="PAGE", help="the page to write (ending in .html)")
    page.add_argument(
        "--colour-by",
        default="none",
        metavar="SCHEME",
        help="the heat map's first colour scheme (none, time, flops, bytes, params, diff, "
        "nonfinite; ?colour= in the URL too)",
    )
    page.set_defaults(func=_cmd_html)

    sch = sub.add_parser("schema", help="print where the installed JSON Schemas are (and copy them out)")
    sch.add_argument("--copy-to", help="copy the schema files into this folder")
    sch.set_defaults(func=_cmd_schema)
    return parser


def _stop_quietly_on_closed_pipe() -> None:
    """The reader of stdout (or stderr) went away: send what is left to /dev/null, so the
    interpreter's last flush neither fails nor prints "Exception ignored"."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    for stream in (sys.stdout, sys.stderr):
        try:
            os.dup2(devnull, stream.fileno())
        except (OSError, ValueError):
            pass
    os.close(devnull)


_PATH_ARGS = {
    "trace": "TRACE",
    "output": "--output",
    "artifact": "ARTIFACT",
    "attachment": "--attachment",
    "copy_to": "--copy-to",
    "output_dir": "--output-dir",
    "baseline": "--baseline",
}


def _unrecognized(extra: list[str]) -> str:
    """argparse's complaint about leftover words, naming the flag for a Python-style keyword=value."""
    import ast

    for word in extra:
        key, eq, text = word.partition("=")
        key = key.lstrip("-").replace("-", "_")
        if eq and key in _FLAGS:
            try:
                value = ast.literal_eval(text)
            except (ValueError, SyntaxError):
                value = text
            return f"unrecognized argument {word!r}: the command line spells it {cli_spelling(Opt(key, value))}"
    return f"unrecognized arguments: {' '.join(extra)}"


def main(argv: list[str] | None = None) -> int:
    """Run the command line; returns the exit code."""
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if extra:
        parser.error(_unrecognized(extra))
    args.argv = list(sys.argv[1:] if argv is None else argv)  # a page's note repeats the command that made it
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("always", TlnetronWarning)
            python_showwarning = warnings.showwarning

            def show(
                message: Warning | str,
                category: type[Warning],
                filename: str,
                lineno: int,
                file: TextIO | None = None,
                line: str | None = None,
            ) -> None:
                if isinstance(message, TlnetronWarning):
                    _ERR.line(f"warning {message.code} {message.text(cli_spelling)}")
                elif category.__module__.split(".")[0] == "torchlens":
                    # TorchLens speaks while loading a save: one line in its own words, no source line.
                    _ERR.line(f"torchlens {category.__name__}: {' '.join(str(message).split())}")
                else:
                    python_showwarning(message, category, filename, lineno, file, line)

            warnings.showwarning = show
            if args.func is not _cmd_validate:  # validate reports an unopenable path as a problem
                from .options import check_os_limits

                for dest, flag in _PATH_ARGS.items():
                    if isinstance(getattr(args, dest, None), str):
                        check_os_limits(Path(getattr(args, dest)), flag)
            code: int = args.func(args)
        sys.stdout.flush()
    except TlnetronError as exc:
        _ERR.line(f"tlnetron: {exc.text(cli_spelling)}")
        return EXIT_REFUSED
    except KeyboardInterrupt:
        return EXIT_OK
    except BrokenPipeError:
        _stop_quietly_on_closed_pipe()
        return EXIT_PIPE_CLOSED
    return code


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

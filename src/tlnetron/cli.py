"""The ``tlnetron`` command: demo, export, validate, serve, schema.

Exit codes (scripts can rely on them):
  0  done (for validate: the files are valid)
  1  validate found problems (one line each: code, where, what)
  2  usage error (bad command-line syntax)
  3  refused: a typed refusal (the line starts with its stable code in brackets)
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from pathlib import Path
from typing import Any

from ._generated.vocab import BUFFER_POLICY, GRANULARITY
from .errors import Problem, TlnetronError

__all__ = ["EXIT_INVALID", "EXIT_OK", "EXIT_REFUSED", "EXIT_USAGE", "main"]

EXIT_OK = 0
EXIT_INVALID = 1
EXIT_USAGE = 2
EXIT_REFUSED = 3

_EPILOG = """\
examples:
  tlnetron demo --output-dir out/
  tlnetron export run.tlspec -o model.onnx.json
  tlnetron export run.tlspec -o model.onnx.json --granularity op --show-buffers always
  tlnetron export run.tlspec -o model.onnx.json --baseline ref.tlspec
  tlnetron validate model.onnx.json --attachment model.onnx.attachment.json
  tlnetron serve model.onnx.json --attachment model.onnx.attachment.json
  tlnetron schema --copy-to schemas/

exit codes: 0 done; 1 validate found problems; 2 usage error; 3 refused (typed refusal).

security: `tlnetron export` loads a saved trace with torchlens.load, which UNPICKLES it:
only export saves you trust.
"""


class _Bar:
    """A progress bar on stderr (only when stderr is a terminal or forced): the share of the
    export done, the stage it is in and the time so far. Redrawn when the stage changes or
    the bar grows by a character, so a small export draws it a few times only."""

    width = 24

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self.t0 = time.perf_counter()
        self.drawn: tuple[str, int] | None = None

    def __call__(self, stage: str, done: int, total: int) -> None:
        if not self.enabled:
            return
        filled = self.width * done // max(total, 1)
        if (stage, filled) == self.drawn:
            return
        self.drawn = (stage, filled)
        percent = 100 * done // max(total, 1)
        sys.stderr.write(
            f"\r[{'#' * filled}{'.' * (self.width - filled)}] {percent:3d}% {stage:<9} {time.perf_counter() - self.t0:6.2f} s"
        )
        if done >= total:
            sys.stderr.write("\n")
        sys.stderr.flush()


def _print_result(result: Any) -> None:
    print(f"wrote      {result.artifact}")
    if result.companion:
        print(f"companion  {result.companion}")
    typed = f"{result.typed_edge_count} of {result.edge_count} edges typed"
    print(f"view       {result.granularity}: {result.node_count} nodes in the root graph, {typed}, {result.function_count} functions")
    print(f"time       {result.seconds:.3f} s")
    for code in result.warnings:
        print(f"warning    {code}")


def _how_to_open(result: Any) -> None:
    print()
    print("open it in Netron:")
    print(f"  netron.app or the desktop app: open {result.artifact.name}, then drop {result.companion.name if result.companion else 'the companion'} onto the open model")
    print(f"  or: tlnetron serve {result.artifact}" + (f" --attachment {result.companion}" if result.companion else "") + "  (needs pip install 'tlnetron[netron]')")


def _cmd_demo(args: argparse.Namespace) -> int:
    import warnings

    from . import export
    from .demo import trace_demo

    out = Path(args.output_dir)
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    log = trace_demo()
    traced = time.perf_counter() - t0
    print(f"traced     tlnetron's demo model (random weights) in {traced:.2f} s")
    with warnings.catch_warnings():
        warnings.simplefilter("default")
        result = export(log, out / "demo.onnx.json", granularity=args.granularity, progress=_Bar(args.progress))
    _print_result(result)
    _how_to_open(result)
    return EXIT_OK


def _baseline_arg(value: str | None) -> Any:
    if value is None:
        return None
    p = Path(value)
    if p.is_dir() and (p / "manifest.json").is_file():
        from .reader import load_saved_trace

        return load_saved_trace(p)
    return value


def _cmd_export(args: argparse.Namespace) -> int:
    from . import export
    from .reader import load_saved_trace

    attachment = {"on": True, "off": False, "auto": None}[args.attachment]
    log = load_saved_trace(args.trace)
    result = export(
        log,
        args.output,
        granularity=args.granularity,
        depth=args.depth,
        show_buffers=args.show_buffers,
        attachment=attachment,
        baseline=_baseline_arg(args.baseline),
        serve=args.serve,
        progress=_Bar(args.progress),
    )
    _print_result(result)
    if result.url:
        print(f"serving    {result.url}  (Ctrl+C stops)")
        from .serve import wait_forever

        wait_forever(result)
    return EXIT_OK


def _cmd_validate(args: argparse.Namespace) -> int:
    from .validation import artifact_problems, companion_problems, parse_artifact, shown_in_model

    problems: list[Problem] = []
    path = Path(args.artifact)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        print(f"json_invalid\t{path}\tcannot read the file ({exc})")
        return EXIT_INVALID
    model, found = parse_artifact(text)
    problems.extend(found)
    if model is not None:
        problems.extend(artifact_problems(model))
    if args.attachment:
        from ._generated.vocab import ValidationCode

        cpath = Path(args.attachment)
        try:
            companion = json.loads(cpath.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, ValueError) as exc:
            problems.append(Problem(ValidationCode.JSON_INVALID, str(cpath), f"cannot read the companion as JSON ({exc})"))
        else:
            if model is not None:
                problems.extend(companion_problems(companion, shown_in_model(model)))
    for p in problems:
        print(p.line())
    if problems:
        print(f"{len(problems)} problem(s)", file=sys.stderr)
        return EXIT_INVALID
    print(f"valid: {path}" + (f" and {args.attachment}" if args.attachment else ""))
    return EXIT_OK


def _cmd_serve(args: argparse.Namespace) -> int:
    from .serve import serve_files, wait_forever

    result = serve_files(Path(args.artifact), Path(args.attachment) if args.attachment else None, browse=not args.no_browser)
    print(f"serving    {result.url}  (Ctrl+C stops)")
    wait_forever(result)
    return EXIT_OK


def _cmd_schema(args: argparse.Namespace) -> int:
    from .schemas import schema_dir, schema_files

    base = schema_dir()
    print(base)
    for sid, path in schema_files().items():
        print(f"  {path.name}\t{sid}")
    if args.copy_to:
        dest = Path(args.copy_to)
        dest.mkdir(parents=True, exist_ok=True)
        for path in schema_files().values():
            shutil.copyfile(path, dest / path.name)
        print(f"copied {len(schema_files())} schema files to {dest}")
    return EXIT_OK


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tlnetron",
        description="Export TorchLens traces to the Netron model viewer.",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    from . import __version__

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
        description="Export a trace saved with torchlens.save. WARNING: loading a saved trace UNPICKLES it; only load files you trust.",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    exp.add_argument("trace", help="folder written by torchlens.save (unpickled: trusted files only)")
    exp.add_argument("-o", "--output", help="artifact path ending in .json (e.g. model.onnx.json)")
    exp.add_argument("--granularity", choices=GRANULARITY, default="module")
    exp.add_argument("--depth", type=int, default=None, help="module depth for the root graph (module view)")
    exp.add_argument("--show-buffers", choices=BUFFER_POLICY, default="meaningful")
    exp.add_argument("--attachment", choices=("auto", "on", "off"), default="auto", help="write the metrics companion (auto: beside a file)")
    exp.add_argument("--baseline", help="a saved reference trace folder (per-node diff) or an identifier string")
    exp.add_argument("--serve", action="store_true", help="serve the result in Netron on 127.0.0.1")
    exp.add_argument("--progress", action=argparse.BooleanOptionalAction, default=sys.stderr.isatty(), help="progress bar on stderr")
    exp.set_defaults(func=_cmd_export)

    val = sub.add_parser("validate", help="check an artifact (and companion) the way tlnetron and Netron read them")
    val.add_argument("artifact")
    val.add_argument("--attachment", help="companion (netron:attachment JSON) to check against the artifact")
    val.set_defaults(func=_cmd_validate)

    srv = sub.add_parser("serve", help="serve an artifact (and companion) in Netron on 127.0.0.1 until interrupted")
    srv.add_argument("artifact")
    srv.add_argument("--attachment")
    srv.add_argument("--no-browser", action="store_true", help="do not open a browser tab")
    srv.set_defaults(func=_cmd_serve)

    sch = sub.add_parser("schema", help="print where the installed JSON Schemas are (and copy them out)")
    sch.add_argument("--copy-to", help="copy the schema files into this folder")
    sch.set_defaults(func=_cmd_schema)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the command line; returns the exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        code: int = args.func(args)
    except TlnetronError as exc:
        print(f"tlnetron: {exc}", file=sys.stderr)
        return EXIT_REFUSED
    except KeyboardInterrupt:
        return EXIT_OK
    return code


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

"""The argument parser: one function per subcommand."""

from __future__ import annotations

import argparse
import sys
from typing import TypeAlias

from .._generated.vocab import BUFFER_POLICY, COLOUR_SCHEME, GRANULARITY
from .commands import cmd_demo, cmd_export, cmd_html, cmd_render, cmd_schema, cmd_serve, cmd_validate

_Sub: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"
_SCHEMES = ", ".join(COLOUR_SCHEME)

EPILOG = """\
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


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tlnetron",
        description="Export TorchLens traces to the Netron model viewer.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    from .._version import __version__

    parser.add_argument("--version", action="version", version=f"tlnetron {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    _add_demo(sub)
    _add_export(sub)
    _add_validate(sub)
    _add_serve(sub)
    _add_render(sub)
    _add_html(sub)
    _add_schema(sub)
    return parser


def _add_demo(sub: _Sub) -> None:
    demo = sub.add_parser("demo", help="trace the demo model shipped in the package and export it")
    demo.add_argument("--output-dir", default="tlnetron-demo", help="where to write (default: ./tlnetron-demo)")
    demo.add_argument("--granularity", choices=GRANULARITY, default="module")
    demo.add_argument("--progress", action="store_true", help="show a progress bar on stderr")
    demo.set_defaults(func=cmd_demo)


def _add_export(sub: _Sub) -> None:
    exp = sub.add_parser(
        "export",
        help="export a trace saved with torchlens.save",
        description="Export a trace saved with torchlens.save. "
        "WARNING: loading a saved trace UNPICKLES it; only load files you trust.",
        epilog=EPILOG,
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
    _colour_arg(exp, None, f"the page's first heat-map colour scheme (with -o x.html or --serve: {_SCHEMES})")
    exp.add_argument(
        "--progress", action=argparse.BooleanOptionalAction, default=sys.stderr.isatty(), help="progress bar on stderr"
    )
    exp.set_defaults(func=cmd_export)


def _add_validate(sub: _Sub) -> None:
    val = sub.add_parser("validate", help="check an artifact (and companion) the way tlnetron and Netron read them")
    _pair_args(val, attachment_help="companion (netron:attachment JSON) to check against the artifact")
    val.set_defaults(func=cmd_validate)


def _add_serve(sub: _Sub) -> None:
    srv = sub.add_parser("serve", help="serve an artifact (and companion) in Netron on 127.0.0.1 until interrupted")
    _pair_args(srv)
    srv.add_argument("--no-browser", action="store_true", help="do not open a browser tab")
    srv.add_argument("--host", default="127.0.0.1", help="address to serve on (default 127.0.0.1: this machine only)")
    srv.add_argument("--port", type=int, default=0, help="port to serve on (default 0: any free port)")
    _colour_arg(srv, "none", f"the heat map's first colour scheme ({_SCHEMES}; ?colour= in the URL too)")
    srv.set_defaults(func=cmd_serve)


def _add_render(sub: _Sub) -> None:
    ren = sub.add_parser(
        "render", help="write the picture Netron draws (its own File > Export, SVG or PNG) from headless Chromium"
    )
    _pair_args(ren)
    ren.add_argument("-o", "--output", required=True, metavar="PICTURE", help="model.svg or model.png")
    _colour_arg(ren, "none", f"colour scheme ({_SCHEMES})")
    ren.add_argument("--function", metavar="NAME", help="draw this function's body instead of the root")
    ren.set_defaults(func=cmd_render)


def _add_html(sub: _Sub) -> None:
    page = sub.add_parser(
        "html",
        help="write one self-contained HTML page showing an artifact (and companion) in Netron, from disk",
        description="Write one HTML file holding Netron's web app (from the installed netron package), the artifact "
        "and the companion: it opens from disk with no server and no network. Netron stops starting 180 days after "
        "its build date: the page says when; regenerate it then with a newer netron.",
    )
    _pair_args(
        page,
        artifact_help="the artifact written by tlnetron export (model.onnx.json)",
        attachment_help="its companion (model.onnx.attachment.json), shown once the model is drawn",
    )
    page.add_argument("-o", "--output", required=True, metavar="PAGE", help="the page to write (ending in .html)")
    _colour_arg(page, "none", f"the heat map's first colour scheme ({_SCHEMES}; ?colour= in the URL too)")
    page.set_defaults(func=cmd_html)


def _add_schema(sub: _Sub) -> None:
    sch = sub.add_parser("schema", help="print where the installed JSON Schemas are (and copy them out)")
    sch.add_argument("--copy-to", help="copy the schema files into this folder")
    sch.set_defaults(func=cmd_schema)


def _pair_args(
    p: argparse.ArgumentParser, artifact_help: str | None = None, attachment_help: str | None = None
) -> None:
    """The artifact and its companion, as every command that reads a pair takes them."""
    p.add_argument("artifact", help=artifact_help)
    p.add_argument("--attachment", help=attachment_help)
    p.add_argument("--no-attachment", action="store_true", help="leave out the companion beside the artifact")


def _colour_arg(p: argparse.ArgumentParser, default: str | None, help: str) -> None:
    p.add_argument("--colour-by", default=default, metavar="SCHEME", help=help)

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

import os
import sys
import warnings
from pathlib import Path
from typing import TextIO

from ..errors import TlnetronError, TlnetronWarning
from .console import (
    EXIT_CRASH,
    EXIT_INVALID,
    EXIT_OK,
    EXIT_PIPE_CLOSED,
    EXIT_REFUSED,
    EXIT_USAGE,
    ERR,
)
from .flags import PATH_ARGS, cli_spelling, unrecognized
from .commands import cmd_validate
from .parser import build_parser

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


def main(argv: list[str] | None = None) -> int:
    """Run the command line; returns the exit code."""
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if extra:
        parser.error(unrecognized(extra))
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
                    ERR.line(f"warning {message.code} {message.text(cli_spelling)}")
                elif category.__module__.split(".")[0] == "torchlens":
                    # TorchLens speaks while loading a save: one line in its own words, no source line.
                    ERR.line(f"torchlens {category.__name__}: {' '.join(str(message).split())}")
                else:
                    python_showwarning(message, category, filename, lineno, file, line)

            warnings.showwarning = show
            if args.func is not cmd_validate:  # validate reports an unopenable path as a problem
                from ..options import check_os_limits

                for dest, flag in PATH_ARGS.items():
                    if isinstance(getattr(args, dest, None), str):
                        check_os_limits(Path(getattr(args, dest)), flag)
            code: int = args.func(args)
        sys.stdout.flush()
    except TlnetronError as exc:
        ERR.line(f"tlnetron: {exc.text(cli_spelling)}")
        return EXIT_REFUSED
    except KeyboardInterrupt:
        return EXIT_OK
    except BrokenPipeError:
        _stop_quietly_on_closed_pipe()
        return EXIT_PIPE_CLOSED
    return code

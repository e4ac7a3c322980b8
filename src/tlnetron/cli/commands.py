"""The subcommands: each reads its parsed arguments and returns an exit code."""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import time
from pathlib import Path
from typing import Any

from .._generated.vocab import ErrorCode
from ..errors import Problem, TlnetronError
from .console import (
    EXIT_CRASH,
    EXIT_INVALID,
    EXIT_OK,
    ERR,
    Bar,
    how_to_open,
    notice_unpickling,
    print_result,
    printable,
)
from .flags import ATTACHMENT


def check_folder(dest: Path, flag: str) -> None:
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


def cmd_demo(args: argparse.Namespace) -> int:
    out = Path(args.output_dir)
    check_folder(out, "--output-dir")
    with Bar(args.progress) as bar:
        bar.stage("import")
        from ..api import export
        from ..demo import DEMO_TRACES, trace_demo

        bar.stage("trace")
        t0 = time.perf_counter()
        log = trace_demo()
        traced = time.perf_counter() - t0
        try:
            out.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            from ..write.pair import unwritable

            raise unwritable(exc, out, "--output-dir") from None
        result = export(log, out / "demo.onnx.json", granularity=args.granularity, progress=bar)
    times = "twice" if DEMO_TRACES == 2 else f"{DEMO_TRACES} times"
    print(
        f"traced     tlnetron's demo model (random weights) {times} in {traced:.2f} s: "
        "the last trace is exported (the first in a process runs its first ops slowly)"
    )
    print_result(result)
    how_to_open(result)
    return EXIT_OK


def _baseline(args: argparse.Namespace, trace: Path) -> Path | str | None:
    """What ``--baseline`` or ``--baseline-id`` names, checked before anything is loaded:
    a saved reference trace (its folder), a run identifier, or None."""
    from ..read.baseline import self_baseline_refusal
    from ..read.files import saved_trace

    if args.baseline_id is not None:
        from ..read.baseline import read_baseline

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


def cmd_export(args: argparse.Namespace) -> int:
    from ..options import check_options
    from ..read.files import saved_trace

    # Everything a person can get wrong is refused here, before the slow part.
    attachment = ATTACHMENT[args.attachment]
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
        from ..pages.app import require_netron

        require_netron()
    with Bar(args.progress) as bar:
        bar.stage("import")
        from ..api import export
        from ..read.trace import load_saved_trace, trace_classes

        trace_classes()  # imports torch and torchlens
        notice_unpickling(trace)
        bar.stage("load")
        log = load_saved_trace(trace)
        if isinstance(baseline, Path):
            notice_unpickling(baseline)
            reference: Any = load_saved_trace(baseline)
        else:
            reference = baseline
        from ..pipeline import PAGE_COMMAND

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
    print_result(result)
    if result.url:
        print(f"serving    {result.url}  (Ctrl+C stops)")
        from ..pages.serve import wait_forever

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
    from ..write.pair import companion_path_for

    beside = companion_path_for(Path(args.artifact))
    try:
        return beside if beside.is_file() else None
    except OSError:  # a name past the OS's limits: the artifact's own read refuses it
        return None


def _said_beside(args: argparse.Namespace, companion: Path | None) -> None:
    if companion is not None and not args.attachment:
        ERR.line(f"tlnetron: used {companion}, the companion beside the artifact (--no-attachment leaves it out)")


def cmd_validate(args: argparse.Namespace) -> int:
    try:
        companion = _companion_arg(args)
        problems = validate_files(Path(args.artifact), companion)
        _said_beside(args, companion)
    except (BrokenPipeError, KeyboardInterrupt):
        raise
    except Exception as exc:  # noqa: BLE001  (a bug of ours: its own exit code, never "problems found")
        ERR.line(
            f"tlnetron: validate failed inside tlnetron ({type(exc).__name__}: {str(exc)[:300]}); "
            "this is a bug: please report it with the files."
        )
        return EXIT_CRASH
    for p in problems:
        print(printable(p.line()))
    if problems:
        ERR.line(f"{len(problems)} problem(s)")
        return EXIT_INVALID
    print(f"valid: {args.artifact}" + (f" and {companion}" if companion is not None else ""))
    return EXIT_OK


def validate_files(path: Path, companion_path: Path | None) -> list[Problem]:
    """Every problem of the artifact (and companion), each file read as Netron reads it."""
    from .._generated.vocab import ValidationCode
    from ..check.pairs import shown_in_model
    from ..check.validation import artifact_problems, companion_problems, parse_artifact
    from ..read.files import JsonFile, read_json_file
    from ..write.pair import read_pair

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


def cmd_serve(args: argparse.Namespace) -> int:
    from ..pages.colours import check_colour
    from ..pages.serve import serve_files, wait_forever

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


def cmd_render(args: argparse.Namespace) -> int:
    from ..pages.colours import check_colour
    from ..pages.pictures import render

    check_colour(args.colour_by)
    companion = _companion_arg(args)
    out = render(args.artifact, args.output, attachment=companion, colour_by=args.colour_by, function=args.function)
    _said_beside(args, companion)
    print(f"wrote      {out}")
    return EXIT_OK


def cmd_html(args: argparse.Namespace) -> int:
    from ..pages.colours import check_colour
    from ..pages.html import write_page

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


def cmd_schema(args: argparse.Namespace) -> int:
    from ..check.schemas import schema_dir, schema_files

    files = schema_files()
    dest = Path(args.copy_to) if args.copy_to else None
    if dest is not None:
        check_folder(dest, "--copy-to")
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
            from ..write.pair import unwritable

            raise unwritable(exc, dest, "--copy-to") from None
        print(f"copied {len(files)} schema files to {dest}")
    return EXIT_OK

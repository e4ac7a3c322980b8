"""How often a large export reports progress, and its longest silences.

Exports one trace with a ``progress`` hook that records the time of every call, then
prints the number of reports, the five longest gaps between two reports (the stage and
share the bar showed while it waited), and, for each stage, the share the hook reported
when it started against the share of the export's time actually spent by then.

Synthetic IRs (``scale.py``'s shapes; ``export_ir``, so no trace is read) or the real
models of ``models.py`` (``tlnetron.export`` on a torchlens trace, reading included):

    .venv/bin/python benchmarks/progress_gaps.py                         # blocks, 100k ops, op view
    .venv/bin/python benchmarks/progress_gaps.py --variant deep --granularity module
    .venv/bin/python benchmarks/progress_gaps.py --model gpt2 --granularity op

Prints only (nothing is written): one export per run, so rerun it to see the spread.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))


def record(export: Any) -> list[tuple[str, float, float]]:
    """Run ``export(hook)``; every report as (stage, done / total, seconds since the start)."""
    calls: list[tuple[str, float, float]] = []
    t0 = time.perf_counter()

    def hook(stage: str, done: int, total: int) -> None:
        calls.append((stage, done / total, time.perf_counter() - t0))

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        export(hook)
    return calls


def summary(label: str, calls: list[tuple[str, float, float]]) -> str:
    total = calls[-1][2]
    gaps = sorted(((b[2] - a[2], a[0], a[1]) for a, b in zip(calls, calls[1:])), reverse=True)[:5]
    starts: dict[str, tuple[float, float]] = {}
    for stage, share, t in calls:
        starts.setdefault(stage, (share, t / total if total else 0.0))
    return "\n".join(
        [
            f"{label}: {total:.2f} s, {len(calls)} reports",
            "  longest silences: " + "; ".join(f"{dt:.2f} s after {s} at {f:.0%}" for dt, s, f in gaps),
            "  stage starts, reported share / share of the time spent: "
            + "  ".join(f"{s} {f:.2f}/{t:.2f}" for s, (f, t) in starts.items()),
        ]
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--variant", default="blocks", help="synthetic shape (scale.py): chain, blocks, deep, passes")
    ap.add_argument("--ops", type=int, default=100_000, help="synthetic op count")
    ap.add_argument("--model", default=None, help="a models.py model instead of a synthetic IR")
    ap.add_argument("--granularity", default="op", choices=("module", "op", "rolled"))
    args = ap.parse_args(argv)
    path = Path(tempfile.mkdtemp()) / "a.onnx.json"
    g = args.granularity
    if args.model:
        import models

        import tlnetron

        log, _ = models.trace(args.model)
        tlnetron.export(log, path, granularity=g)  # warm-up
        calls = record(lambda hook: tlnetron.export(log, path, granularity=g, progress=hook))
        label = f"{args.model} ({len(list(log.ops))} ops), {g} view"
    else:
        import scale

        from tlnetron.pipeline import export_ir

        def run(ir: Any, hook: Any = None) -> Any:
            return export_ir(
                ir, path, granularity=g, depth=None, show_buffers="meaningful", attachment=None, progress=hook
            )

        run(scale.ir_for(args.variant, 1000))  # warm-up
        ir = scale.ir_for(args.variant, args.ops)
        calls = record(lambda hook: run(ir, hook))
        label = f"synthetic {args.variant}, {args.ops:,} ops, {g} view (no read)"
    print(summary(label, calls))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Where tlnetron.export spends its time, on GPT-2 small (op and module views).

Two looks at the same calls:

1. Stage timings without a profiler: the stage functions (read_trace as ``tlnetron.api``
   calls it; project, build_model, check_onnx, build_companion, ... as ``tlnetron.pipeline``
   calls them) are wrapped in place (in those namespaces only, for this process) with
   timers that attribute *exclusive* time (a stage nested in another is not counted
   twice), median over ``--reps`` exports. "other" = the export's total minus the stages.
   Cyclic-GC pauses during the export are measured too (``gc.callbacks``): they land
   inside whichever stage allocates when a collection triggers.
2. cProfile over ``--reps`` exports: the top ``--top`` entries by cumulative time whose
   file is in tlnetron, onnx, protobuf or json.

    .venv/bin/python benchmarks/profile_export.py               # GPT-2 small, op + module
    .venv/bin/python benchmarks/profile_export.py --quick       # tiny GPT-2 (smoke run)
    .venv/bin/python benchmarks/profile_export.py --granularities rolled --reps 10

Writes benchmarks/results/profile.json (profile-quick.json with --quick).
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import io
import json
import pstats
import re
import statistics
import sys
import tempfile
import time
import warnings
from collections import defaultdict
from pathlib import Path
from typing import Any, Callable

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import models  # noqa: E402

# (label, names in tlnetron.pipeline's namespace that implement it)
STAGES: list[tuple[str, tuple[str, ...]]] = [
    ("read trace (read.trace.read_trace, called by api.export)", ("api.read_trace",)),
    ("project (the view: view_*.project_*)", ("project",)),
    ("count nodes/edges (counts)", ("counts",)),
    ("model metadata (model_metadata, encode_metadata)", ("model_metadata", "encode_metadata")),
    ("schema validation (metadata + every node)", ("validate", "_validate_nodes")),
    ("build protos and their JSON, serialized and encoded (onnx_build.build_model)", ("build_model",)),
    ("onnx.checker full_check (check_onnx)", ("check_onnx",)),
    ("companion build (build_companion)", ("build_companion",)),
    ("companion validation (companion_problems, shown)", ("companion_problems", "shown")),
    ("companion serialization (companion_bytes)", ("companion_bytes",)),
    # The writer's steps are methods (tlnetron.write.pair.StagedFiles), wrapped on the class.
    ("stage files: write + start writeback (StagedFiles.stage)", ("StagedFiles.stage",)),
    ("sync + replace files (StagedFiles.commit)", ("StagedFiles.commit",)),
]

PROFILE_FILTER = re.compile(r"tlnetron|/onnx/|protobuf|/json/|json_format")


class GcTimer:
    """Wall time spent in the cyclic garbage collector (gc.callbacks), per generation."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self.counts = [0, 0, 0]
        self._t0 = 0.0
        self.active = False

    def __call__(self, phase: str, info: dict[str, int]) -> None:
        if not self.active:
            return
        if phase == "start":
            self._t0 = time.perf_counter()
        else:
            self.seconds += time.perf_counter() - self._t0
            self.counts[info["generation"]] += 1

    def reset(self) -> None:
        self.seconds = 0.0
        self.counts = [0, 0, 0]


class StageTimer:
    """Exclusive wall time per stage, with a call stack so nested stages are not double counted."""

    def __init__(self) -> None:
        self.totals: dict[str, float] = defaultdict(float)
        self._stack: list[list[float]] = []  # per active stage: [child time]

    def wrap(self, label: str, fn: Callable[..., Any], materialize: bool = False) -> Callable[..., Any]:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            self._stack.append([0.0])
            t0 = time.perf_counter()
            try:
                out = fn(*args, **kwargs)
                if materialize:  # generators: time their consumption here
                    out = list(out)
                return out
            finally:
                dt = time.perf_counter() - t0
                child = self._stack.pop()[0]
                self.totals[label] += dt - child
                if self._stack:
                    self._stack[-1][0] += dt

        return wrapper

    def reset(self) -> None:
        self.totals.clear()


def install(timer: StageTimer) -> list[str]:
    """Wrap the stage functions where their caller looks them up (tlnetron.pipeline, tlnetron.api,
    tlnetron.write.pair's classes); return the names that were not found."""
    import tlnetron.api as api
    import tlnetron.pipeline as pipeline
    import tlnetron.write.pair as writer

    missing = []
    for label, names in STAGES:
        for name in names:
            owner: Any = pipeline
            attr = name
            if name.startswith("api."):  # the reader is called from tlnetron.api
                owner, attr = api, name[4:]
            elif "." in name:  # Class.method of tlnetron.write.pair
                cls, attr = name.split(".", 1)
                owner = getattr(writer, cls, None)
            fn = getattr(owner, attr, None) if owner is not None else None
            if fn is None:
                missing.append(name)
                continue
            setattr(owner, attr, timer.wrap(label, fn, materialize=(name == "companion_problems")))
    return missing


GC = GcTimer()
gc.callbacks.append(GC)
EXPORT_OPTIONS: dict[str, Any] = {}  # --no-activation-stats: {"activation_stats": False}


def _export(log: Any, path: Path, g: str) -> float:
    import tlnetron

    gc.collect()
    GC.reset()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        GC.active = True
        t0 = time.perf_counter()
        tlnetron.export(log, path, granularity=g, **EXPORT_OPTIONS)
        dt = time.perf_counter() - t0
        GC.active = False
        return dt


def stage_table(log: Any, g: str, reps: int, tmp: Path, timer: StageTimer) -> dict[str, Any]:
    path = tmp / f"{g}.onnx.json"
    _export(log, path, g)  # warm-up
    per: dict[str, list[float]] = defaultdict(list)
    totals: list[float] = []
    gcs: list[float] = []
    gc_counts: list[list[int]] = []
    for _ in range(reps):
        timer.reset()
        total = _export(log, path, g)
        totals.append(total)
        gcs.append(GC.seconds)
        gc_counts.append(list(GC.counts))
        staged = 0.0
        for label, _names in STAGES:
            v = timer.totals.get(label, 0.0)
            per[label].append(v)
            staged += v
        per["other (option checks, warnings, ExportResult, wrappers)"].append(total - staged)
    med_total = statistics.median(totals)
    rows = [(label, statistics.median(v)) for label, v in per.items()]
    return {
        "granularity": g,
        "total_s": med_total,
        "stages": rows,
        "gc_s": statistics.median(gcs),
        "gc_collections": gc_counts[len(gc_counts) // 2],
    }


def profile_top(log: Any, g: str, reps: int, top: int, tmp: Path) -> tuple[str, list[dict[str, Any]]]:
    import tlnetron

    path = tmp / f"prof-{g}.onnx.json"
    prof = cProfile.Profile()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tlnetron.export(log, path, granularity=g, **EXPORT_OPTIONS)
        for _ in range(reps):
            gc.collect()  # keep a rare full collection (~0.25 s on a GPT-2 heap) out of the profile
            prof.enable()
            tlnetron.export(log, path, granularity=g, **EXPORT_OPTIONS)
            prof.disable()
    st = pstats.Stats(prof, stream=io.StringIO())
    entries = []
    for (file, line, func), (cc, nc, tt, ct, _callers) in st.stats.items():  # type: ignore[attr-defined]
        if not PROFILE_FILTER.search(file):
            continue
        short = file
        for marker in ("/src/tlnetron/", "/site-packages/"):
            if marker in file:
                short = file.split(marker, 1)[1]
                if marker == "/src/tlnetron/":
                    short = "tlnetron/" + short
                break
        entries.append(
            {"where": f"{short}:{line}({func})", "ncalls": nc / reps, "tottime_s": tt / reps, "cumtime_s": ct / reps}
        )
    entries.sort(key=lambda e: -e["cumtime_s"])
    entries = entries[:top]
    lines = [f"{'cum/export':>11s} {'self/export':>11s} {'calls/export':>12s}  function"]
    for e in entries:
        lines.append(f"{e['cumtime_s'] * 1000:9.1f}ms {e['tottime_s'] * 1000:9.1f}ms {e['ncalls']:12.0f}  {e['where']}")
    return "\n".join(lines), entries


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="gpt2", choices=models.MODELS)
    ap.add_argument("--granularities", default="op,module")
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--top", type=int, default=25)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--no-activation-stats", action="store_true", help="export with activation_stats=False")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args(argv)
    if args.no_activation_stats:
        EXPORT_OPTIONS["activation_stats"] = False
    grans = [g.strip() for g in args.granularities.split(",") if g.strip()]
    out_path = args.out or HERE / "results" / ("profile-quick.json" if args.quick else "profile.json")

    import tlnetron  # noqa: F401
    import onnx.checker  # noqa: F401

    models.warm_torchlens()
    log, trace_s = models.trace(args.model, quick=args.quick)
    print(f"{args.model}{' (quick)' if args.quick else ''}: {len(log.ops)} ops, traced in {trace_s:.2f} s\n")
    doc: dict[str, Any] = {
        "model": args.model,
        "quick": args.quick,
        "ops": len(log.ops),
        "trace_s": trace_s,
        "source": models.src_fingerprint(),
        "views": [],
    }
    with tempfile.TemporaryDirectory(prefix="tlnetron-prof-") as td:
        tmp = Path(td)
        # cProfile first, on the unwrapped functions
        profiles = {g: profile_top(log, g, args.reps, args.top, tmp) for g in grans}
        timer = StageTimer()
        missing = install(timer)
        if missing:
            print(
                "(stage functions not found in tlnetron.pipeline / tlnetron.api / tlnetron.write.pair, not "
                f"timed: {missing})\n"
            )
        for g in grans:
            st = stage_table(log, g, args.reps, tmp, timer)
            staged = sum(v for _, v in st["stages"])
            print(
                f"## {g} view: tlnetron.export median {st['total_s'] * 1000:.1f} ms over {args.reps} exports "
                f"(sum of the stage medians: {staged * 1000:.1f} ms)\n"
            )
            print("| stage | median ms | share of the stage sum |")
            print("|---|---:|---:|")
            for label, v in st["stages"]:
                print(f"| {label} | {v * 1000:.1f} | {v / staged:.0%} |")
            n0, n1, n2 = st["gc_collections"]
            print(
                f"\nOf the total, {st['gc_s'] * 1000:.1f} ms ({st['gc_s'] / st['total_s']:.0%}) were cyclic-GC pauses "
                f"({n0}/{n1}/{n2} collections of generation 0/1/2; a generation-2 pass walks every object "
                "alive, the trace and the model included), "
                f"spread over the stages above."
            )
            text, entries = profiles[g]
            print(
                f"\ncProfile, top {args.top} by cumulative time (tlnetron/onnx/protobuf/json only; per export, "
                "profiler overhead included):\n"
            )
            print(text)
            print()
            doc["views"].append({**st, "profile_top": entries, "profile_text": text})
    out_path.parent.mkdir(parents=True, exist_ok=True)
    out_path.write_text(json.dumps(doc, indent=1))
    print(f"wrote {out_path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

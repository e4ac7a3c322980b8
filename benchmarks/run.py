"""tlnetron.export vs torchlens.export.netron (the reference), per model and view.

For each model: trace once (reported), then for each granularity time, in the same
process on the same trace,

    A = tlnetron.export(log, tmp/"a.onnx.json", granularity=g, activation_stats=False)  # companion, validated
    B = torchlens.export.netron(log, tmp/"b.onnx.json", granularity=g, attachment=True)

Like for like: the reference computes no statistics of the captured tensors, so A runs
with ``activation_stats=False`` (tlnetron's default is True). ``--activation-stats`` times A
with them (min/max/mean/std, NaN/Inf counts, zero fraction of every saved tensor, issue
26); the setting is printed and recorded in the results (``activation_stats``).

First the "first" call of each (before any warm-up for that row; for the first row of the
process it is the true cold call), then one warm-up call each, then ``--rounds`` warm rounds
alternating A/B (the order flips every round: AB, BA, AB, ...). ``gc.collect()`` runs
before every call, outside the timer. Reported per row: median A, median B, median of the
per-round ratios A/B, and A's median as a fraction of the model's trace time. Targets
(informational; the script always exits 0): module <= 0.33, op and rolled <= 0.5.

    .venv/bin/python benchmarks/run.py                 # all models, 7 rounds
    .venv/bin/python benchmarks/run.py --quick         # small configs, 3 rounds: a smoke run
    .venv/bin/python benchmarks/run.py --models gpt2,bert --granularities module --rounds 11
    .venv/bin/python benchmarks/run.py --models tiny,loop --dir /dev/shm   # fixed costs, disk left out
    .venv/bin/python benchmarks/run.py --models gpt2 --activation-stats    # what the statistics cost

Writes benchmarks/results/latest.json (latest-quick.json with --quick), or --out.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import statistics
import sys
import tempfile
import time
import traceback
import warnings
from pathlib import Path
from typing import Any, Callable

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import models  # noqa: E402

TARGETS = {"module": 0.33, "op": 0.5, "rolled": 0.5}
GRANULARITIES = ("module", "op", "rolled")


def _timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    gc.collect()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t0 = time.perf_counter()
        out = fn()
        return time.perf_counter() - t0, out


def _versions() -> dict[str, str]:
    from importlib.metadata import version

    out = {"python": platform.python_version()}
    for dist in ("tlnetron", "torchlens", "torch", "onnx", "protobuf", "transformers"):
        try:
            out[dist] = version(dist)
        except Exception:
            out[dist] = "?"
    return out


def bench_row(log: Any, g: str, rounds: int, tmp: Path, activation_stats: bool = False) -> dict[str, Any]:
    import tlnetron
    import torchlens.export

    a_path, b_path = tmp / "a.onnx.json", tmp / "b.onnx.json"
    info: dict[str, Any] = {}

    def run_a() -> Any:
        return tlnetron.export(log, a_path, granularity=g, activation_stats=activation_stats)

    def run_a0() -> Any:  # the same export without statistics: their share of A
        return tlnetron.export(log, a_path, granularity=g, activation_stats=False)

    def run_b() -> Any:
        return torchlens.export.netron(log, b_path, granularity=g, attachment=True)

    row: dict[str, Any] = {"granularity": g, "activation_stats": activation_stats}
    # first calls (cold for the first row of the process), then one warm-up each
    for label, fn in (("a", run_a), ("b", run_b)):
        try:
            s, out = _timed(fn)
            row[f"first_{label}"] = s
            if label == "a":
                info = {
                    "nodes": out.node_count,
                    "edges": out.edge_count,
                    "functions": out.function_count,
                    "warnings": list(out.warnings),
                    "artifact_bytes": a_path.stat().st_size,
                    "companion_bytes": (out.companion.stat().st_size if out.companion else 0),
                }
            else:
                info["reference_artifact_bytes"] = b_path.stat().st_size
        except Exception as exc:  # record the exact error and keep going
            row[f"error_{label}"] = f"{type(exc).__name__}: {exc}"
            row[f"traceback_{label}"] = traceback.format_exc()
    if "error_a" in row or "error_b" in row:
        row.update(info)
        return row
    _timed(run_a)
    _timed(run_b)
    a_times: list[float] = []
    b_times: list[float] = []
    a0_times: list[float] = []
    for i in range(rounds):
        order = [(a_times, run_a), (b_times, run_b)] + ([(a0_times, run_a0)] if activation_stats else [])
        for times, fn in order if i % 2 == 0 else order[::-1]:
            times.append(_timed(fn)[0])
    ratios = [a / b for a, b in zip(a_times, b_times)]
    if activation_stats:
        row.update(
            a0_times=a0_times,
            median_a0=statistics.median(a0_times),
            stats_share=statistics.median([(a - a0) / a for a, a0 in zip(a_times, a0_times)]),
        )
    row.update(
        a_times=a_times,
        b_times=b_times,
        median_a=statistics.median(a_times),
        median_b=statistics.median(b_times),
        median_ratio=statistics.median(ratios),
        **info,
    )
    return row


def captured(log: Any, rounds: int) -> dict[str, Any]:
    """What the statistics read: the saved outputs' bytes, the time of one pass over them (the
    bytes-read limit: numpy's max of each, the cheapest full read), and the statistics alone,
    as the reader computes them (the compiled single pass where built, on this thread here),
    and as torch's and numpy's reductions compute them (the build without a C compiler)."""
    import numpy
    import torch

    from tlnetron.read.stats import ONE_PASS, Gather, one_thread, tensor_stats

    outs = [op.out for op in log.ops if isinstance(getattr(op, "out", None), torch.Tensor)]
    arrays = [
        t.detach().float().numpy() if t.dtype.itemsize < 4 else t.detach().numpy()
        for t in outs
        if t.numel() and t.device.type == "cpu" and not t.dtype.is_complex
    ]

    def one_pass() -> None:
        for a in arrays:
            numpy.max(a)

    def stats() -> None:
        gather = Gather()
        for at, t in enumerate(outs):
            gather.add(at, t)
        gather.start(background=False)()

    def torch_stats() -> None:
        for t in outs:
            tensor_stats(t)

    out: dict[str, Any] = {"tensors": len(outs), "bytes": sum(t.numel() * t.element_size() for t in outs)}
    out["compiled_single_pass"] = ONE_PASS
    with one_thread():
        for name, fn in (("one_pass_s", one_pass), ("stats_s", stats), ("torch_stats_s", torch_stats)):
            _timed(fn)
            out[name] = statistics.median(_timed(fn)[0] for _ in range(rounds))
    return out


def _fmt_s(x: float | None) -> str:
    if x is None:
        return "-"
    return f"{x * 1000:.0f} ms" if x < 10 else f"{x:.1f} s"


def table(results: list[dict[str, Any]]) -> str:
    lines = [
        "| model | ops | trace | view | tlnetron (median) | reference (median) | ratio (median of pairs) | "
        "target | | tlnetron / trace | first call tlnetron / reference |",
        "|---|---:|---:|---|---:|---:|---:|---:|---|---:|---:|",
    ]
    for m in results:
        for r in m["rows"]:
            g = r["granularity"]
            if "error_a" in r or "error_b" in r:
                err = r.get("error_a") or r.get("error_b")
                who = "tlnetron" if "error_a" in r else "reference"
                lines.append(
                    f"| {m['model']} | {m['ops']} | {m['trace_s']:.2f} s | {g} | ERROR ({who}): {err[:120]} | "
                    "| | | | | |"
                )
                continue
            verdict = "PASS" if r["median_ratio"] <= TARGETS[g] else "MISS"
            cold = "*" if r.get("cold") else ""
            lines.append(
                f"| {m['model']} | {m['ops']} | {m['trace_s']:.2f} s | {g} | {_fmt_s(r['median_a'])} | "
                f"{_fmt_s(r['median_b'])} | "
                f"{r['median_ratio']:.2f} | <= {TARGETS[g]} | {verdict} | {r['median_a'] / m['trace_s']:.1%} | "
                f"{_fmt_s(r['first_a'])} / {_fmt_s(r['first_b'])}{cold} |"
            )
    return "\n".join(lines)


def stats_table(results: list[dict[str, Any]]) -> str:
    """With ``--activation-stats``: the statistics' share of each export, and how close the
    export comes to the bytes-read limit (the export without statistics plus one pass over
    the captured bytes, the least any exact statistics can add)."""
    lines = [
        "| model | captured | one pass | statistics alone | same, torch's reductions | view | tlnetron | "
        "without statistics | statistics' share | ratio | ratio without | limit ratio (without + one pass) |",
        "|---|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|",
    ]
    for m in results:
        c = m.get("captured")
        for r in m["rows"]:
            if c is None or "median_a0" not in r:
                continue
            b = r["median_b"]
            lines.append(
                f"| {m['model']} | {c['tensors']} tensors, {c['bytes'] / 1e6:.1f} MB | "
                f"{_fmt_s(c['one_pass_s'])} | {_fmt_s(c['stats_s'])} | {_fmt_s(c.get('torch_stats_s'))} | "
                f"{r['granularity']} | {_fmt_s(r['median_a'])} | {_fmt_s(r['median_a0'])} | "
                f"{r['stats_share']:.0%} | {r['median_ratio']:.2f} | "
                f"{r['median_a0'] / b:.2f} | {(r['median_a0'] + c['one_pass_s']) / b:.2f} |"
            )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", default=",".join(models.MODELS), help=f"comma list from {','.join(models.ALL_MODELS)}")
    ap.add_argument("--granularities", default=",".join(GRANULARITIES))
    ap.add_argument("--rounds", type=int, default=None, help="warm rounds per row (default 7; 3 with --quick)")
    ap.add_argument("--quick", action="store_true", help="small configs of each model (smoke run)")
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument(
        "--dir",
        type=Path,
        default=None,
        help="write the exports under this folder (e.g. /dev/shm, to leave the disk out); default: the system's "
        "temporary folder",
    )
    ap.add_argument(
        "--activation-stats",
        action=argparse.BooleanOptionalAction,
        default=False,
        help="time tlnetron with activation statistics (default off: the reference computes none, so the comparison "
        "stays like for like)",
    )
    args = ap.parse_args(argv)
    names = [m.strip() for m in args.models.split(",") if m.strip()]
    grans = [g.strip() for g in args.granularities.split(",") if g.strip()]
    for n in names:
        if n not in models.ALL_MODELS:
            ap.error(f"unknown model {n!r}")
    for g in grans:
        if g not in GRANULARITIES:
            ap.error(f"unknown granularity {g!r}")
    if args.rounds is None:
        args.rounds = 3 if args.quick else 7
    out_path = args.out or HERE / "results" / ("latest-quick.json" if args.quick else "latest.json")

    # import both exporters (and what they share) up front: import time is not export time
    import google.protobuf.json_format  # noqa: F401
    import onnx.checker  # noqa: F401
    import tlnetron  # noqa: F401
    import torchlens.export  # noqa: F401

    t_start = time.time()
    load_start = os.getloadavg()
    warm = models.warm_torchlens()
    print(f"torchlens first-trace warm-up (not charged to any model): {warm:.2f} s", flush=True)
    print(f"tlnetron activation_stats={args.activation_stats} (the reference computes none)", flush=True)
    results: list[dict[str, Any]] = []
    first_row = True
    with tempfile.TemporaryDirectory(prefix="tlnetron-bench-", dir=args.dir) as td:
        tmp = Path(td)
        for name in names:
            log, trace_s = models.trace(name, quick=args.quick)
            n_ops = len(log.ops)
            print(f"{name}: traced {n_ops} ops in {trace_s:.2f} s", flush=True)
            rows = []
            for g in grans:
                r = bench_row(log, g, args.rounds, tmp, args.activation_stats)
                r["cold"] = first_row
                first_row = False
                rows.append(r)
                if "median_ratio" in r:
                    print(
                        f"  {g:7s} tlnetron {_fmt_s(r['median_a']):>8s}  reference {_fmt_s(r['median_b']):>8s} "
                        f" ratio {r['median_ratio']:.2f}",
                        flush=True,
                    )
                else:
                    print(f"  {g:7s} ERROR: {r.get('error_a') or r.get('error_b')}", flush=True)
            entry = {"model": name, "ops": n_ops, "num_compute_ops": int(log.num_ops), "trace_s": trace_s, "rows": rows}
            if args.activation_stats:
                entry["captured"] = captured(log, args.rounds)
            results.append(entry)
            del log
            gc.collect()
    md = table(results)
    if args.activation_stats:
        md += "\n\n" + stats_table(results)
    print()
    print(md)
    print(
        "\n* = the process's first export call (true cold); other 'first call' numbers are the first call on "
        "that row, after earlier rows warmed shared code."
    )
    doc = {
        "script": "benchmarks/run.py",
        "quick": args.quick,
        "rounds": args.rounds,
        "activation_stats": args.activation_stats,
        "targets": TARGETS,
        "versions": _versions(),
        "source": models.src_fingerprint(),
        "cpus": os.cpu_count(),
        "loadavg_start": load_start,
        "loadavg_end": os.getloadavg(),
        "wall_s": time.time() - t_start,
        "torchlens_warmup_s": warm,
        "results": results,
        "markdown": md,
        "export_dir": str(args.dir) if args.dir else tempfile.gettempdir(),
    }
    out_path.parent.mkdir(parents=True, exist_ok=True)
    out_path.write_text(json.dumps(doc, indent=1))
    print(f"\nwrote {out_path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

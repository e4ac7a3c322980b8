"""How long onnx.checker.check_model(full_check=True) takes on module views with many functions.

onnx 1.23.0 made shape inference's ``GraphInferenceContext`` own a copy of the map of every
model-local function, and inference builds one context per function call it enters, so
the full check costs time quadratic in the number of functions F. This script builds the
synthetic ``blocks`` IR of ``scale.py`` (one module function per 4 ops) at each size,
exports its module view, keeps the exact bytes tlnetron hands the checker, and times the
checker on them: without (``full_check=False``) and with the full check, and tlnetron's own
``validation.check_onnx`` (which, on a quadratic onnx, runs the same full check split into
pieces of few functions), the median of ``--reps`` calls after one untimed call.

Run it under each onnx to compare (the artifacts are the same; only the checker differs):

    .venv/bin/python benchmarks/checker_functions.py
    .venv/bin/python benchmarks/checker_functions.py --sizes 1000,10000 --reps 3

Writes benchmarks/results/checker-functions-<onnx version>.json, or --out.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))


def artifact_bytes(n_ops: int, tmp: Path) -> bytes:
    """The serialized model tlnetron checks for the module view of ``blocks`` at ``n_ops``."""
    import scale

    import tlnetron.pipeline as api

    kept: list[bytes] = []
    real = api.check_onnx

    def keep(data: bytes, **kw: object) -> str | None:
        kept.append(data)
        return None  # timed below, on its own

    api.check_onnx = keep
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            api.export_ir(
                scale.ir_for("blocks", n_ops),
                tmp / "b.onnx.json",
                granularity="module",
                depth=None,
                show_buffers="meaningful",
                attachment=False,
            )
    finally:
        api.check_onnx = real
    return kept[-1]


def timed(fn: Any, reps: int) -> float:
    fn()
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="1000,2500,5000,10000,20000,40000", help="op counts (F = ops / 4 functions)")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args(argv)

    import onnx

    tmp = Path(tempfile.mkdtemp(prefix="tlnetron-checker-"))
    rows = []
    print(f"onnx {onnx.__version__}\n")
    from tlnetron.check.onnx_check import check_onnx

    print(
        "| ops | functions | artifact MB | check_model | check_model(full_check=True) | full check per "
        "function | tlnetron's check_onnx | split |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|---|")
    for n in [int(s) for s in args.sizes.split(",") if s]:
        data = artifact_bytes(n, tmp)
        model = onnx.ModelProto()
        model.ParseFromString(data)
        f = len(model.functions)
        plain = timed(lambda: onnx.checker.check_model(data), args.reps)
        full = timed(lambda: onnx.checker.check_model(data, full_check=True), args.reps)
        split: list[bool] = []
        ours = timed(lambda: check_onnx(data, functions=f, split=split), args.reps)
        rows.append(
            {
                "ops": n,
                "functions": f,
                "bytes": len(data),
                "check_s": plain,
                "full_check_s": full,
                "check_onnx_s": ours,
                "split": split[-1],
            }
        )
        print(
            f"| {n:,} | {f:,} | {len(data) / 2**20:.1f} | {plain * 1e3:.0f} ms | {full * 1e3:.0f} ms | "
            f"{full / max(f, 1) * 1e6:.0f} µs "
            f"| {ours * 1e3:.0f} ms | {'yes' if split[-1] else 'no'} |",
            flush=True,
        )
        del model
    for p in tmp.iterdir():
        p.unlink()
    tmp.rmdir()
    out = args.out or HERE / "results" / f"checker-functions-{onnx.__version__}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(
        json.dumps({"script": "benchmarks/checker_functions.py", "onnx": onnx.__version__, "rows": rows}, indent=1)
    )
    print(f"\nwrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

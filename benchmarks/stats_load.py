"""The default export quiet and beside another torch job (issue 31).

Times, on one trace, in one process: the whole ``tlnetron.export`` with its default
(activation statistics on), the same with ``activation_stats=False``, TorchLens' own
``torchlens.export.netron`` (the reference), and the trace read alone with statistics (their
share); first quiet, then while a separate process runs ``a @ a`` on all cores (spawned,
warmed, measured beside, killed). Reported: medians, loaded / quiet (target for the default:
at most 2.5), and the default's ratio to the reference in each setting.

    .venv/bin/python benchmarks/stats_load.py --model gpt2 --rounds 5
    .venv/bin/python benchmarks/stats_load.py --model t5 --granularities op,module,rolled
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import models  # noqa: E402

_LOAD = "import torch\na = torch.randn(1024, 1024)\nwhile True:\n    a @ a\n"
TARGET = 2.5


def _median_ms(fn: Callable[[], object], rounds: int) -> float:
    fn()
    times = []
    for _ in range(rounds):
        gc.collect()
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e3


def _rows(log: object, granularities: list[str], tmp: Path) -> dict[str, Callable[[], object]]:
    import torchlens.export

    import tlnetron
    from tlnetron.read import stats as activation_stats
    from tlnetron.read import trace as reader

    def read_with_stats() -> None:
        with activation_stats.one_thread():
            reader._read(log, "meaningful", True, True, None, True)

    rows: dict[str, Callable[[], object]] = {"read, statistics on": read_with_stats}
    for g in granularities:
        rows[f"{g}: tlnetron default"] = lambda g=g: tlnetron.export(log, tmp / "a.onnx.json", granularity=g)
        rows[f"{g}: tlnetron, statistics off"] = lambda g=g: tlnetron.export(
            log, tmp / "a.onnx.json", granularity=g, activation_stats=False
        )
        rows[f"{g}: reference"] = lambda g=g: torchlens.export.netron(
            log, tmp / "b.onnx.json", granularity=g, attachment=True
        )
    return rows


def _measure(rows: dict[str, Callable[[], object]], rounds: int) -> dict[str, float]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return {name: _median_ms(fn, rounds) for name, fn in rows.items()}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="gpt2", choices=models.ALL_MODELS)
    ap.add_argument("--granularities", default="op,module")
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    log, _ = models.trace(args.model)
    models.warm_torchlens()
    with tempfile.TemporaryDirectory() as tmp:
        rows = _rows(log, args.granularities.split(","), Path(tmp))
        quiet = _measure(rows, args.rounds)
        load = subprocess.Popen([sys.executable, "-c", _LOAD])
        try:
            time.sleep(2.0)  # the load's import and first products
            loaded = _measure(rows, args.rounds)
        finally:
            load.kill()
            with contextlib.suppress(Exception):
                load.wait(5)
    print(f"{args.model}: median of {args.rounds} (ms), quiet and beside a separate `a @ a` process on all cores\n")
    print("| what | quiet | beside `a @ a` | loaded / quiet | target |")
    print("|---|---:|---:|---:|---|")
    for k in quiet:
        ratio = loaded[k] / quiet[k]
        verdict = (f"<= {TARGET} {'PASS' if ratio <= TARGET else 'MISS'}") if k.endswith("tlnetron default") else ""
        print(f"| {k} | {quiet[k]:.1f} | {loaded[k]:.1f} | {ratio:.2f} | {verdict} |")
    print()
    for g in args.granularities.split(","):
        d, r = f"{g}: tlnetron default", f"{g}: reference"
        print(f"{g}: default / reference {quiet[d] / quiet[r]:.2f} quiet, {loaded[d] / loaded[r]:.2f} beside the load")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

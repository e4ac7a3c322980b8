"""Activation statistics quiet and beside another torch job (issue 31).

Times ``tlnetron.read.trace.read_trace`` on one trace with statistics off, on (torch's default
threads) and on inside ``one_thread`` (what the export does), first quiet, then while a
separate process runs ``a @ a`` on all cores; the load process is killed after.

    .venv/bin/python benchmarks/stats_load.py --model gpt2 --rounds 5
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import models  # noqa: E402

_LOAD = "import torch\na = torch.randn(1024, 1024)\nwhile True:\n    a @ a\n"


def _median_ms(fn, rounds: int) -> float:
    fn()
    times = []
    for _ in range(rounds):
        gc.collect()
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e3


def _measure(log, rounds: int) -> dict[str, float]:
    from tlnetron.read import stats as activation_stats
    from tlnetron.read import trace as reader

    def off() -> None:
        reader._read(log, "meaningful", True, True, None, False)

    def on_default() -> None:  # the read before issue 31: no thread scope
        reader._read(log, "meaningful", True, True, None, True)

    def on_one_thread() -> None:
        with activation_stats.one_thread():
            reader._read(log, "meaningful", True, True, None, True)

    return {name: _median_ms(fn, rounds) for name, fn in (("off", off), ("on_default_threads", on_default), ("on_one_thread", on_one_thread))}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="gpt2", choices=models.ALL_MODELS)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    log, _ = models.trace(args.model)
    quiet = _measure(log, args.rounds)
    load = subprocess.Popen([sys.executable, "-c", _LOAD])
    try:
        time.sleep(2.0)  # the load's import and first products
        loaded = _measure(log, args.rounds)
    finally:
        load.kill()
        with contextlib.suppress(Exception):
            load.wait(5)
    print(f"{args.model}: trace read, median of {args.rounds} (ms); loaded / quiet")
    for k in quiet:
        print(f"  {k:20s} quiet {quiet[k]:8.1f}   loaded {loaded[k]:8.1f}   x{loaded[k] / quiet[k]:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

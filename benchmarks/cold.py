"""One trace, one export, in a fresh process: what a script that exports once pays.

``run.py`` imports both exporters before it times anything, and its medians are warm. A user's
script (or one ``tlnetron export`` command) pays the import of the exporter and its first,
cold call once. Each measurement here is a fresh child process that imports torch and
torchlens, traces the model, then times, for ONE exporter only (so neither warms the other):

    import   ``from tlnetron import export`` (or ``import torchlens.export``, the reference),
             after torch and torchlens are imported: the import time the exporter adds
             (``import tlnetron`` alone loads neither onnx nor the exporter's code)
    first    the first export call (companion on, as in run.py)
    second   a second call on the same trace, for comparison

Runs alternate the two exporters, ``--runs`` times each; medians are reported. A last child
runs ``python -X importtime`` to name the modules that make that import slow.

    .venv/bin/python benchmarks/cold.py                      # loop and gpt2, module view, 3 runs
    .venv/bin/python benchmarks/cold.py --models lstm --granularity rolled --runs 5

Prints only (nothing is written).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
EXPORTERS = ("tlnetron", "reference")
_MARK = "--- tlnetron import starts ---"


def child(model: str, granularity: str, exporter: str, out_dir: str) -> dict[str, Any]:
    import torch  # noqa: F401
    import torchlens  # noqa: F401

    sys.path.insert(0, str(HERE))
    import models

    log, _ = models.trace(model)
    path = Path(out_dir) / f"{exporter}.onnx.json"
    t0 = time.perf_counter()
    if exporter == "tlnetron":
        from tlnetron import export as tl_export

        def export() -> None:
            tl_export(
                log, path, granularity=granularity, activation_stats=False
            )  # like the reference: no tensor statistics
    else:
        import torchlens.export as reference

        def export() -> None:
            reference.netron(log, path, granularity=granularity, attachment=True)

    import_s = time.perf_counter() - t0
    times = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(2):
            t0 = time.perf_counter()
            export()
            times.append(time.perf_counter() - t0)
    return {"import_s": import_s, "first_s": times[0], "second_s": times[1]}


def spawn(model: str, granularity: str, exporter: str) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        done = subprocess.run(
            [sys.executable, __file__, "--child", model, granularity, exporter, tmp],
            capture_output=True, text=True, check=False,
        )  # fmt: skip
    if done.returncode != 0:
        raise RuntimeError(f"child {model}/{granularity}/{exporter} failed:\n{done.stderr[-2000:]}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def import_profile(top: int = 6) -> tuple[float, list[tuple[str, float]]]:
    """``from tlnetron import export`` after torch and torchlens, under ``-X importtime``: the
    total and the modules with the most self time (seconds)."""
    code = f"import torch, torchlens, sys; sys.stderr.write({_MARK!r} + '\\n'); from tlnetron import export"
    done = subprocess.run([sys.executable, "-X", "importtime", "-c", code], capture_output=True, text=True, check=True)
    lines = done.stderr.split(_MARK, 1)[1].splitlines()
    rows: list[tuple[str, float, float]] = []
    for line in lines:
        if not line.startswith("import time:") or "|" not in line:
            continue
        parts = [p.strip() for p in line[len("import time:") :].split("|")]
        try:
            rows.append((parts[2].strip(), int(parts[0]) / 1e6, int(parts[1]) / 1e6))
        except ValueError:
            continue
    total = sum(self_s for _, self_s, _ in rows)
    worst = sorted(((name, self_s) for name, self_s, _ in rows), key=lambda r: -r[1])[:top]
    return total, worst


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default="loop,gpt2", help="comma list from models.py")
    ap.add_argument("--granularity", default="module", choices=("module", "op", "rolled"))
    ap.add_argument("--runs", type=int, default=3, help="fresh processes per exporter and model")
    ap.add_argument("--child", nargs=4, metavar=("MODEL", "VIEW", "EXPORTER", "DIR"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        print(json.dumps(child(*args.child)))
        return 0
    print("| model | view | exporter | import it adds | first export | import + first | second export |")
    print("|---|---|---|---:|---:|---:|---:|")
    for model in args.models.split(","):
        runs: dict[str, list[dict[str, Any]]] = {e: [] for e in EXPORTERS}
        for i in range(args.runs):
            for exporter in EXPORTERS if i % 2 == 0 else EXPORTERS[::-1]:
                runs[exporter].append(spawn(model, args.granularity, exporter))
        cold: dict[str, float] = {}
        for exporter in EXPORTERS:
            med = {k: statistics.median(r[k] for r in runs[exporter]) for k in ("import_s", "first_s", "second_s")}
            cold[exporter] = statistics.median(r["import_s"] + r["first_s"] for r in runs[exporter])
            print(
                f"| {model} | {args.granularity} | {exporter} | {med['import_s'] * 1e3:,.0f} ms | "
                f"{med['first_s'] * 1e3:,.0f} ms "
                f"| {cold[exporter] * 1e3:,.0f} ms | {med['second_s'] * 1e3:,.0f} ms |"
            )
        print(f"|  |  | ratio (import + first) |  |  | {cold['tlnetron'] / cold['reference']:.2f} |  |")
    total, worst = import_profile()
    print(
        f"\n`from tlnetron import export` after torch and torchlens, by -X importtime: {total * 1e3:,.0f} ms "
        "of self time; the largest:"
    )
    for name, self_s in worst:
        print(f"  {self_s * 1e3:8,.1f} ms  {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""tlnetron.export vs torchlens.export.netron in CPU instructions (callgrind), not seconds.

Wall-clock ratios on a shared VM swing with the neighbours (the same loop of exports can
take twice as long a minute later). Instructions executed do not: callgrind counts them, and the count for the same
code, inputs and hash seed agrees within ~0.2% from run to run, whatever else the machine
is doing. This script reports, per model and view, the instructions one export executes in
user space (``Ir``), for both exporters on the same trace in the same process:

    A = tlnetron.export(log, tmp/"a.onnx.json", granularity=g, activation_stats=False)  # as run.py
    B = torchlens.export.netron(log, tmp/"b.onnx.json", granularity=g, attachment=True)

Each model runs in one subprocess under ``valgrind --tool=callgrind`` with instrumentation
off until the measured calls (tracing runs uninstrumented). Per view: two warm-up calls of
each exporter, then ``--exports`` calls of A, then of B, each batch counted on its own
(callgrind client requests from a small helper compiled here with gcc).

What it does not count: time in the kernel (page faults, fsync, rename; ``run.py`` and
``scale.py`` measure those) and how fast the instructions run (cache misses). The ratio is
the CPU work ratio; run.py's time ratio is what users feel. With ``--stages`` it also counts
tlnetron's pipeline stages one by one (each called on its own, repeatedly, on the same
inputs), the noise-free form of profile_export.py's stage table.

    .venv/bin/python benchmarks/instructions.py                       # loop and lstm, every view
    .venv/bin/python benchmarks/instructions.py --models gpt2 --granularities module
    .venv/bin/python benchmarks/instructions.py --models loop --stages

Needs valgrind, gcc and valgrind's headers (Debian: ``apt-get install valgrind gcc``).
Writes benchmarks/results/instructions.json, or --out. A loop/lstm run takes ~5 minutes;
GPT-2 alone ~10 (the reference's export is ~50x slower under callgrind).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
VIEWS = ("module", "op", "rolled")
TARGETS = {"module": 0.33, "op": 0.5, "rolled": 0.5}
STAGES = (
    "read", "project", "validate nodes", "companion build", "companion validate", "companion bytes",
    "build protos + JSON (serialized, encoded)", "onnx.checker",
)  # fmt: skip

_HELPER_C = r"""
#include <valgrind/callgrind.h>
void tl_start(void) { CALLGRIND_ZERO_STATS; CALLGRIND_START_INSTRUMENTATION; CALLGRIND_TOGGLE_COLLECT; }
void tl_stop(void) { CALLGRIND_TOGGLE_COLLECT; CALLGRIND_DUMP_STATS; CALLGRIND_STOP_INSTRUMENTATION; }
"""


def _build_helper(workdir: Path) -> Path:
    for tool in ("valgrind", "gcc"):
        if shutil.which(tool) is None:
            raise SystemExit(f"instructions.py needs {tool} (Debian: apt-get install valgrind gcc)")
    src = workdir / "tl_callgrind.c"
    lib = workdir / "tl_callgrind.so"
    src.write_text(_HELPER_C)
    done = subprocess.run(["gcc", "-O2", "-shared", "-fPIC", "-o", str(lib), str(src)], capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"could not build the callgrind helper (are valgrind's headers installed?):\n{done.stderr}")
    return lib


# --------------------------------------------------------------------------- child


def _child(model: str, views: list[str], n: int, quick: bool, stages: bool, helper: str, tmp: str) -> None:
    """Runs under callgrind: each measured batch is one dump, in the order the parent expects."""
    import ctypes
    import gc
    import warnings

    sys.path.insert(0, str(HERE))
    import models

    import tlnetron
    import torchlens.export

    warnings.simplefilter("ignore")
    lib = ctypes.CDLL(helper)
    log, _ = models.trace(model, quick)
    a, b = Path(tmp) / "a.onnx.json", Path(tmp) / "b.onnx.json"

    def batch(fn: Any, *, gc_paused: bool = False) -> None:
        fn()
        fn()
        gc.collect()
        if gc_paused:
            gc.disable()
        lib.tl_start()
        for _ in range(n):
            fn()
        lib.tl_stop()
        gc.enable()

    for g in views:
        batch(lambda: tlnetron.export(log, a, granularity=g, activation_stats=False))
        batch(lambda: torchlens.export.netron(log, b, granularity=g, attachment=True))
        if stages:
            # An export runs its stages with the cyclic collector paused: so do they here.
            for fn in _stage_calls(log, g):
                batch(fn, gc_paused=True)


def _stage_calls(log: Any, g: str) -> list[Any]:
    """One callable per entry of STAGES, each running that stage alone on fixed inputs."""
    from tlnetron import perf, pipeline
    from tlnetron.build.companion import drawn_values
    from tlnetron.options import ExportOptions
    from tlnetron.build.companion import build_companion, companion_bytes
    from tlnetron.build.metadata import encode_metadata, model_metadata
    from tlnetron.build.artifact import build_model
    from tlnetron.read.trace import read_trace
    from tlnetron.check.onnx_check import check_onnx
    from tlnetron.check.validation import companion_problems

    # What export() reads with its defaults (the "meaningful" buffer policy reads less).
    options = {
        "show_buffers": "meaningful",
        "module_calls": g == "module",
        "brief_repeats": g == "rolled",
        "activation_stats": False,  # as the measured exports
    }
    ir = read_trace(log, **options)
    export_options = ExportOptions(granularity=g, show_buffers="meaningful")  # type: ignore[arg-type]
    projection = pipeline.project(ir, export_options)
    meta = model_metadata(projection, ir, counts=pipeline.counts(projection), warnings=[], baseline=None)
    rows = encode_metadata(meta)
    words = pipeline._validate_nodes(projection, True)  # worded once, read by the builder and the companion
    data = build_model(projection, rows, producer_version="0", graph_doc="view", words=words).proto
    companion = build_companion(projection, artifact_name="a.onnx.json", producer_version="0", words=words)

    def project() -> Any:
        perf.clear_memos()  # as every export starts
        return pipeline.project(ir, export_options)

    return [
        lambda: read_trace(log, **options),
        project,
        lambda: pipeline._validate_nodes(projection, True),
        lambda: build_companion(projection, artifact_name="a.onnx.json", producer_version="0", words=words),
        lambda: list(companion_problems(companion, pipeline.shown(projection, drawn_values(projection)), built=True)),
        lambda: companion_bytes(companion),
        lambda: build_model(projection, rows, producer_version="0", graph_doc="view", words=words),
        lambda: check_onnx(data),
    ]


# --------------------------------------------------------------------------- parent


def _dump_totals(prefix: Path) -> list[int]:
    """The ``summary:`` total of each dump ``<prefix>.<k>``, in dump order."""
    dumps = sorted(
        prefix.parent.glob(prefix.name + ".*"), key=lambda p: int(p.suffix[1:]) if p.suffix[1:].isdigit() else -1
    )
    totals = []
    for path in dumps:
        if not path.suffix[1:].isdigit():
            continue
        for line in path.read_text(errors="replace").splitlines():
            if line.startswith("summary:"):
                totals.append(int(line.split()[1]))
                break
    return totals


def run_model(
    model: str, views: list[str], n: int, quick: bool, stages: bool, helper: Path, work: Path
) -> dict[str, Any]:
    prefix = work / f"cg.{model}"
    files = work / model  # each model's child writes its own pair of files
    files.mkdir(exist_ok=True)
    cmd = [
        "valgrind", "--tool=callgrind", "--collect-atstart=no", "--instr-atstart=no",
        f"--callgrind-out-file={prefix}", sys.executable, str(Path(__file__).resolve()), "--child", model,
        "--granularities", ",".join(views), "--exports", str(n), "--helper", str(helper), "--tmp", str(files),
    ] + (["--quick"] if quick else []) + (["--stages"] if stages else [])  # fmt: skip
    env = dict(os.environ, PYTHONHASHSEED="0")  # set and dict orders fixed: the same count every run
    done = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if done.returncode != 0:
        return {"model": model, "error": done.stderr[-2000:]}
    totals = _dump_totals(prefix)
    per_view = 2 + (len(STAGES) if stages else 0)
    if len(totals) != per_view * len(views):
        return {"model": model, "error": f"expected {per_view * len(views)} dumps, found {len(totals)}"}
    rows = []
    for i, g in enumerate(views):
        chunk = totals[i * per_view : (i + 1) * per_view]
        ours, ref = chunk[0] / n, chunk[1] / n
        row: dict[str, Any] = {"view": g, "tlnetron_ir": round(ours), "reference_ir": round(ref), "ratio": ours / ref}
        if stages:
            row["stages_ir"] = {name: round(t / n) for name, t in zip(STAGES, chunk[2:])}
        rows.append(row)
    return {"model": model, "rows": rows}


def table(results: list[dict[str, Any]]) -> str:
    lines = [
        "| model | view | tlnetron (instructions / export) | reference | ratio | target |",
        "|---|---|---:|---:|---:|---:|",
    ]
    for res in results:
        if "error" in res:
            lines.append(
                f"| {res['model']} | - | error: {res['error'].splitlines()[-1] if res['error'] else '?'} | | | |"
            )
            continue
        for row in res["rows"]:
            lines.append(
                f"| {res['model']} | {row['view']} | {row['tlnetron_ir'] / 1e6:,.1f} M | "
                f"{row['reference_ir'] / 1e6:,.1f} M "
                f"| {row['ratio']:.3f} | <= {TARGETS[row['view']]} |"
            )
    out = "\n".join(lines)
    staged = [(res["model"], row) for res in results if "rows" in res for row in res["rows"] if "stages_ir" in row]
    if staged:
        head = "| stage | " + " | ".join(f"{m} {r['view']}" for m, r in staged) + " |"
        sep = "|---|" + "---:|" * len(staged)
        body = []
        for name in STAGES:
            cells = []
            for _, r in staged:
                v = r["stages_ir"][name]
                cells.append(f"{v / 1e6:,.2f} M ({100 * v / r['tlnetron_ir']:.0f}%)")
            body.append(f"| {name} | " + " | ".join(cells) + " |")
        out += (
            "\n\ntlnetron's stages, each alone (share of one whole export; files, warnings and frees are the rest):\n\n"
        )
        out += "\n".join([head, sep, *body])
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--models", default="loop,lstm", help="comma list from gpt2,t5,resnet,loop,lstm,bert")
    ap.add_argument("--granularities", default=",".join(VIEWS))
    ap.add_argument("--exports", type=int, default=2, help="measured exports per exporter and view (default 2)")
    ap.add_argument("--quick", action="store_true", help="small configs of each model")
    ap.add_argument("--stages", action="store_true", help="also count tlnetron's stages one by one")
    ap.add_argument("--jobs", type=int, default=1, help="models counted at once (one core each; counts are unaffected)")
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--helper", help=argparse.SUPPRESS)
    ap.add_argument("--tmp", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    views = [g for g in args.granularities.split(",") if g]
    if args.child:
        _child(args.child, views, args.exports, args.quick, args.stages, args.helper, args.tmp)
        return 0
    with tempfile.TemporaryDirectory(prefix="tlnetron-ir-") as tmp:
        work = Path(tmp)
        helper = _build_helper(work)
        names = [m for m in args.models.split(",") if m]
        print(f"counting {', '.join(names)} under callgrind ...", file=sys.stderr, flush=True)
        with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
            results = list(
                pool.map(lambda m: run_model(m, views, args.exports, args.quick, args.stages, helper, work), names)
            )
        for res in results:
            print(f"{res['model']}:", file=sys.stderr)
            for row in res.get("rows", []):
                print(
                    f"  {row['view']:7s} tlnetron {row['tlnetron_ir'] / 1e6:8.1f} M  reference "
                    f"{row['reference_ir'] / 1e6:8.1f} M  ratio {row['ratio']:.3f}",
                    file=sys.stderr,
                )
            if "error" in res:
                print(f"  error: {res['error']}", file=sys.stderr)
    print(table(results))
    out = args.out or HERE / "results" / ("instructions-quick.json" if args.quick else "instructions.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    sys.path.insert(0, str(HERE))
    import models

    doc = {
        "exports_per_batch": args.exports,
        "quick": args.quick,
        "results": results,
        "source": models.src_fingerprint(),
    }
    out.write_text(json.dumps(doc, indent=2) + "\n")
    print(f"\nwrote {out}", file=sys.stderr)
    return 1 if any("error" in r for r in results) else 0


if __name__ == "__main__":
    raise SystemExit(main())

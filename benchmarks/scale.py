"""How tlnetron's export scales with trace size (1k, 10k, 40k, 100k ops), and the reference's.

Part 1, synthetic (no torch): tlnetron's IR (``tlnetron.ir.trace``) is built directly and fed to
``tlnetron.pipeline.export_ir`` (companion on, everything validated and written, as ``export``
does after reading the trace). One fresh subprocess per (shape, size, view), so the peak
memory is that export's own. Shapes:

* ``chain``  a flat chain of ops, no modules
* ``blocks`` N residual blocks ``x + gelu(layer_norm(lin(x)))``: 4 ops and 2 module calls
             per block (``blocks.i`` and ``blocks.i.lin``), exactly what torchlens gives for
             the torch model of part 2 (checked by ``--verify``)
* ``deep``   the same blocks nested 4 module levels deep (stage > group > block > lin,
             fan-out 8)
* ``passes`` a stacked recurrent net: 8 cells (2 Linear + add + tanh) unrolled over T steps,
             so every layer has T passes and every module T calls

Per run: export time (median of the repetitions, after a warm-up export of a small IR of
the same shape), time per op, and peak memory = the process's peak RSS (VmHWM, reset through
``/proc/self/clear_refs`` just before the exports) minus the RSS just before them, i.e. what
the export adds on top of the IR it is given.

Part 2, torch-traced: the ``blocks`` model traced with torchlens at ~1k and ~10k ops;
tlnetron.export vs torchlens.export.netron (module and op views) on the same trace in one
subprocess per size; each export is capped at ``--timeout`` seconds (reported ">180 s").

    .venv/bin/python benchmarks/scale.py                  # full: 1k/10k/40k/100k + torch 1k/10k
    .venv/bin/python benchmarks/scale.py --quick          # small sizes, no 10k trace
    .venv/bin/python benchmarks/scale.py --no-torch --variants blocks --sizes 1000,10000

Writes benchmarks/results/scale.json and the plot benchmarks/scale.png (time per op and peak
memory vs op count). The plot needs matplotlib (``pip install matplotlib``).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import queue
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import warnings
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
VARIANTS = ("chain", "blocks", "deep", "passes")
GRANULARITIES = ("module", "op", "rolled")
DIM = 64

# ----------------------------------------------------------------------------- synthetic IR


class _Builder:
    """Hands out torchlens-style labels (``<type>_<type index>_<ordinal>[:pass]``) and OpIRs."""

    FLOPS = {
        "linear": 2 * DIM * DIM + DIM,
        "layernorm": 5 * DIM,
        "gelu": 14 * DIM,
        "add": DIM,
        "tanh": 10 * DIM,
        "relu": DIM,
        "mul": DIM,
    }
    FUNC = {
        "linear": "linear",
        "layernorm": "_VariableFunctionsClass.layer_norm",
        "gelu": "gelu",
        "add": "TensorBase.__add__",
        "tanh": "_VariableFunctionsClass.tanh",
        "relu": "relu",
        "mul": "TensorBase.__mul__",
    }

    def __init__(self) -> None:
        from tlnetron.ir.trace import ROLE_INPUT, OpIR

        self.OpIR = OpIR
        self.type_counts: dict[str, int] = {}
        self.ordinal = 0
        self.ops: list[Any] = [
            OpIR(
                name="input_1",
                layer="input_1",
                pass_index=1,
                num_passes=1,
                op_type="input",
                role=ROLE_INPUT,
                shape=(1, DIM),
                dtype="float32",
                nbytes=4 * DIM,
            )
        ]

    def new_layer(self, op_type: str) -> str:
        self.ordinal += 1
        self.type_counts[op_type] = self.type_counts.get(op_type, 0) + 1
        return f"{op_type}_{self.type_counts[op_type]}_{self.ordinal}"

    def op(
        self,
        layer: str,
        op_type: str,
        parents: tuple[str, ...],
        calls: tuple[str, ...] = (),
        *,
        pass_index: int = 1,
        num_passes: int = 1,
        path: str | None = None,
        linear: bool = False,
        where: str = "Block.forward",
    ) -> str:
        from tlnetron.ir.trace import ROLE_OP

        name = layer if num_passes == 1 else f"{layer}:{pass_index}"
        params = (("weight", (DIM, DIM)), ("bias", (DIM,))) if linear else ()
        self.ops.append(
            self.OpIR(
                name=name,
                layer=layer,
                pass_index=pass_index,
                num_passes=num_passes,
                op_type=op_type,
                role=ROLE_OP,
                shape=(1, DIM),
                dtype="float32",
                parents=parents,
                ports=tuple(f"arg{i}" for i in range(len(parents))),
                function=self.FUNC[op_type],
                module_calls=calls,
                module_path=path,
                duration_s=2e-5,
                flops=self.FLOPS[op_type],
                nbytes=4 * DIM,
                num_params=DIM * DIM + DIM if linear else 0,
                params=params,
                location=f"model.py:42 in {where}",
            )
        )
        return name

    def finish(self, last: str, calls: list[Any], model_class: str) -> Any:
        from tlnetron.ir.trace import ROLE_OUTPUT, Honesty, OpIR, TraceIR

        self.ops.append(
            OpIR(
                name="output_1",
                layer="output_1",
                pass_index=1,
                num_passes=1,
                op_type="output",
                role=ROLE_OUTPUT,
                shape=(1, DIM),
                dtype="float32",
                parents=(last,),
                ports=("arg0",),
            )
        )
        n_compute = len(self.ops) - 2
        return TraceIR(
            ops=tuple(self.ops),
            calls=tuple(calls),
            model_class=model_class,
            honesty=Honesty(capture_status="complete", state="pristine", trace_op_count=n_compute),
            torchlens_version="2.36.1",
            torch_version="2.13.0+cpu",
        )


def _lin_params() -> int:
    return DIM * DIM + DIM


def ir_chain(n_ops: int) -> Any:
    b = _Builder()
    x = "input_1"
    cycle = ("mul", "add", "tanh", "relu")
    for i in range(max(1, n_ops - 2)):
        t = cycle[i % 4]
        x = b.op(b.new_layer(t), t, (x, x) if t in ("mul", "add") else (x,), where="Model.forward")
    return b.finish(x, [], "Chain")


def ir_blocks(n_blocks: int) -> Any:
    """Exactly what torchlens + tlnetron.read.trace give for ``BlocksModel(n_blocks)`` (see --verify)."""
    from tlnetron.ir.trace import ModuleCallIR

    b = _Builder()
    calls = []
    x = "input_1"
    for i in range(n_blocks):
        blk, lin = f"blocks.{i}", f"blocks.{i}.lin"
        calls.append(
            ModuleCallIR(
                label=f"{blk}:1", address=blk, call_index=1, class_name="Block", parent=None, num_params=_lin_params()
            )
        )
        calls.append(
            ModuleCallIR(
                label=f"{lin}:1",
                address=lin,
                call_index=1,
                class_name="Linear",
                parent=f"{blk}:1",
                num_params=_lin_params(),
            )
        )
        outer = (f"{blk}:1",)
        h = b.op(b.new_layer("linear"), "linear", (x,), (*outer, f"{lin}:1"), path=lin, linear=True)
        h = b.op(b.new_layer("layernorm"), "layernorm", (h,), outer, path=blk)
        h = b.op(b.new_layer("gelu"), "gelu", (h,), outer, path=blk)
        x = b.op(b.new_layer("add"), "add", (x, h), outer, path=blk)
    return b.finish(x, calls, "BlocksModel")


def ir_deep(n_blocks: int, fanout: int = 8) -> Any:
    """Blocks nested 4 module levels deep: s{a} > s{a}.g{b} > s{a}.g{b}.b{c} > ...lin."""
    from tlnetron.ir.trace import ModuleCallIR

    b = _Builder()
    calls = []
    seen: set[str] = set()
    x = "input_1"
    for i in range(n_blocks):
        a, g, c = i // (fanout * fanout), (i // fanout) % fanout, i % fanout
        addrs = [f"s{a}", f"s{a}.g{g}", f"s{a}.g{g}.b{c}", f"s{a}.g{g}.b{c}.lin"]
        classes = ["Stage", "Group", "Block", "Linear"]
        parent = None
        for addr, cls in zip(addrs, classes):
            label = f"{addr}:1"
            if label not in seen:
                seen.add(label)
                n_inner = {"Stage": fanout * fanout, "Group": fanout, "Block": 1, "Linear": 1}[cls]
                calls.append(
                    ModuleCallIR(
                        label=label,
                        address=addr,
                        call_index=1,
                        class_name=cls,
                        parent=parent,
                        num_params=n_inner * _lin_params(),
                    )
                )
            parent = label
        outer = tuple(f"{a_}:1" for a_ in addrs[:3])
        h = b.op(b.new_layer("linear"), "linear", (x,), (*outer, f"{addrs[3]}:1"), path=addrs[3], linear=True)
        h = b.op(b.new_layer("layernorm"), "layernorm", (h,), outer, path=addrs[2])
        h = b.op(b.new_layer("gelu"), "gelu", (h,), outer, path=addrs[2])
        x = b.op(b.new_layer("add"), "add", (x, h), outer, path=addrs[2])
    return b.finish(x, calls, "DeepModel")


def ir_passes(steps: int, n_cells: int = 8) -> Any:
    """A stacked recurrent net unrolled over ``steps``: what torchlens gives for ``StackModel`` (see --verify)."""
    from tlnetron.ir.trace import ModuleCallIR

    b = _Builder()
    layers = [[b.new_layer(t) for t in ("linear", "linear", "add", "tanh")] for _ in range(n_cells)]
    calls = []
    for layer_i in range(n_cells):  # torchlens lists module calls grouped by module
        cell = f"cells.{layer_i}"
        calls += [
            ModuleCallIR(
                label=f"{cell}:{t}",
                address=cell,
                call_index=t,
                class_name="Cell",
                parent=None,
                num_params=2 * _lin_params(),
            )
            for t in range(1, steps + 1)
        ]
        for sub in ("ih", "hh"):
            calls += [
                ModuleCallIR(
                    label=f"{cell}.{sub}:{t}",
                    address=f"{cell}.{sub}",
                    call_index=t,
                    class_name="Linear",
                    parent=f"{cell}:{t}",
                    num_params=_lin_params(),
                )
                for t in range(1, steps + 1)
            ]
    h = ["input_1"] * n_cells
    inp = "input_1"
    for t in range(1, steps + 1):
        inp = "input_1"
        for layer_i, (l_ih, l_hh, l_add, l_tanh) in enumerate(layers):
            cell = f"cells.{layer_i}"
            kw = {"pass_index": t, "num_passes": steps, "where": "Cell.forward"}
            outer = (f"{cell}:{t}",)
            a = b.op(l_ih, "linear", (inp,), (*outer, f"{cell}.ih:{t}"), path=f"{cell}.ih", linear=True, **kw)
            c = b.op(l_hh, "linear", (h[layer_i],), (*outer, f"{cell}.hh:{t}"), path=f"{cell}.hh", linear=True, **kw)
            s = b.op(l_add, "add", (a, c), outer, path=cell, **kw)
            h[layer_i] = b.op(l_tanh, "tanh", (s,), outer, path=cell, **kw)
            inp = h[layer_i]
    return b.finish(inp, calls, "StackModel")


def ir_for(variant: str, n_ops: int) -> Any:
    if variant == "chain":
        return ir_chain(n_ops)
    if variant == "blocks":
        return ir_blocks(max(1, round((n_ops - 2) / 4)))
    if variant == "deep":
        return ir_deep(max(1, round((n_ops - 2) / 4)))
    if variant == "passes":
        return ir_passes(max(1, round((n_ops - 2) / 32)))
    raise ValueError(variant)


# ----------------------------------------------------------------------------- torch models


def torch_models() -> tuple[type, type]:
    import torch.nn.functional as F
    from torch import nn

    class Block(nn.Module):
        def __init__(self, d: int) -> None:
            super().__init__()
            self.lin = nn.Linear(d, d)
            self.d = d

        def forward(self, x: Any) -> Any:
            return x + F.gelu(F.layer_norm(self.lin(x), (self.d,)))

    class BlocksModel(nn.Module):
        def __init__(self, n: int, d: int = DIM) -> None:
            super().__init__()
            self.blocks = nn.ModuleList(Block(d) for _ in range(n))

        def forward(self, x: Any) -> Any:
            for blk in self.blocks:
                x = blk(x)
            return x

    class Cell(nn.Module):
        def __init__(self, d: int) -> None:
            super().__init__()
            self.ih = nn.Linear(d, d)
            self.hh = nn.Linear(d, d)

        def forward(self, x: Any, h: Any) -> Any:
            return (self.ih(x) + self.hh(h)).tanh()

    class StackModel(nn.Module):
        def __init__(self, steps: int, n_cells: int = 8, d: int = DIM) -> None:
            super().__init__()
            self.steps = steps
            self.cells = nn.ModuleList(Cell(d) for _ in range(n_cells))

        def forward(self, x: Any) -> Any:
            hs = [x] * len(self.cells)
            inp = x
            for _ in range(self.steps):
                inp = x
                for i, cell in enumerate(self.cells):
                    hs[i] = cell(inp, hs[i])
                    inp = hs[i]
            return inp

    return BlocksModel, StackModel


def _structure(ir: Any) -> tuple[Any, Any]:
    ops = [
        (
            o.name,
            o.layer,
            o.pass_index,
            o.num_passes,
            o.op_type,
            o.role,
            o.shape,
            o.dtype,
            o.parents,
            o.ports,
            o.module_calls,
            o.module_path,
            o.num_params,
            o.params,
        )
        for o in ir.ops
    ]
    calls = sorted((c.label, c.address, c.call_index, c.class_name, c.parent, c.num_params) for c in ir.calls)
    return ops, calls


def verify() -> list[str]:
    """Check the synthetic 'blocks' and 'passes' IRs equal what torchlens + tlnetron.read.trace give."""
    import torch
    import torchlens
    from tlnetron.read.trace import read_trace

    BlocksModel, StackModel = torch_models()
    out = []
    for name, model, synth in (
        ("blocks", BlocksModel(3), ir_blocks(3)),
        ("passes", StackModel(3, n_cells=8), ir_passes(3, n_cells=8)),
    ):
        torch.manual_seed(0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            real = read_trace(torchlens.trace(model.eval(), torch.randn(1, DIM)))
        r_ops, r_calls = _structure(real)
        s_ops, s_calls = _structure(synth)
        ok = r_ops == s_ops and r_calls == s_calls
        detail = ""
        if not ok:
            diffs = [(a, b) for a, b in zip(r_ops, s_ops) if a != b][:1] or [(r_calls[:2], s_calls[:2])]
            detail = f" first difference: real={diffs[0][0]} synthetic={diffs[0][1]}"
        out.append(
            f"synthetic '{name}' IR {'matches' if ok else 'DIFFERS from'} torchlens' trace of the torch model "
            f"({len(r_ops)} ops, {len(r_calls)} module calls).{detail}"
        )
    return out


# ----------------------------------------------------------------------------- children


def _rss_mb() -> float:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def _maxrss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def _status_mb(field: str) -> float | None:
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return None


def _reset_peak() -> bool:
    """Reset this process's peak RSS (VmHWM) to its current RSS (Linux >= 4.0)."""
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
        return True
    except OSError:
        return False


def fresh_page_us(mb: int = 256) -> float:
    """What this machine charges, in µs per 4 KiB page, to hand a process fresh memory:
    map ``mb`` MiB and write one byte per page (the page fault and the kernel zeroing the
    page), in a subprocess of its own so nothing here is reused.

    On a VM this is the host's cost too and it varies from hour to hour (seen on this
    machine: 1.5 µs, and 13 µs for guest memory not touched since boot). A 100k-op export
    takes ~300k fresh pages, so it moves that export by seconds; 1k-op exports reuse warm
    memory. The scale table's growth columns are read against it (tenth round)."""
    code = (
        "import mmap, time\n"
        f"n = {mb} << 20\n"
        "m = mmap.mmap(-1, n)\n"
        "t = time.perf_counter()\n"
        "for i in range(0, n, 4096):\n"
        "    m[i] = 1\n"
        "print((time.perf_counter() - t) / (n // 4096) * 1e6)\n"
    )
    cp = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return float(cp.stdout.strip())


def child_synthetic(variant: str, n_ops: int, g: str, reps: int, use_tracemalloc: bool) -> dict[str, Any]:
    from tlnetron.pipeline import export_ir

    tmp = Path(tempfile.mkdtemp(prefix="tlnetron-scale-"))
    path = tmp / "s.onnx.json"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        export_ir(
            ir_for(variant, 200), path, granularity=g, depth=None, show_buffers="meaningful", attachment=None
        )  # warm-up
    t0 = time.perf_counter()
    ir = ir_for(variant, n_ops)
    build_s = time.perf_counter() - t0
    gc.collect()
    # ru_maxrss survives exec (it would report the parent's peak): reset VmHWM instead
    reset = _reset_peak()
    rss0, maxrss0 = _rss_mb(), _maxrss_mb()
    times = []
    user_s: list[float] = []
    sys_s: list[float] = []
    faults: list[int] = []
    info: dict[str, Any] = {}
    for _ in range(reps):
        gc.collect()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            r0 = resource.getrusage(resource.RUSAGE_SELF)
            t0 = time.perf_counter()
            res = export_ir(ir, path, granularity=g, depth=None, show_buffers="meaningful", attachment=None)
            times.append(time.perf_counter() - t0)
            r1 = resource.getrusage(resource.RUSAGE_SELF)
        # CPU time in our process (user) and in the kernel for it (sys: mostly page faults,
        # as an export maps fresh memory), and the minor page faults themselves.
        user_s.append(r1.ru_utime - r0.ru_utime)
        sys_s.append(r1.ru_stime - r0.ru_stime)
        faults.append(r1.ru_minflt - r0.ru_minflt)
        info = {
            "nodes": res.node_count,
            "functions": res.function_count,
            "warnings": list(res.warnings),
            "artifact_mb": path.stat().st_size / 2**20,
            "companion_mb": res.companion.stat().st_size / 2**20 if res.companion else 0.0,
        }
        del res
    maxrss1 = _maxrss_mb()
    hwm = _status_mb("VmHWM") if reset else None
    peak = (hwm if hwm is not None else maxrss1) - rss0
    out = {
        "variant": variant,
        "granularity": g,
        "ops": len(ir.ops),
        "module_calls": len(ir.calls),
        "build_ir_s": build_s,
        "times": times,
        "median_s": statistics.median(times),
        "user_s": statistics.median(user_s),
        "sys_s": statistics.median(sys_s),
        "minor_faults": statistics.median(faults),
        "rss_before_mb": rss0,
        "maxrss_before_mb": maxrss0,
        "maxrss_after_mb": maxrss1,
        "vmhwm_after_mb": hwm,
        "peak_delta_mb": max(0.0, peak),
        "peak_method": "VmHWM reset via /proc/self/clear_refs"
        if hwm is not None
        else "ru_maxrss (may include an earlier peak)",
        **info,
    }
    if use_tracemalloc:
        import tracemalloc

        gc.collect()
        tracemalloc.start()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = export_ir(ir, path, granularity=g, depth=None, show_buffers="meaningful", attachment=None)
        out["tracemalloc_peak_mb"] = tracemalloc.get_traced_memory()[1] / 2**20
        tracemalloc.stop()
        del res
    for p in tmp.iterdir():
        p.unlink()
    tmp.rmdir()
    return out


def child_torch(n_blocks: int, plan: list[tuple[str, str]]) -> None:
    """Trace BlocksModel(n_blocks) once, then run the planned exports, reporting on stdout."""
    import torch
    import torchlens
    import torchlens.export
    import tlnetron

    BlocksModel, _ = torch_models()
    torch.manual_seed(0)
    model = BlocksModel(n_blocks).eval()
    x = torch.randn(1, DIM)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torchlens.trace(BlocksModel(1).eval(), x)  # torchlens' one-off torch wrapping
        t0 = time.perf_counter()
        log = torchlens.trace(model, x)
        trace_s = time.perf_counter() - t0
    print(json.dumps({"event": "traced", "trace_s": trace_s, "ops": len(log.ops)}), flush=True)
    tmp = Path(tempfile.mkdtemp(prefix="tlnetron-scale-torch-"))
    for who, g in plan:
        print(json.dumps({"event": "start", "who": who, "granularity": g}), flush=True)
        if who == "tlnetron":

            def call() -> None:
                tlnetron.export(log, tmp / "a.onnx.json", granularity=g, activation_stats=False)  # as run.py
        else:

            def call() -> None:
                torchlens.export.netron(log, tmp / "b.onnx.json", granularity=g, attachment=True)

        times: list[float] = []
        while True:  # first call, then 2 more when it is quick (< 5 s)
            gc.collect()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                t0 = time.perf_counter()
                call()
                times.append(time.perf_counter() - t0)
            if len(times) >= 3 or times[0] >= 5:
                break
        print(
            json.dumps(
                {"event": "done", "who": who, "granularity": g, "times": times, "median_s": statistics.median(times)}
            ),
            flush=True,
        )


def run_torch(n_blocks: int, plan: list[tuple[str, str]], timeout: float) -> dict[str, Any]:
    """Run child_torch in a subprocess; each export is killed after ``timeout`` s (trace time not counted)."""
    cmd = [
        sys.executable,
        str(Path(__file__).resolve()),
        "--child-torch",
        str(n_blocks),
        "--plan",
        ",".join(f"{w}:{g}" for w, g in plan),
    ]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines: queue.Queue[str | None] = queue.Queue()

    def pump() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.put(line)
        lines.put(None)

    threading.Thread(target=pump, daemon=True).start()
    result: dict[str, Any] = {"blocks": n_blocks, "exports": []}
    deadline = time.monotonic() + 3600  # tracing itself: generous
    current: dict[str, Any] | None = None
    while True:
        try:
            line = lines.get(timeout=max(0.1, deadline - time.monotonic()))
        except queue.Empty:
            if current is not None:
                current.update(timed_out=True, median_s=None)
                result["exports"].append(current)
                print(f"    {current['who']:9s} {current['granularity']:7s} > {timeout:.0f} s (killed)", flush=True)
            proc.kill()
            proc.wait()
            break
        if line is None:
            proc.wait()
            if proc.returncode:
                err = proc.stderr.read() if proc.stderr else ""
                result["error"] = err.strip().splitlines()[-1] if err.strip() else f"exit {proc.returncode}"
                if current is not None:
                    current["error"] = result["error"]
                    result["exports"].append(current)
            break
        try:
            msg = json.loads(line)
        except ValueError:
            continue
        if msg["event"] == "traced":
            result.update(trace_s=msg["trace_s"], ops=msg["ops"])
            print(f"  torch blocks={n_blocks}: traced {msg['ops']} ops in {msg['trace_s']:.1f} s", flush=True)
        elif msg["event"] == "start":
            current = {"who": msg["who"], "granularity": msg["granularity"]}
            deadline = time.monotonic() + timeout
        elif msg["event"] == "done":
            assert current is not None
            current.update(times=msg["times"], median_s=msg["median_s"], timed_out=False)
            result["exports"].append(current)
            print(
                f"    {current['who']:9s} {current['granularity']:7s} {msg['median_s']:.3f} s  (calls: "
                f"{', '.join(f'{t:.3f}' for t in msg['times'])})",
                flush=True,
            )
            current = None
            deadline = time.monotonic() + 3600
    return result


def run_synthetic(variant: str, n_ops: int, g: str, reps: int, use_tracemalloc: bool, timeout: float) -> dict[str, Any]:
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child-synthetic", f"{variant}:{n_ops}:{g}:{reps}"]
    if use_tracemalloc:
        cmd.append("--tracemalloc")
    try:
        cp = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {
            "variant": variant,
            "granularity": g,
            "ops_requested": n_ops,
            "error": f"timed out after {timeout:.0f} s",
        }
    if cp.returncode:
        tail = cp.stderr.strip().splitlines()[-1] if cp.stderr.strip() else f"exit {cp.returncode}"
        return {
            "variant": variant,
            "granularity": g,
            "ops_requested": n_ops,
            "error": tail,
            "stderr": cp.stderr[-4000:],
        }
    return json.loads(cp.stdout.strip().splitlines()[-1])


# ----------------------------------------------------------------------------- report


def _ms(s: float | None) -> str:
    if s is None:
        return "-"
    return f"{s * 1000:.0f} ms" if s < 10 else f"{s:.1f} s"


def _short_error(err: str) -> str:
    """'[artifact_invalid] ... onnx.checker: Model contains 25000 local functions, exceeding...' -> a table cell."""
    code = err.split("]", 1)[0].split("[")[-1] if "[" in err else "error"
    text = err.split("onnx.checker:", 1)[1] if "onnx.checker:" in err else err
    return f"REFUSED ({code}):{text.split('. ', 1)[0][:90]}"


def synthetic_table(rows: list[dict[str, Any]], sizes: list[int]) -> str:
    head = (
        "| shape | view | "
        + " | ".join(f"~{n:,} ops: export / per op / peak MB" for n in sizes)
        + " | per-op growth (worst size / smallest) | user-CPU per-op growth (worst / smallest) | page faults "
        "per op, kernel µs per op (largest) |"
    )
    lines = [head, "|---|---|" + "---:|" * len(sizes) + "---:|---:|---:|"]
    keys = sorted(
        {(r["variant"], r["granularity"]) for r in rows},
        key=lambda k: (VARIANTS.index(k[0]), GRANULARITIES.index(k[1])),
    )
    for v, g in keys:
        cells = []
        per_op = []
        user_per_op = []
        last: dict[str, Any] | None = None
        for n in sizes:
            r = next(
                (r for r in rows if r["variant"] == v and r["granularity"] == g and r.get("ops_requested") == n), None
            )
            if r is None:
                cells.append("-")
            elif "error" in r:
                cells.append(_short_error(r["error"]))
            else:
                us = r["median_s"] / r["ops"] * 1e6
                per_op.append(us)
                if "user_s" in r:
                    user_per_op.append(r["user_s"] / r["ops"])
                last = r
                fns = f" ({r['functions']:,} fns)" if r.get("functions") else ""
                cells.append(f"{_ms(r['median_s'])} / {us:.0f} µs / {r['peak_delta_mb']:.0f}{fns}")
        # Flat means flat at every size, not just at the ends: the worst size over the smallest.
        growth = f"{max(per_op[1:]) / per_op[0]:.2f}x" if len(per_op) >= 2 else "-"
        user_growth = (
            f"{max(user_per_op[1:]) / user_per_op[0]:.2f}x" if len(user_per_op) >= 2 and user_per_op[0] > 0 else "-"
        )
        kernel = "-"
        if last is not None and "minor_faults" in last:
            kernel = f"{last['minor_faults'] / last['ops']:.1f}, {last['sys_s'] / last['ops'] * 1e6:.1f} µs"
        lines.append(f"| {v} | {g} | " + " | ".join(cells) + f" | {growth} | {user_growth} | {kernel} |")
    return "\n".join(lines)


def torch_table(results: list[dict[str, Any]], timeout: float) -> str:
    lines = ["| ops | trace | view | tlnetron | reference | ratio |", "|---:|---:|---|---:|---:|---:|"]
    for r in results:
        by = {(e["who"], e["granularity"]): e for e in r["exports"]}
        for g in ("op", "module"):
            a, b = by.get(("tlnetron", g)), by.get(("reference", g))

            def fmt(e: dict[str, Any] | None) -> str:
                if e is None:
                    return "-"
                if e.get("timed_out"):
                    return f"> {timeout:.0f} s"
                if "error" in e:
                    return f"ERROR {e['error'][:60]}"
                return _ms(e["median_s"])

            ratio = "-"
            if a and b and a.get("median_s") and b.get("median_s"):
                ratio = f"{a['median_s'] / b['median_s']:.3f}"
            elif a and a.get("median_s") and b and b.get("timed_out"):
                ratio = f"< {a['median_s'] / timeout:.3f}"
            lines.append(
                f"| {r.get('ops', '?'):,} | {r.get('trace_s', 0):.1f} s | {g} | {fmt(a)} | {fmt(b)} | {ratio} |"
            )
    return "\n".join(lines)


def plot(rows: list[dict[str, Any]], torch_results: list[dict[str, Any]], out: Path, timeout: float) -> str | None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return "matplotlib is not installed: no plot (pip install matplotlib)"
    colors = {"chain": "tab:gray", "blocks": "tab:blue", "deep": "tab:green", "passes": "tab:purple"}
    styles = {"module": "-", "op": "--", "rolled": ":"}
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 5.0), dpi=80)
    for v in VARIANTS:
        for g in GRANULARITIES:
            pts = sorted(
                (r["ops"], r["median_s"] / r["ops"] * 1e6, r["peak_delta_mb"])
                for r in rows
                if r["variant"] == v and r["granularity"] == g and "error" not in r
            )
            if not pts:
                continue
            xs = [p[0] for p in pts]
            ax1.plot(xs, [p[1] for p in pts], styles[g], color=colors[v], marker="o", ms=3, lw=1.2, label=f"{v} {g}")
            ax2.plot(
                xs,
                [max(p[2], 0.1) for p in pts],
                styles[g],
                color=colors[v],
                marker="o",
                ms=3,
                lw=1.2,
                label=f"{v} {g}",
            )
    for who, marker, color in (("tlnetron", "s", "tab:blue"), ("reference", "x", "tab:red")):
        for g, fill in (("module", True), ("op", False)):
            pts = []
            for r in torch_results:
                e = next((e for e in r["exports"] if e["who"] == who and e["granularity"] == g), None)
                if e is None or "ops" not in r:
                    continue
                s = timeout if e.get("timed_out") else e.get("median_s")
                if s:
                    pts.append((r["ops"], s / r["ops"] * 1e6))
            if pts:
                pts.sort()
                ax1.plot(
                    [p[0] for p in pts],
                    [p[1] for p in pts],
                    "-" if g == "module" else "--",
                    marker=marker,
                    color=color,
                    ms=7,
                    lw=1.8,
                    mfc=color if fill else "none",
                    label=f"torch-traced: {who} {g}",
                )
    ax1.set(
        xscale="log",
        yscale="log",
        xlabel="ops in the trace",
        ylabel="export time per op (µs)",
        title="time per op (flat = linear)",
    )
    ax2.set(
        xscale="log",
        yscale="log",
        xlabel="ops in the trace",
        ylabel="peak RSS growth during export (MB)",
        title="peak memory (VmHWM - RSS before export)",
    )
    for ax in (ax1, ax2):
        ax.grid(True, which="both", alpha=0.3, lw=0.5)
    fails = sorted({(r["ops_requested"], r["variant"]) for r in rows if "error" in r and r["granularity"] == "module"})
    if fails:
        ax1.annotate(
            f"module view refused at ~{fails[0][0]:,} ops\n({', '.join(v for _, v in fails)}: "
            "onnx.checker's\n10,000 local-function limit)",
            xy=(fails[0][0], 0.3),
            xycoords=("data", "axes fraction"),
            xytext=(-4, 0),
            textcoords="offset points",
            ha="right",
            va="center",
            fontsize=7,
            color="tab:red",
        )
    handles, labels = ax1.get_legend_handles_labels()
    fig.legend(handles, labels, fontsize=7, ncol=4, loc="lower center", frameon=False)
    fig.tight_layout(rect=(0, 0.15, 1, 1))
    fig.savefig(out, dpi=80)
    plt.close(fig)
    return None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    # 40k: the module view's function count peaks there (~10,000 for blocks; past it, whole
    # levels are drawn inline to fit the checker's limit), where onnx 1.23's checker is slowest.
    ap.add_argument("--sizes", default="1000,10000,40000,100000", help="synthetic op counts")
    ap.add_argument("--variants", default=",".join(VARIANTS))
    ap.add_argument("--granularities", default=",".join(GRANULARITIES))
    ap.add_argument("--torch-sizes", default="1000,10000", help="op counts of the torch-traced runs")
    ap.add_argument("--no-torch", action="store_true")
    ap.add_argument("--no-verify", action="store_true")
    ap.add_argument("--timeout", type=float, default=180.0, help="cap on each torch-traced export (s)")
    ap.add_argument(
        "--tracemalloc",
        action="store_true",
        help="also measure the Python-heap peak with tracemalloc (one more export)",
    )
    ap.add_argument("--quick", action="store_true", help="sizes 300,3000; torch 1000 only")
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--plot", type=Path, default=None)
    ap.add_argument("--child-synthetic", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--child-torch", type=int, default=None, help=argparse.SUPPRESS)
    ap.add_argument("--plan", default="", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)

    if args.child_synthetic:
        v, n, g, reps = args.child_synthetic.split(":")
        out = child_synthetic(v, int(n), g, int(reps), args.tracemalloc)
        out["ops_requested"] = int(n)
        print(json.dumps(out))
        return 0
    if args.child_torch is not None:
        plan = [tuple(p.split(":")) for p in args.plan.split(",") if p]
        child_torch(args.child_torch, plan)  # type: ignore[arg-type]
        return 0

    if args.quick:
        args.sizes, args.torch_sizes = "300,3000", "1000"
    sizes = [int(s) for s in args.sizes.split(",") if s]
    variants = [v for v in args.variants.split(",") if v]
    grans = [g for g in args.granularities.split(",") if g]
    out_path = args.out or HERE / "results" / ("scale-quick.json" if args.quick else "scale.json")
    plot_path = args.plot or (HERE / "results" / "scale-quick.png" if args.quick else HERE / "scale.png")
    t_start = time.time()
    from importlib.metadata import version

    # The checker's cost depends on the onnx release (1.23's grows with functions squared).
    versions = {name: version(name) for name in ("onnx", "protobuf")}
    print(f"onnx {versions['onnx']}, protobuf {versions['protobuf']}", flush=True)

    page_us = [fresh_page_us()]
    print(f"fresh memory: {page_us[0]:.1f} µs per 4 KiB page", flush=True)
    notes: list[str] = []
    if not args.no_verify:
        notes = verify()
        for n in notes:
            print(n, flush=True)

    rows = []
    largest = max(sizes)
    for v in variants:
        for g in grans:
            # One (shape, view) at a time with its sizes back to back, then the small sizes
            # once more: a slow spell of a shared machine lands on every size of one row
            # instead of on one size of every row, and each small cell's median is over
            # both visits. Small exports are cheap, so there are more of them: 15 per visit
            # at ~1k ops, 7 at ~10k, 3 at 100k (the first export there is also in "times").
            order = [*sizes, *[n for n in reversed(sizes) if n != largest and n <= 20000]]
            seen: dict[int, dict[str, Any]] = {}
            for n in order:
                reps = 15 if n <= 2000 else 7 if n <= 20000 else 3
                r = run_synthetic(v, n, g, reps, args.tracemalloc, timeout=3600)
                first = seen.get(n)
                if first is None:
                    seen[n] = r
                elif "error" not in first and "error" not in r:
                    first["times"] = first["times"] + r["times"]
                    first["median_s"] = statistics.median(first["times"])
                    first["peak_delta_mb"] = max(first["peak_delta_mb"], r["peak_delta_mb"])
                    first["visits"] = 2
            for n in sizes:
                r = seen[n]
                rows.append(r)
                if "error" in r:
                    print(f"{v:7s} {g:7s} ~{n:>7,} ops  ERROR {r['error']}", flush=True)
                else:
                    print(
                        f"{v:7s} {g:7s} {r['ops']:>7,} ops  {_ms(r['median_s']):>8s}  "
                        f"{r['median_s'] / r['ops'] * 1e6:6.1f} µs/op  peak {r['peak_delta_mb']:7.1f} MB  "
                        f"(nodes {r['nodes']}, functions {r['functions']}, artifact {r['artifact_mb']:.1f} MB)",
                        flush=True,
                    )

    torch_results = []
    if not args.no_torch:
        plan = [("tlnetron", "op"), ("tlnetron", "module"), ("reference", "op"), ("reference", "module")]
        for n in [int(s) for s in args.torch_sizes.split(",") if s]:
            torch_results.append(run_torch(max(1, round((n - 2) / 4)), plan, args.timeout))

    page_us.append(fresh_page_us())
    st = synthetic_table(rows, sizes)
    print("\n## synthetic IR -> tlnetron.pipeline.export_ir\n")
    print(f"Fresh memory cost {page_us[0]:.1f} µs per 4 KiB page at the start, {page_us[1]:.1f} µs at the end.\n")
    print(st)
    tt = ""
    if torch_results:
        tt = torch_table(torch_results, args.timeout)
        print("\n## torch-traced blocks model: tlnetron.export vs torchlens.export.netron\n")
        print(tt)
    err = plot(rows, torch_results, plot_path, args.timeout)
    if err:
        print(f"\n{err}")
    else:
        print(f"\nplot: {plot_path} ({plot_path.stat().st_size / 1024:.0f} KB)")
    sys.path.insert(0, str(HERE))
    import models

    out_path.parent.mkdir(parents=True, exist_ok=True)
    out_path.write_text(
        json.dumps(
            {
                "script": "benchmarks/scale.py",
                "source": models.src_fingerprint(),
                "sizes": sizes,
                "versions": versions,
                "verify": notes,
                "synthetic": rows,
                "torch": torch_results,
                "synthetic_markdown": st,
                "torch_markdown": tt,
                "fresh_page_us": page_us,
                "timeout_s": args.timeout,
                "cpus": os.cpu_count(),
                "loadavg_end": os.getloadavg(),
                "wall_s": time.time() - t_start,
            },
            indent=1,
        )
    )
    print(f"wrote {out_path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

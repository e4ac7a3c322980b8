"""The checker runs with glibc's fastbins off on large models, and the heap is trimmed after it.

``onnx_check.check_onnx`` (through ``perf.checker_allocator``) turns glibc's fastbins off
(``mallopt(M_MXFAST, 0)``) while
``onnx.checker`` checks a model of at least ``FASTBINS_OFF_FROM_BYTES`` serialized bytes,
restores glibc's default afterwards, also when the check fails, and then hands the heap the
checker freed back to the system (``malloc_trim(0)``). Speed and memory measures only
(``benchmarks/README.md``): the bytes an export writes are the same either way.
"""

from __future__ import annotations

import os
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import onnx
import pytest

from tlnetron import TlnetronWarning, perf
from tlnetron.check import onnx_check
from tlnetron._generated.vocab import BufferPolicy, Granularity
from tlnetron.pipeline import export_ir
from tlnetron.ir.trace import ROLE_INPUT, ROLE_OP, ROLE_OUTPUT, OpIR, TraceIR

M_MXFAST = 1


def _chain(n: int) -> TraceIR:
    def op(name: str, role: str, parents: tuple[str, ...] = ()) -> OpIR:
        return OpIR(
            name=name,
            layer=name,
            pass_index=1,
            num_passes=1,
            op_type={ROLE_OP: "relu"}.get(role, role),
            role=role,
            shape=(4, 8),
            dtype="float32",
            parents=parents,
            ports=tuple(f"arg{i}" for i in range(len(parents))),
            function="torch.relu" if role == ROLE_OP else None,
            duration_s=1e-6 if role == ROLE_OP else None,
            flops=32 if role == ROLE_OP else None,
        )

    ops = [op("input_1", ROLE_INPUT)]
    for i in range(1, n + 1):
        ops.append(op(f"relu_{i}_{i}", ROLE_OP, (ops[-1].name,)))
    ops.append(op("output_1", ROLE_OUTPUT, (ops[-1].name,)))
    return TraceIR(ops=tuple(ops))


def _export(ir: TraceIR, path: Path) -> bytes:
    path.parent.mkdir(parents=True, exist_ok=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TlnetronWarning)  # a constructed IR has no capture outcome
        result = export_ir(
            ir, path, granularity=Granularity.OP, depth=None, show_buffers=BufferPolicy.MEANINGFUL, attachment=None
        )
    return result.artifact_bytes


def _recording(monkeypatch: pytest.MonkeyPatch, fail: bool = False) -> list[Any]:
    """Record mallopt and malloc_trim calls and the check between them (the real checker still runs)."""
    events: list[Any] = []
    monkeypatch.setattr(perf, "_mallopt", lambda: lambda param, value: events.append((param, value)) or 1)
    monkeypatch.setattr(perf, "_malloc_trim", lambda: lambda pad: events.append(("trim", pad)) or 1)
    real = onnx.checker.check_model

    def check(model: Any, full_check: bool = False) -> None:
        events.append("check")
        if fail:
            raise onnx.checker.ValidationError("made to fail")
        real(model, full_check=full_check)

    monkeypatch.setattr(onnx.checker, "check_model", check)
    return events


def _model_bytes(n: int, tmp_path: Path) -> bytes:
    from google.protobuf import json_format

    model = onnx.ModelProto()
    json_format.Parse(_export(_chain(n), tmp_path / "m.onnx.json"), model)
    return model.SerializeToString()


def test_fastbins_are_off_only_while_a_large_model_is_checked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    small = _model_bytes(10, tmp_path)
    monkeypatch.setattr(perf, "FASTBINS_OFF_FROM_BYTES", len(small) + 1)
    events = _recording(monkeypatch)
    assert onnx_check.check_onnx(small) is None
    assert events == ["check"]  # below the size: the allocator is left alone

    large = _model_bytes(40, tmp_path)
    assert len(large) >= perf.FASTBINS_OFF_FROM_BYTES
    events.clear()
    assert onnx_check.check_onnx(large) is None
    assert events == [(M_MXFAST, 0), "check", (M_MXFAST, perf._DEFAULT_MXFAST), ("trim", 0)]
    # A parsed model is measured by its serialized size too.
    events.clear()
    model = onnx.ModelProto.FromString(large)
    assert onnx_check.check_onnx(model) is None
    assert events == [(M_MXFAST, 0), "check", (M_MXFAST, perf._DEFAULT_MXFAST), ("trim", 0)]


def test_the_default_comes_back_when_the_check_fails(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    large = _model_bytes(40, tmp_path)
    monkeypatch.setattr(perf, "FASTBINS_OFF_FROM_BYTES", 1)
    events = _recording(monkeypatch, fail=True)
    assert onnx_check.check_onnx(large) == "made to fail"
    assert events == [(M_MXFAST, 0), "check", (M_MXFAST, perf._DEFAULT_MXFAST), ("trim", 0)]


@pytest.mark.parametrize(
    ("found", "tunable"),
    [("_mallopt", "glibc.malloc.mxfast=64"), ("_malloc_trim", "glibc.malloc.trim_threshold=131072")],
)
def test_glibc_functions_are_found_and_a_users_tuning_is_respected(
    monkeypatch: pytest.MonkeyPatch, found: str, tunable: str
) -> None:
    try:
        glibc = (os.confstr("CS_GNU_LIBC_VERSION") or "").startswith("glibc")
    except (ValueError, OSError, AttributeError):
        glibc = False
    getter = getattr(perf, found)
    getter.cache_clear()
    try:
        monkeypatch.delenv("GLIBC_TUNABLES", raising=False)
        assert (getter() is not None) == glibc
        getter.cache_clear()
        monkeypatch.setenv("GLIBC_TUNABLES", tunable)
        assert getter() is None
    finally:
        getter.cache_clear()


_RSS_AFTER_EXPORT = """
import gc, resource, sys, warnings
from pathlib import Path
sys.path.insert(0, {tests!r})
from test_allocator import _chain
from tlnetron import perf
from tlnetron._generated.vocab import BufferPolicy, Granularity
from tlnetron.pipeline import export_ir

def rss_mb():
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * resource.getpagesize() / 2**20

if sys.argv[1] == "untrimmed":
    perf._malloc_trim = lambda: None
ir = _chain(20000)
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    export_ir(_chain(200), Path({path!r}), granularity=Granularity.OP, depth=None,
              show_buffers=BufferPolicy.MEANINGFUL, attachment=None)
    gc.collect()
    before = rss_mb()
    export_ir(ir, Path({path!r}), granularity=Granularity.OP, depth=None,
              show_buffers=BufferPolicy.MEANINGFUL, attachment=None)
gc.collect()
print(rss_mb() - before)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux") or perf._malloc_trim() is None, reason="glibc on Linux only")
def test_a_large_export_gives_back_the_memory_the_checker_used(tmp_path: Path) -> None:
    """A real 20,000-op export in a fresh process: without the trim the process keeps the
    checker's freed heap (~100 MB here); with it, what the export leaves is a small part of that."""
    script = _RSS_AFTER_EXPORT.format(tests=str(Path(__file__).parent), path=str(tmp_path / "m.onnx.json"))
    grown = {}
    for mode in ("untrimmed", "trimmed"):
        out = subprocess.run([sys.executable, "-c", script, mode], capture_output=True, text=True)
        assert out.returncode == 0, out.stderr[-2000:]
        grown[mode] = float(out.stdout.strip().splitlines()[-1])
    assert grown["untrimmed"] > 60, grown  # the retention this measure is for is real here
    assert grown["trimmed"] < grown["untrimmed"] / 4, grown


def test_a_large_export_writes_the_same_bytes_with_fastbins_off(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The real mallopt on a real 6,000-op export: the artifact is byte-identical."""
    ir = _chain(6000)
    # Same file name in two folders: the companion names its artifact, and the export id
    # (in the artifact too) is derived from both files.
    with_fastbins_off = _export(ir, tmp_path / "a" / "m.onnx.json")
    model = onnx.ModelProto()
    from google.protobuf import json_format

    json_format.Parse(with_fastbins_off, model)
    assert model.ByteSize() >= perf.FASTBINS_OFF_FROM_BYTES  # the measure really applied
    monkeypatch.setattr(perf, "FASTBINS_OFF_FROM_BYTES", 1 << 62)
    assert _export(ir, tmp_path / "b" / "m.onnx.json") == with_fastbins_off

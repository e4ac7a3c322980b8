"""The checker runs with glibc's fastbins off on large models, and only there.

``validation.check_onnx`` turns glibc's fastbins off (``mallopt(M_MXFAST, 0)``) while
``onnx.checker`` checks a model of at least ``FASTBINS_OFF_FROM_BYTES`` serialized bytes, and
restores glibc's default afterwards, also when the check fails. It is a speed measure only
(``benchmarks/README.md``): the bytes an export writes are the same either way.
"""

from __future__ import annotations

import os
import warnings
from pathlib import Path
from typing import Any

import onnx
import pytest

from tlnetron import TlnetronWarning, validation
from tlnetron.api import export_ir
from tlnetron.ir import ROLE_INPUT, ROLE_OP, ROLE_OUTPUT, OpIR, TraceIR

M_MXFAST = 1


def _chain(n: int) -> TraceIR:
    def op(name: str, role: str, parents: tuple[str, ...] = ()) -> OpIR:
        return OpIR(
            name=name, layer=name, pass_index=1, num_passes=1, op_type={ROLE_OP: "relu"}.get(role, role),
            role=role, shape=(4, 8), dtype="float32", parents=parents,
            ports=tuple(f"arg{i}" for i in range(len(parents))), function="torch.relu" if role == ROLE_OP else None,
            duration_s=1e-6 if role == ROLE_OP else None, flops=32 if role == ROLE_OP else None,
        )  # fmt: skip

    ops = [op("input_1", ROLE_INPUT)]
    for i in range(1, n + 1):
        ops.append(op(f"relu_{i}_{i}", ROLE_OP, (ops[-1].name,)))
    ops.append(op("output_1", ROLE_OUTPUT, (ops[-1].name,)))
    return TraceIR(ops=tuple(ops))


def _export(ir: TraceIR, path: Path) -> bytes:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TlnetronWarning)  # a constructed IR has no capture outcome
        result = export_ir(ir, path, granularity="op", depth=None, show_buffers="meaningful", attachment=None)
    return result.artifact_bytes


def _recording(monkeypatch: pytest.MonkeyPatch, fail: bool = False) -> list[Any]:
    """Record mallopt calls and the check between them (the real checker still runs)."""
    events: list[Any] = []
    monkeypatch.setattr(validation, "_mallopt", lambda: lambda param, value: events.append((param, value)) or 1)
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
    monkeypatch.setattr(validation, "FASTBINS_OFF_FROM_BYTES", len(small) + 1)
    events = _recording(monkeypatch)
    assert validation.check_onnx(small) is None
    assert events == ["check"]  # below the size: the allocator is left alone

    large = _model_bytes(40, tmp_path)
    assert len(large) >= validation.FASTBINS_OFF_FROM_BYTES
    events.clear()
    assert validation.check_onnx(large) is None
    assert events == [(M_MXFAST, 0), "check", (M_MXFAST, validation._DEFAULT_MXFAST)]
    # A parsed model is measured by its serialized size too.
    events.clear()
    model = onnx.ModelProto.FromString(large)
    assert validation.check_onnx(model) is None
    assert events == [(M_MXFAST, 0), "check", (M_MXFAST, validation._DEFAULT_MXFAST)]


def test_the_default_comes_back_when_the_check_fails(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    large = _model_bytes(40, tmp_path)
    monkeypatch.setattr(validation, "FASTBINS_OFF_FROM_BYTES", 1)
    events = _recording(monkeypatch, fail=True)
    assert validation.check_onnx(large) == "made to fail"
    assert events == [(M_MXFAST, 0), "check", (M_MXFAST, validation._DEFAULT_MXFAST)]


def test_mallopt_is_found_on_glibc_and_a_users_tuning_is_respected(monkeypatch: pytest.MonkeyPatch) -> None:
    try:
        glibc = (os.confstr("CS_GNU_LIBC_VERSION") or "").startswith("glibc")
    except (ValueError, OSError, AttributeError):
        glibc = False
    validation._mallopt.cache_clear()
    try:
        monkeypatch.delenv("GLIBC_TUNABLES", raising=False)
        assert (validation._mallopt() is not None) == glibc
        validation._mallopt.cache_clear()
        monkeypatch.setenv("GLIBC_TUNABLES", "glibc.malloc.mxfast=64")
        assert validation._mallopt() is None
    finally:
        validation._mallopt.cache_clear()


def test_a_large_export_writes_the_same_bytes_with_fastbins_off(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The real mallopt on a real 6,000-op export: the artifact is byte-identical."""
    ir = _chain(6000)
    with_fastbins_off = _export(ir, tmp_path / "a.onnx.json")
    model = onnx.ModelProto()
    from google.protobuf import json_format

    json_format.Parse(with_fastbins_off, model)
    assert model.ByteSize() >= validation.FASTBINS_OFF_FROM_BYTES  # the measure really applied
    monkeypatch.setattr(validation, "FASTBINS_OFF_FROM_BYTES", 1 << 62)
    assert _export(ir, tmp_path / "b.onnx.json") == with_fastbins_off

"""The export pauses the cyclic garbage collector and always restores it (success or refusal)."""

from __future__ import annotations

import gc
from pathlib import Path

import pytest

import tlnetron
import tlnetron.perf
import tlnetron.pipeline
from tlnetron._generated.vocab import GRANULARITY, Granularity
from zoo import ZooTrace


def test_gc_is_paused_during_the_export_and_restored(
    zoo_trace: ZooTrace, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[bool] = []
    real = tlnetron.pipeline.check_onnx

    def spy(model: object, **kw: object) -> str | None:
        seen.append(gc.isenabled())
        return real(model, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(tlnetron.pipeline, "check_onnx", spy)
    assert gc.isenabled()
    tlnetron.export(zoo_trace("loop"), tmp_path / "m.onnx.json", granularity=Granularity.OP)
    assert seen == [False]
    assert gc.isenabled()


def test_gc_is_restored_after_a_refusal(zoo_trace: ZooTrace, tmp_path: Path) -> None:
    with pytest.raises(tlnetron.TlnetronError):
        tlnetron.export(zoo_trace("loop"), tmp_path / "m.onnx.json", baseline=5)
    assert gc.isenabled()


def test_a_disabled_gc_stays_disabled(zoo_trace: ZooTrace, tmp_path: Path) -> None:
    gc.disable()
    try:
        tlnetron.export(zoo_trace("loop"), tmp_path / "m.onnx.json", granularity=Granularity.OP)
        assert not gc.isenabled()
    finally:
        gc.enable()


@pytest.mark.parametrize("granularity", GRANULARITY)
def test_the_export_frees_what_it_built_before_collection_resumes(
    zoo_trace: ZooTrace, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, granularity: str
) -> None:
    """Objects still alive when the collector resumes are young: its first collection walks
    them all (~0.5 ms per GPT-2-sized export). The IR, projection and trees must be gone."""
    from tlnetron.ir.trace import OpIR
    from tlnetron.ir.drawing import PNode

    def built() -> int:
        return sum(1 for o in gc.get_objects() if type(o) in (OpIR, PNode))

    log = zoo_trace("loop")
    counts: list[int] = []

    class _Gc:
        def __getattr__(self, name: str) -> object:
            return getattr(gc, name)

        def enable(self) -> None:
            counts.append(built())
            gc.enable()

    gc.collect()
    before = built()
    monkeypatch.setattr(tlnetron.perf, "gc", _Gc())
    tlnetron.export(log, tmp_path / "m.onnx.json", granularity=granularity)
    assert counts and counts[-1] == before, f"{counts[-1] - before} IR/projection objects alive when collection resumed"

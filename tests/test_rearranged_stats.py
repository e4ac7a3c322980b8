"""Statistics of ops that only rearrange their one argument's elements (a view, a reshape, a
transpose, a contiguous copy): the reader gives them their source's statistics instead of
reading the same elements again, and the companion is the same byte for byte. Also what a
trace that saved only some outputs (``save=tl.func(...)``) gets: statistics where an output
was saved, none where it was not, and no refusal.
"""

from __future__ import annotations

from typing import Any

import pytest
import torch
import torchlens as tl
from torch import nn

import tlnetron
from tlnetron.ir.trace import TraceIR
from tlnetron.read import stats as stats_mod
from tlnetron.read import trace as trace_mod
from tlnetron.read.stats import tensor_stats
from tlnetron.read.trace import read_trace

from zoo import ZooTrace

from test_activation_stats import _close


def _read_counting(log: Any, monkeypatch: pytest.MonkeyPatch, **kw: Any) -> tuple[TraceIR, list[int]]:
    """The trace read with statistics, and the ops whose own tensor the gatherer was given."""
    given: list[int] = []
    add = stats_mod.Gather.add

    def counting(self: stats_mod.Gather, at: int, t: Any) -> Any:
        given.append(at)
        return add(self, at, t)

    with monkeypatch.context() as m:
        m.setattr(stats_mod.Gather, "add", counting)
        ir = read_trace(log, activation_stats=True, **kw)
    return ir, given


def _own(t: torch.Tensor) -> Any:
    """``t``'s statistics by torch's reductions, the rule the companion follows."""
    st = tensor_stats(t)
    assert st is not None
    return st


@pytest.mark.parametrize("name", ["gpt2", "t5", "resnet"])
def test_rearranging_ops_take_their_sources_statistics(zoo_trace: ZooTrace, name: str, monkeypatch: Any) -> None:
    """Every op with a saved output has statistics, each what torch computes on that op's own
    tensor (extremes and counts exactly), though the rearranging ops' tensors were not read."""
    log = zoo_trace(name)
    ir, given = _read_counting(log, monkeypatch, background_stats=True)
    late = ir.late_stats() if ir.late_stats is not None else {}
    stated = {at: op.stats if op.stats is not None else late.get(at) for at, op in enumerate(ir.ops)}
    rearranged = 0
    for at, (op, raw) in enumerate(zip(ir.ops, log.ops)):
        if op.role != "op" and op.role != "input":
            continue
        st = stated[at]
        assert st is not None, op.name
        expected = _own(raw.out)
        _close(st, expected)
        if st.min is not None and not raw.out.dtype.is_floating_point:
            assert (st.min, st.max) == (int(raw.out.min()), int(raw.out.max()))
        if at not in given:
            rearranged += 1
            assert str(raw.type) in trace_mod._REARRANGING, op.name
    assert rearranged >= {"gpt2": 41, "t5": 78, "resnet": 1}[name]  # of 104, 315 and 77 measured
    assert len(given) + rearranged == sum(st is not None for st in stated.values())


@pytest.mark.filterwarnings("ignore::tlnetron.errors.TlnetronWarning")
@pytest.mark.parametrize("name", ["gpt2", "t5", "llama_lm", "whisper"])
@pytest.mark.parametrize("granularity", ["op", "rolled", "module"])
def test_the_export_is_the_same_as_with_every_tensor_read(
    zoo_trace: ZooTrace, name: str, granularity: str, tmp_path: Any, monkeypatch: Any
) -> None:
    """Byte for byte, the companion and the artifact (its export id derived from both)."""
    log = zoo_trace(name)
    (tmp_path / "shared").mkdir()
    (tmp_path / "each").mkdir()
    shared = tlnetron.export(log, tmp_path / "shared" / "x.onnx.json", granularity=granularity)
    monkeypatch.setattr(trace_mod, "_rearranged_from", lambda *args: None)
    each = tlnetron.export(log, tmp_path / "each" / "x.onnx.json", granularity=granularity)
    assert shared.companion_bytes is not None and b'"min"' in shared.companion_bytes
    assert (shared.companion_bytes, shared.artifact_bytes) == (each.companion_bytes, each.artifact_bytes)


class _LooksRearranged(nn.Module):
    """Ops that only look like rearrangements, beside real ones."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        a = torch.relu(self.lin(x))
        bits = a.view(torch.int32)  # the same bytes read as integers: other values
        wide = a.unsqueeze(0).expand(3, 4, 8)  # each element three times: other counts
        flat = wide.reshape(12, 8)  # the expanded tensor's elements, rearranged
        turned = a.t().contiguous()  # a's elements
        half = a.half().view(32)  # a float16 copy, then a view of it
        wider = a.to(torch.float64)  # a cast that changes the dtype: other values
        same = a.to(torch.float32).float()  # casts to the dtype it has: the same elements
        return bits, flat, turned, half, wider, same


def test_what_only_looks_rearranged_is_read_itself(monkeypatch: Any) -> None:
    log = tl.trace(_LooksRearranged().eval(), torch.randn(4, 8, generator=torch.Generator().manual_seed(5)))
    ir, given = _read_counting(log, monkeypatch)
    ops = list(log.ops)
    bits = [at for at, raw in enumerate(ops) if raw.dtype == torch.int32 and str(raw.type) == "view"]
    wide = [at for at, raw in enumerate(ops) if str(raw.type) == "expand"]
    wider = [at for at, raw in enumerate(ops) if raw.dtype == torch.float64 and str(raw.type) == "to"]
    assert len(bits) == len(wide) == len(wider) == 1 and {bits[0], wide[0], wider[0]} <= set(given)
    skipped = {str(raw.type) for at, raw in enumerate(ops) if at not in given and ir.ops[at].stats is not None}
    assert skipped == {"unsqueeze", "reshape", "t", "contiguous", "view", "to", "float"}  # this view: of the half
    for op, raw in zip(ir.ops, log.ops):
        if op.stats is not None:
            _close(op.stats, _own(raw.out))


class _Small(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.a = nn.Linear(8, 8)
        self.b = nn.Linear(8, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.relu(self.a(x)).view(2, 2, 8).transpose(1, 2).contiguous().reshape(4, 8)
        out: torch.Tensor = self.b(h)
        return out


@pytest.mark.parametrize("saved", ["relu", "linear"])
def test_a_trace_that_saved_some_outputs_states_theirs(saved: str, tmp_path: Any) -> None:
    """``save=tl.func(...)`` keeps only some outputs: the export (statistics on, the default)
    states those and nothing for the rest, rather than refusing the trace."""
    log = tl.trace(_Small().eval(), torch.randn(4, 8), save=tl.func(saved))
    ir = read_trace(log, activation_stats=True)
    with_stats = {str(raw.type) for op, raw in zip(ir.ops, log.ops) if op.stats is not None}
    assert with_stats == {saved}
    for op, raw in zip(ir.ops, log.ops):
        if op.stats is not None:
            _close(op.stats, _own(raw.out))
    result = tlnetron.export(log, tmp_path / "x.onnx.json", granularity="op")
    assert result.companion_bytes is not None and b'"min"' in result.companion_bytes
    tl.save(log, tmp_path / "run.tlspec")  # what `tlnetron export run.tlspec` reads
    loaded = read_trace(tl.load(tmp_path / "run.tlspec"), activation_stats=True)
    assert [op.stats for op in loaded.ops] == [op.stats for op in ir.ops]


def test_a_trace_loaded_without_payloads_states_none(tmp_path: Any) -> None:
    """An ``audit`` save keeps no tensors (``has_saved_activation`` stays True, ``op.out`` is
    None): nothing is stated, for a view of such an op neither, and the export goes on."""
    log = tl.trace(_Small().eval(), torch.randn(4, 8))
    tl.save(log, tmp_path / "audit.tlspec", level="audit")
    loaded = tl.load(tmp_path / "audit.tlspec")
    assert all(op.out is None for op in loaded.ops)
    for background in (False, True):
        ir = read_trace(loaded, activation_stats=True, background_stats=background)
        late = ir.late_stats() if ir.late_stats is not None else {}
        assert all(op.stats is None for op in ir.ops) and late == {}
    result = tlnetron.export(loaded, tmp_path / "x.onnx.json", granularity="op")
    assert result.companion_bytes is not None and b'"min"' not in result.companion_bytes

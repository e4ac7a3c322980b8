"""The compiled single read of the activation statistics (``tlnetron.read._onepass``) and the
gatherer that feeds it: the same statistics as torch's own reductions on every layout a
captured tensor comes in, the cases it hands back to torch, and the background read the
export uses.

``.ci/run`` sets ``TLNETRON_ONEPASS_REQUIRED=1``: there the compiled read must be built, so
these tests never pass by skipping it.
"""

from __future__ import annotations

import dataclasses
import os
import time
import warnings
from typing import Any

import pytest
import torch

from tlnetron.ir.trace import TensorStats
from tlnetron.read import stats as stats_mod
from tlnetron.read.stats import Gather, tensor_stats
from tlnetron.read.trace import read_trace

from zoo import ZooTrace

from test_activation_stats import _close, _expected

needs_onepass = pytest.mark.skipif(
    not stats_mod.ONE_PASS and not os.environ.get("TLNETRON_ONEPASS_REQUIRED"),
    reason="tlnetron.read._onepass is not built here (no C compiler at install)",
)


def _gen(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def _gathered(t: Any, one_pass: bool = True) -> TensorStats | None:
    """``t``'s statistics through the gatherer, read in the background as the export does."""
    gather = Gather(one_pass=one_pass)
    now = gather.add(0, t)
    late = gather.start(background=True)()
    return now if now is not None else late.get(0)


def test_the_single_pass_is_built_where_required() -> None:
    if os.environ.get("TLNETRON_ONEPASS_REQUIRED"):
        assert stats_mod.ONE_PASS, "tlnetron.read._onepass did not build: is a C compiler installed?"
    if not stats_mod.ONE_PASS:
        pytest.skip("not built here")


_BIG = (1 << 20) + 4_099  # more than one block of the compiled read
_LAYOUTS = {
    "contiguous": lambda: torch.randn(3, 5, 7, generator=_gen(0)),
    "transposed": lambda: torch.randn(6, 9, generator=_gen(1)).t(),
    "permuted": lambda: torch.randn(2, 3, 4, 5, generator=_gen(2)).permute(2, 0, 3, 1),
    "split (gaps)": lambda: torch.randn(4, 12, generator=_gen(3)).split(4, dim=1)[1],
    "every other": lambda: torch.randn(50, 41, generator=_gen(4))[:, ::2],
    "strided 1-d, long": lambda: torch.randn(3 * 9_000, generator=_gen(5))[::3],
    "expanded (stride 0)": lambda: torch.randn(1, 7, generator=_gen(6)).expand(5, 7),
    "0-d": lambda: torch.tensor(-2.5),
    "one element": lambda: torch.tensor([0.0]),
    "relu zeros": lambda: torch.relu(torch.randn(999, generator=_gen(7))),
    "negative zero": lambda: torch.tensor([-0.0, 1.0, 0.0, -3.0]),
    "float64": lambda: torch.randn(33, 17, generator=_gen(8), dtype=torch.float64),
    "float16": lambda: torch.randn(257, generator=_gen(9)).half(),
    "bfloat16": lambda: torch.randn(257, generator=_gen(10)).bfloat16(),
    "requires grad": lambda: torch.randn(8, 8, generator=_gen(11), requires_grad=True) * 2,
    "several blocks": lambda: torch.randn(_BIG, generator=_gen(12)),
    "several blocks, float64": lambda: torch.randn(_BIG, generator=_gen(13), dtype=torch.float64),
    "several blocks, strided": lambda: torch.randn(2, _BIG, generator=_gen(14))[1, ::2],
    "huge but finite": lambda: torch.full((64,), 3.0e38).index_fill(0, torch.tensor([7]), -1.0e38),
    "int64": lambda: torch.randint(-(2**40), 2**40, (37, 5), generator=_gen(19)),
    "int64 past 2**53, exact extremes": lambda: torch.tensor([2**62 + 1, -(2**62) - 3, 7]),
    "int64, several blocks, strided": lambda: torch.randint(-9, 9, (2, _BIG), generator=_gen(20))[:, ::3],
    "int32 transposed": lambda: torch.randint(-1000, 1000, (9, 13), generator=_gen(21), dtype=torch.int32).t(),
    "int16": lambda: torch.randint(-(2**15), 2**15, (301,), generator=_gen(22), dtype=torch.int16),
    "int8 stepped": lambda: torch.randint(-128, 128, (400,), generator=_gen(23), dtype=torch.int8)[1::3],
    "uint8": lambda: torch.randint(0, 256, (3, 3, 33), generator=_gen(24), dtype=torch.uint8),
    "int, all ones (a mask)": lambda: torch.ones(2, 64, dtype=torch.int64),
    "positions": lambda: torch.arange(1024).unsqueeze(0),
    # read a second time, for the spread about the mean:
    "constant": lambda: torch.full((300,), 0.75),
    "mean far beyond the spread": lambda: torch.randn(4_099, generator=_gen(17)) * 0.01 + 1000.0,
    # read a second time, for the finite elements:
    "a NaN in the last block": lambda: torch.randn(_BIG, generator=_gen(15)).index_fill(
        0, torch.tensor([_BIG - 3]), float("nan")
    ),
    "an Inf": lambda: torch.randn(1_000, generator=_gen(16)).index_fill(0, torch.tensor([500]), float("-inf")),
    "nothing finite": lambda: torch.tensor([float("nan"), float("inf")]),
    "NaN beside zeros": lambda: torch.tensor([float("nan"), 0.0, -0.0, 2.0]),
    "masked scores (-inf) about a large mean, strided": lambda: (
        torch.randn(8, 64, generator=_gen(25)) * 1e-3 + 50.0
    ).masked_fill(torch.ones(8, 64, dtype=torch.bool).triu(1), float("-inf"))[:, ::2],
    "float16 with an Inf": lambda: (
        torch.randn(300, generator=_gen(26)).half().index_fill(0, torch.tensor([3]), float("inf"))
    ),
    # measured by torch:
    "negative view": lambda: torch._neg_view(torch.randn(10, generator=_gen(18))),
}


@needs_onepass
@pytest.mark.parametrize("name", list(_LAYOUTS))
def test_single_pass_states_what_torch_computes(name: str) -> None:
    t = _LAYOUTS[name]()
    expected = _expected((t.float() if t.dtype.is_floating_point and t.dtype.itemsize < 4 else t).detach())
    if not t.dtype.is_floating_point:  # integers keep exact extremes (float64 rounds past 2**53)
        expected = dataclasses.replace(expected, min=int(t.min()), max=int(t.max()))
    got = _gathered(t)
    _close(got, expected)
    assert got is not None and (got.min, got.max) == (expected.min, expected.max)  # extremes exactly
    assert got == _gathered(t)  # the same bytes give the same numbers
    if t.numel() < 100_000:  # beyond, torch's float32 norm drifts past float32 rounding (the single pass does not)
        _close(_gathered(t, one_pass=False), expected)


@needs_onepass
def test_squares_beyond_float64_give_no_std() -> None:
    t = torch.tensor([1e200, -3e200, 5.0], dtype=torch.float64)
    got = _gathered(t)
    assert got is not None and (got.min, got.max, got.std) == (-3e200, 1e200, None)
    assert got.mean is not None and abs(got.mean - (-2e200 + 5.0) / 3) < 1e186


@needs_onepass
@pytest.mark.parametrize(
    "t",
    [
        torch.tensor([True, False, True]),
        torch.ones(3, 4, dtype=torch.bool).t(),
        torch.zeros(5, dtype=torch.bool),
        torch.randn(50, 40, generator=_gen(27)) > 0,
    ],
    ids=["some", "all true, transposed", "none", "many"],
)
def test_single_pass_states_bool_as_torch_does(t: torch.Tensor) -> None:
    got = _gathered(t)
    assert got is not None and got == tensor_stats(t)  # the fraction of True, no std
    assert got.std is None and isinstance(got.min, int) and isinstance(got.max, int)


def test_what_the_single_pass_does_not_read_is_measured_at_once() -> None:
    gather = Gather()
    things = (
        torch.zeros(0, 3),
        torch.empty(2, device="meta"),
        torch.tensor([1 + 2j, 0j]),
        torch.arange(5).to(torch.uint32),
        torch._neg_view(torch.randn(3, generator=_gen(28))),
        3,
    )
    for at, t in enumerate(things):
        assert gather.add(at, t) == tensor_stats(t)
    assert gather.start(background=True)() == {}


@needs_onepass
def test_the_compiled_read_refuses_malformed_items() -> None:
    from tlnetron.read import _onepass  # type: ignore[attr-defined]

    t = torch.ones(4)
    good = (t.data_ptr(), 0, (4,), (1,))
    assert _onepass.onepass([good]) == [(1.0, 1.0, 1.0, 0.0, 0, 0, 0, 4)]
    for bad in (
        (t.data_ptr(), 8, (4,), (1,)),  # no such kind
        (t.data_ptr(), -1, (4,), (1,)),
        (t.data_ptr(), 0, (4,), (1, 1)),  # sizes and strides disagree
        (t.data_ptr(), 0, (0,), (1,)),  # an empty tensor is measured by torch
        (t.data_ptr(), 0, (4,), (-1,)),
        (0, 0, (4,), (1,)),
        (t.data_ptr(), 0, tuple([1] * 17), tuple([1] * 17)),
    ):
        with pytest.raises(ValueError):
            _onepass.onepass([good, bad])
    with pytest.raises(TypeError):
        _onepass.onepass([(t.data_ptr(), 0, 4, (1,))])
    with pytest.raises(TypeError):
        _onepass.onepass(5)


class _Kept:
    """Something ``start`` must hold while its thread reads (weakly referenced here)."""


@needs_onepass
def test_the_native_thread_reads_what_onepass_reads() -> None:
    """``_onepass.start`` gives ``onepass``'s list, once; holds what it is given to keep until
    then; and refuses a malformed item before any thread starts."""
    import gc
    import weakref

    from tlnetron.read import _onepass  # type: ignore[attr-defined]

    gather = Gather(compiled_queue=False)
    for at, make in enumerate(_LAYOUTS.values()):
        gather.add(at, make())
    items = gather._items
    assert len(items) > 30
    keep = _Kept()
    gone = weakref.ref(keep)
    reading = _onepass.start(items, keep)
    del keep
    gc.collect()
    assert gone() is not None  # held while the thread may still read
    first = reading.result()
    assert first == _onepass.onepass(items)
    assert reading.result() is first  # computed once
    gc.collect()
    assert gone() is None  # and let go once read
    assert _onepass.start([], None).result() == []
    for _ in range(50):  # a handle dropped unread waits for its thread before freeing the items
        _onepass.start(items, gather._tensors)
    t = torch.ones(4)
    for bad in ([(t.data_ptr(), 8, (4,), (1,))], [(t.data_ptr(), 0, (4,), (-1,))]):
        with pytest.raises(ValueError):
            _onepass.start(bad, t)
    for args in ((5, None), ([(t.data_ptr(), 0, 4, (1,))], None), ([],)):
        with pytest.raises(TypeError):
            _onepass.start(*args)


@needs_onepass
@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork here")
def test_a_forked_child_reads_for_itself() -> None:
    """A child forked while the thread reads has no thread to wait for: it reads its copy of
    the tensors again, from nothing, and states what the parent states."""
    from tlnetron.read import _onepass  # type: ignore[attr-defined]

    gather = Gather(compiled_queue=False)
    for at in range(6):  # strided, so the thread is surely still reading when the fork comes
        gather.add(at, torch.randn(2048, 4096, generator=_gen(60 + at))[:, ::2])
    items = gather._items
    expected = _onepass.onepass(items)
    reading = _onepass.start(items, gather._tensors)
    read_end, write_end = os.pipe()
    with warnings.catch_warnings():  # Python 3.12+ warns of forking a threaded process: that is the point here
        warnings.simplefilter("ignore", DeprecationWarning)
        pid = os.fork()
    if pid == 0:  # pragma: no cover - the child reports through the pipe
        os.close(read_end)
        os.write(write_end, b"1" if reading.result() == expected else b"0")
        os._exit(0)
    os.close(write_end)
    waited = 0.0
    while os.waitpid(pid, os.WNOHANG) == (0, 0) and waited < 60:  # a child joining no thread would hang
        time.sleep(0.05)
        waited += 0.05
    if waited >= 60:
        os.kill(pid, 9)
        os.waitpid(pid, 0)
    with os.fdopen(read_end, "rb") as answer:
        assert answer.read() == b"1"
    assert reading.result() == expected


@needs_onepass
def test_a_refused_start_is_read_again_on_the_callers_thread() -> None:
    """A malformed queue (never made by ``add``) raises from the statistics' call, on the
    caller's thread, not from a thread nobody joins."""
    gather = Gather()
    gather.add(0, torch.ones(3))
    gather._items.append((0, 0, (1,), (1,)))
    late = gather.start(background=True)
    with pytest.raises(ValueError):
        late()


class _Marked(torch.Tensor):
    """A tensor subclass: the compiled queue leaves it to the Python path."""


def _queue_of(things: list[Any], compiled: bool) -> tuple[list[Any], list[int], list[Any]]:
    gather = Gather(compiled_queue=compiled)
    now = [gather.add(at, t) for at, t in enumerate(things)]
    # a float16 copy has its own address: name each queued item by its tensor instead
    items = [(t.dtype, kind, tuple(shape), tuple(stride), ptr == t.data_ptr())
             for t, (ptr, kind, shape, stride) in zip(gather._tensors, gather._items)]  # fmt: skip
    assert all(item[-1] for item in items)
    return now, list(gather._at), items


@needs_onepass
def test_the_compiled_queue_takes_what_the_python_queue_takes(zoo_trace: ZooTrace) -> None:
    """``_onepass.enqueue`` queues a tensor only as ``Gather.add``'s Python would, and declines
    (queueing nothing) everything else, which the Python then decides."""
    odd: list[Any] = [
        torch.zeros(0, 3),
        torch.empty(2, device="meta"),
        torch.tensor([1 + 2j, 0j]),
        torch.arange(5).to(torch.uint32),
        torch._neg_view(torch.randn(3, generator=_gen(40))),
        torch.randn(4, generator=_gen(41)).half(),
        torch.randn(4, generator=_gen(42)).bfloat16(),
        torch.randn(2, 3, generator=_gen(43)).to_sparse(),
        torch.ones([1] * 17),
        torch.ones([1] * 16),
        torch.tensor(2.5),
        torch.nn.Parameter(torch.randn(3, generator=_gen(44))),
        torch.randn(3, generator=_gen(45), requires_grad=True) * 2,
        torch.randn(3, generator=_gen(46)).as_subclass(_Marked),
        torch.arange(6, dtype=torch.int16).reshape(2, 3).t(),
        torch.ones(3, dtype=torch.bool),
        None,
        3,
        (torch.ones(2),),
    ]
    odd += [make() for make in _LAYOUTS.values()]
    odd += [op.out for op in zoo_trace("gpt2").ops]
    compiled, python = _queue_of(odd, compiled=True), _queue_of(odd, compiled=False)
    assert compiled == python
    assert len(compiled[1]) > len(_LAYOUTS)  # the real trace's tensors were queued, not declined


@needs_onepass
def test_the_compiled_queue_refuses_a_malformed_state() -> None:
    from tlnetron.read import _onepass  # type: ignore[attr-defined]

    state = Gather()._state
    assert _onepass.enqueue(state, 0, torch.ones(2)) is True
    assert _onepass.enqueue(state, 1, torch.zeros(0)) is False
    for bad in (state[:8], (*state[:6], (), [], []), (*state[:2], [torch.Tensor], *state[3:])):
        with pytest.raises(TypeError):
            _onepass.enqueue(bad, 2, torch.ones(2))
    with pytest.raises(TypeError):
        _onepass.enqueue(state, 3)
    assert len(state[6]) == len(state[7]) == len(state[8]) == 1  # nothing half-queued


@pytest.mark.parametrize("name", ["gpt2", "multi_output_mixed", "scalar_and_empty", "bn_cnn_train"])
def test_background_read_gives_the_same_statistics(zoo_trace: ZooTrace, name: str) -> None:
    """The export's read (statistics in a thread, given late) states exactly what a plain
    read does, and with the compiled read off, torch's reductions agree with it."""
    log = zoo_trace(name)
    plain = read_trace(log)
    late = read_trace(log, background_stats=True)
    assert [op.name for op, _ in late.op_stats()] == [op.name for op in plain.ops if op.stats is not None]
    assert [st for _, st in late.op_stats()] == [op.stats for op in plain.ops if op.stats is not None]
    if stats_mod.ONE_PASS:
        assert late.late_stats is not None and any(op.stats is None for op in late.ops)
    checked = 0
    gather = Gather(one_pass=False)
    for at, op in enumerate(log.ops):
        mine = gather.add(at, op.out)
        if mine is not None and plain.ops[at].stats is not None:
            _close(plain.ops[at].stats, mine)
            checked += 1
    assert checked == sum(op.stats is not None for op in plain.ops)

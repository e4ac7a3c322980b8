"""Statistics of one captured tensor (activation statistics).

The trace reader (:mod:`tlnetron.read.trace`, the only module that touches torchlens) reads each
op's saved output (``op.out``) and hands it here; this module sees only torch tensors, and
imports torch when first called.
"""

from __future__ import annotations

import contextlib
import math
from types import ModuleType
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from ..ir.trace import TensorStats

_onepass: ModuleType | None
try:  # the compiled single read (setup.py); without it, torch and numpy read each tensor
    from . import _onepass
except ImportError:  # pragma: no cover - a build without a C compiler
    _onepass = None

__all__ = ["ONE_PASS", "Gather", "finite_float", "merged_stats", "one_thread", "tensor_stats"]

ONE_PASS = _onepass is not None
"""True when this build reads real tensors (floats, integers, bool) with the compiled single pass."""
_BOOL_KIND = _onepass.KINDS.index("bool") if _onepass is not None else -1


@contextlib.contextmanager
def one_thread(active: bool = True) -> Iterator[None]:
    """Run torch's reductions on one intra-op thread while inside, restoring the count after.

    The captured tensors are small and many: waking torch's thread pool for each reduction
    costs more than it saves, and far more when another process holds the cores
    (benchmarks/README.md, "Activation statistics beside a load").
    """
    if not active:
        yield
        return
    import torch

    before = torch.get_num_threads()
    if before == 1:
        yield
        return
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def finite_float(value: Any) -> float | None:
    """``value`` as a finite float; None for None, NaN, infinities and what is no number."""
    if value is None:
        return None
    try:
        f = float(value)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None


def tensor_stats(t: Any) -> TensorStats | None:
    """Statistics of one captured tensor (see :class:`~tlnetron.ir.trace.TensorStats`), or None
    for what is not a plain dense tensor with data (sparse, meta, quantized, ...).

    A finite tensor on the CPU takes numpy's min and max and, only when its range holds 0,
    a count of its zeros (exact whatever the order of reading), then torch's ``sum`` and
    ``vector_norm`` for the mean and std; only when the min or the max is not finite are NaN
    and Inf counted and the finite elements measured again (with ``std_mean``).
    float16 / bfloat16 / float8 are computed in float32 (their sums would round), integer
    mean and std in float64 with exact integer min / max; bool gives min / max / mean (the
    fraction of True) and no std; complex gives only the counts. A dtype torch's kernels
    do not reduce (e.g. uint64 on CPU) gives None rather than failing the export.
    """
    import torch

    if not isinstance(t, torch.Tensor) or t.layout != torch.strided or t.is_meta or t.is_quantized:
        return None
    try:
        return _stats(torch, t)
    except (RuntimeError, NotImplementedError, TypeError, ValueError):
        return None


def _stats(torch: Any, t: Any) -> TensorStats:
    if t.requires_grad:  # a detached tensor's reductions record no graph: no no_grad scope
        t = t.detach()
    numel = t.numel()
    if numel == 0:
        return TensorStats(numel=0)
    dtype = t.dtype
    if dtype.is_complex:
        nan = int(torch.isnan(t).sum())
        inf = int(torch.isinf(t).sum())
        return TensorStats(numel, nan, inf, int((t == 0).sum()))
    if dtype == torch.bool:
        trues = int(t.sum())
        return TensorStats(numel, 0, 0, numel - trues, 1 if trues == numel else 0, 1 if trues else 0, trues / numel)
    if not dtype.is_floating_point:  # integers: exact min / max, mean and std in float64
        lo, hi = torch.aminmax(t)
        sd, mu = torch.std_mean(t.double(), correction=0)
        nonzero = torch.count_nonzero(t)
        lo_v, hi_v, nonzero_v = torch.stack((lo.long(), hi.long(), nonzero)).tolist()
        mu_v, sd_v = torch.stack((mu, sd)).tolist()
        return TensorStats(
            numel, 0, 0, numel - int(nonzero_v), int(lo_v), int(hi_v), finite_float(mu_v), finite_float(sd_v)
        )
    if dtype.itemsize < 4:  # float16, bfloat16, float8: summed in float32
        t = t.float()
    a = _numpy_view(t)
    lo, hi = _extremes(torch, t, a)
    nan = inf = 0
    if math.isfinite(lo) and math.isfinite(hi):
        zeros_all = 0 if lo > 0 or hi < 0 else _zeros(torch, t, a)
        # mean and variance from the sum and the sum of squares (the norm), torch's own
        # reductions; as exact as std_mean's while |mean| <= 2 std (cancellation costs at
        # most a factor 5 of float32's rounding); otherwise the spread about the mean is
        # measured directly (two passes, as exact, and far faster than std_mean's).
        total, norm = t.sum().item(), torch.linalg.vector_norm(t).item()
        mean = total / numel
        var = norm * norm / numel - mean * mean
        if math.isfinite(var) and var >= 0.25 * mean * mean:
            values = [lo, hi, mean, math.sqrt(var)]
        elif math.isfinite(mean):
            spread = torch.linalg.vector_norm(t - mean).item()
            values = [lo, hi, mean, spread / math.sqrt(numel)]
        else:
            sd, mu = torch.std_mean(t, correction=0)
            values = [lo, hi, float(mu), float(sd)]
    else:
        # Rare: count NaN and Inf, and measure the finite elements alone.
        zeros_all = _zeros(torch, t, a)
        mask = torch.isfinite(t)
        n_finite = int(mask.sum())
        nan = int(torch.isnan(t).sum())
        inf = numel - n_finite - nan
        if n_finite == 0:
            return TensorStats(numel, nan, inf, zeros_all)
        t = t[mask]
        lo, hi = torch.aminmax(t)
        sd, mu = torch.std_mean(t, correction=0)
        values = torch.stack((lo, hi, mu, sd)).tolist()
    return TensorStats(
        numel,
        nan,
        inf,
        zeros_all,
        finite_float(values[0]),
        finite_float(values[1]),
        finite_float(values[2]),
        finite_float(values[3]),
    )


def _numpy_view(t: Any) -> Any:
    """``t``'s data as a numpy array without a copy (None off the CPU)."""
    if t.device.type != "cpu":
        return None
    try:
        return t.numpy()
    except RuntimeError:  # a negative-bit view: materialised
        return t.resolve_neg().numpy()


def _extremes(torch: Any, t: Any, a: Any) -> tuple[float, float]:
    """The min and the max (NaN when any element is NaN): numpy's vectorised reductions read
    a CPU tensor in place (``a``) at several times the speed of ``aminmax``; torch's elsewhere."""
    if a is not None:
        return float(a.min()), float(a.max())
    lo, hi = torch.aminmax(t)
    return float(lo), float(hi)


def _zeros(torch: Any, t: Any, a: Any) -> int:
    """How many elements equal 0 (-0.0 too): a comparison and a count of its bytes, several
    times faster than ``count_nonzero`` of the floats."""
    if a is not None:
        import numpy

        return int(numpy.count_nonzero(a == 0))
    return int(t.numel()) - int(torch.count_nonzero(t))


_Item = tuple[int, int, Any, Any]  # a tensor for the single pass: data pointer, kind, sizes, strides
# its min, max, mean, var (of the finite elements), zeros, NaNs, Infs, and its element count
_Raw = tuple[Any, Any, float | None, float | None, int, int, int, int]


class Gather:
    """The saved outputs' statistics, gathered op by op as the trace is read.

    Real tensors on the CPU (floats, integers, bool) are queued and read together by the
    compiled single pass (one read each for min, max, sum, sum of squares and the zero /
    NaN / Inf counts, without the GIL, so it can run in a thread beside the rest of the
    export); everything else (complex, unsigned beyond 8 bits, off the CPU, empty, a
    negative view), and every tensor when the pass is not built, is measured at once by
    :func:`tensor_stats`.
    """

    __slots__ = ("_at", "_enqueue", "_items", "_kinds", "_read", "_same", "_state", "_tensors", "_torch")

    def __init__(self, one_pass: bool = ONE_PASS, compiled_queue: bool = True) -> None:
        import torch

        self._read: Callable[[list[_Item]], list[_Raw]] | None = None
        if one_pass and _onepass is not None:
            self._read = _onepass.onepass
        self._torch = torch if self._read is not None else None
        # dtype -> the compiled read's kind (its KINDS order); float16 / bfloat16 / float8 are read as float32 copies
        kinds = _onepass.KINDS if _onepass is not None else ()
        self._kinds = {getattr(torch, name): kind for kind, name in enumerate(kinds)}
        self._at: list[int] = []
        self._tensors: list[Any] = []
        self._items: list[_Item] = []
        self._same: list[tuple[int, int]] = []  # (at, the queued ``at`` whose elements it holds)
        # one C call makes add's checks for a plain CPU tensor; what it declines, the Python decides
        self._enqueue: Callable[..., bool] | None = None
        if self._read is not None and compiled_queue and _onepass is not None:
            self._enqueue = _onepass.enqueue
        # torch's own methods (torch.Tensor's base): TorchLens' wrappers on torch.Tensor cost more than the rest
        base = torch.Tensor.__base__
        is_neg, data_ptr, stride = (
            getattr(base, n, getattr(torch.Tensor, n)) for n in ("is_neg", "data_ptr", "stride")
        )
        self._state = (
            self._kinds, torch.strided, (torch.Tensor, torch.nn.Parameter), is_neg, data_ptr, stride,
            self._at, self._tensors, self._items,
        )  # fmt: skip

    def add(self, at: int, t: Any) -> TensorStats | None:
        """``t``'s statistics now, or None when it is queued for the single pass (under ``at``)."""
        enqueue = self._enqueue
        if enqueue is not None and enqueue(self._state, at, t):
            return None
        torch = self._torch
        if torch is None or (type(t) is not torch.Tensor and type(t) is not torch.nn.Parameter):
            return tensor_stats(t)
        dtype = t.dtype
        shape = t.shape
        if t.layout != torch.strided or not t.is_cpu or 0 in shape or len(shape) > 16 or t.is_neg():
            return tensor_stats(t)
        kind = self._kinds.get(dtype)
        if kind is None:
            if not (dtype.is_floating_point and dtype.itemsize < 4):
                return tensor_stats(t)
            t = t.detach().float()  # float16, bfloat16, float8: summed in float32, as tensor_stats does
            kind = self._kinds[torch.float32]
        self._at.append(at)
        self._tensors.append(t)
        self._items.append((t.data_ptr(), kind, shape, t.stride()))
        return None

    def queued(self, at: int) -> bool:
        """Whether the last :meth:`add` (under ``at``) queued its tensor for the single pass."""
        return bool(self._at) and self._at[-1] == at

    def same(self, at: int, source: int) -> None:
        """The tensor under ``at`` holds the elements of the one queued (or itself named here)
        under ``source``, rearranged: it takes its statistics, read once."""
        self._same.append((at, source))

    def start(self, background: bool) -> Callable[[], Mapping[int, TensorStats]]:
        """Read what is queued, on a native thread when ``background``; the returned call gives
        the statistics by ``at`` (waiting for the thread), computed once."""
        items, read = self._items, self._read
        reading: Any = None
        now: list[list[_Raw]] = []
        if items and read is not None and _onepass is not None:
            if background:  # a malformed item is refused here; result() reads again, and raises, on this thread
                with contextlib.suppress(Exception):
                    reading = _onepass.start(items, self._tensors)
            else:
                now.append(read(items))
        cache: list[dict[int, TensorStats]] = []

        def result() -> dict[int, TensorStats]:
            if not cache:
                if now:
                    raw = now[0]
                elif reading is not None:
                    raw = reading.result()
                else:
                    raw = read(items) if read is not None and items else []
                with one_thread():
                    stated = {
                        at: _finished(t, r, item[1] == _BOOL_KIND)
                        for at, t, item, r in zip(self._at, self._tensors, items, raw)
                    }
                for at, source in self._same:  # in reading order: a source is stated before its rearrangements
                    stated[at] = stated[source]
                cache.append(stated)
            return cache[0]

        return result


def _finished(t: Any, raw: _Raw, is_bool: bool) -> TensorStats:
    """One tensor's statistics from the compiled read; measured again by torch only when its
    sums left float64's range (the read states no mean then, though some element is finite)."""
    lo, hi, mean, var, zeros, nans, infs, numel = raw  # numel from the pass: torch's is a wrapped call here
    if mean is None or var is None:
        return TensorStats(numel, nans, infs, zeros) if nans + infs == numel else _or_empty(t)
    if is_bool:  # the fraction of True, and no std (tensor_stats' rule)
        return TensorStats(numel, 0, 0, zeros, lo, hi, mean)
    return TensorStats(numel, nans, infs, zeros, lo, hi, mean, math.sqrt(var))


def _or_empty(t: Any) -> TensorStats:
    st = tensor_stats(t)
    return st if st is not None else TensorStats(numel=int(t.numel()))


def merged_stats(parts: Sequence[TensorStats]) -> TensorStats:
    """The statistics of several tensors taken together (a rolled layer's passes), exact up
    to float rounding: counts add up, min / max are the extremes, mean and std (population,
    over the finite elements) pool each part's by its finite count. A statistic some part
    with finite elements lacks (complex, bool's std) is absent from the whole."""
    numel = sum(p.numel for p in parts)
    nan = sum(p.nan_count for p in parts)
    inf = sum(p.inf_count for p in parts)
    zeros = sum(p.zero_count for p in parts)
    counted = [(p, p.numel - p.nan_count - p.inf_count) for p in parts]
    finite = [(p, n) for p, n in counted if n > 0]
    total = sum(n for _, n in finite)
    if not finite:
        return TensorStats(numel, nan, inf, zeros)
    mins = [p.min for p, _ in finite if p.min is not None]
    maxs = [p.max for p, _ in finite if p.max is not None]
    lo = min(mins) if len(mins) == len(finite) else None
    hi = max(maxs) if len(maxs) == len(finite) else None
    mean: float | None = None
    std: float | None = None
    pooled = [(p.mean, p.std, n) for p, n in finite if p.mean is not None]
    if len(pooled) == len(finite):
        mean = sum(m * n for m, _, n in pooled) / total
        spreads = [(m, sd, n) for m, sd, n in pooled if sd is not None]
        if len(spreads) == len(finite):
            var = sum(n * (sd * sd + (m - mean) ** 2) for m, sd, n in spreads) / total
            std = math.sqrt(max(var, 0.0))
    return TensorStats(numel, nan, inf, zeros, lo, hi, mean, std)

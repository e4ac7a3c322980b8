"""Stage 1 helper: statistics of one captured tensor (activation statistics, issue 26).

The trace reader (:mod:`tlnetron.reader`, the only module that touches torchlens) reads each
op's saved output (``op.out``) and hands it here; this module sees only torch tensors, and
imports torch when first called.
"""

from __future__ import annotations

import math
from typing import Any

from .ir import TensorStats

__all__ = ["tensor_stats"]


def _finite_float(value: Any) -> float | None:
    f = float(value)
    return f if math.isfinite(f) else None


def tensor_stats(t: Any) -> TensorStats | None:
    """Statistics of one captured tensor (see :class:`~tlnetron.ir.TensorStats`), or None
    for what is not a plain dense tensor with data (sparse, meta, quantized, ...).

    A handful of kernels per tensor, one synchronisation: ``isfinite`` and its sum decide
    whether NaN and Inf need counting (most tensors are finite); then ``aminmax``,
    ``std_mean`` and ``== 0`` run on the finite elements, and every result is read at once.
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
    with torch.no_grad():
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
            zeros = (t == 0).sum()
            lo_v, hi_v, zeros_v = torch.stack((lo.long(), hi.long(), zeros)).tolist()
            mu_v, sd_v = torch.stack((mu, sd)).tolist()
            return TensorStats(numel, 0, 0, int(zeros_v), int(lo_v), int(hi_v), _finite_float(mu_v), _finite_float(sd_v))
        if dtype.itemsize < 4:  # float16, bfloat16, float8: summed in float32
            t = t.float()
        finite = torch.isfinite(t)
        n_finite = int(finite.sum())
        nan = inf = 0
        if n_finite != numel:
            nan = int(torch.isnan(t).sum())
            inf = numel - n_finite - nan
            zeros_all = int((t == 0).sum())
            t = t[finite]
            if n_finite == 0:
                return TensorStats(numel, nan, inf, zeros_all)
        else:
            zeros_all = -1
        lo, hi = torch.aminmax(t)
        sd, mu = torch.std_mean(t, correction=0)
        parts = [lo, hi, mu, sd]
        if zeros_all < 0:
            parts.append((t == 0).sum())
        values = torch.stack([p.double() for p in parts]).tolist()  # exact counts to 2**53
        if zeros_all < 0:
            zeros_all = int(values[4])
    return TensorStats(
        numel, nan, inf, zeros_all,
        _finite_float(values[0]), _finite_float(values[1]), _finite_float(values[2]), _finite_float(values[3]),
    )

"""Property, end to end: random small real ``nn.Module`` programs trace and export cleanly.

Each example composes a model from a menu of blocks (Linear, Conv1d / Conv2d, ReLU / GELU,
LayerNorm, BatchNorm1d in train or eval mode, a residual add, split / chunk, a submodule
called twice, a Python loop over one submodule, matmul, reshape / transpose, casts through
float64 / float16, in-place ops, an identity, a recurrent cell, nested groups; outputs as
one tensor, a tuple passing an input through, or a dict), traces it with ``torchlens.trace`` (two inputs passed as
one tuple), and exports it with ``tlnetron.export`` at every granularity. Every export must
succeed and pass the oracle (``oracle.py``); exporting twice gives the same bytes.

Tracing costs 0.05-0.3 s, so the example count is small: about 8 under the default
profile, 80 under ``ci``.
"""

from __future__ import annotations

import tempfile
import warnings
from pathlib import Path
from typing import Any

import torch
import torchlens
from hypothesis import HealthCheck, event, given, note, settings
from hypothesis import strategies as st
from torch import nn
from torchlens.errors import TorchLensWarning

from known_bugs import known_bug
from oracle import check_outcome, files_of, run_public_export
from strategies import BUFFER_POLICIES, GRANULARITIES
from tlnetron._generated.vocab import Granularity
from tlnetron.ir.trace import ROLE_BUFFER
from tlnetron.read.trace import read_trace

EXAMPLES = min(80, max(4, settings().max_examples // 5))

LEAVES = (
    "linear",
    "conv1d",
    "conv2d",
    "relu",
    "gelu",
    "layernorm",
    "batchnorm_train",
    "batchnorm_eval",
    "residual",
    "split",
    "chunk",
    "twice",
    "loop",
    "matmul",
    "reshape_transpose",
    "cast64",
    "cast16",
    "inplace",
    "identity",
    "recurrent",
)


class Leaf(nn.Module):
    """One menu block on a (batch, features) float32 tensor; keeps the shape and dtype."""

    def __init__(self, kind: str, features: int, loops: int = 2) -> None:
        super().__init__()
        self.kind = kind
        self.loops = loops
        self.fc: nn.Module
        self.conv: nn.Module
        self.act: nn.Module
        self.norm: nn.Module
        f = features
        if kind in ("linear", "residual", "twice", "loop", "inplace"):
            self.fc = nn.Linear(f, f)
        elif kind == "recurrent":
            self.fc = nn.Linear(2 * f, f)
        elif kind == "conv1d":
            self.conv = nn.Conv1d(1, 1, 3, padding=1)
        elif kind == "conv2d":
            self.conv = nn.Conv2d(1, 1, 3, padding=1)
        elif kind == "relu":
            self.act = nn.ReLU()
        elif kind == "gelu":
            self.act = nn.GELU()
        elif kind == "layernorm":
            self.norm = nn.LayerNorm(f)
        elif kind.startswith("batchnorm"):
            self.norm = nn.BatchNorm1d(f)
            self.norm.train(kind == "batchnorm_train")
        elif kind == "matmul":
            self.weight = nn.Parameter(torch.randn(f, f) / f)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        k = self.kind
        if k == "linear":
            return self.fc(x)
        if k == "conv1d":
            return self.conv(x.unsqueeze(1)).squeeze(1)
        if k == "conv2d":
            rows, cols = x.shape
            return self.conv(x.reshape(rows, 1, 2, cols // 2)).reshape(rows, cols)
        if k in ("relu", "gelu"):
            return self.act(x)
        if k in ("layernorm", "batchnorm_train", "batchnorm_eval"):
            return self.norm(x)
        if k == "residual":
            return x + self.fc(x)
        if k == "split":
            left, right = torch.split(x, x.shape[1] // 2, dim=1)
            return torch.cat([right, left], dim=1)
        if k == "chunk":
            left, right = x.chunk(2, dim=1)
            return torch.cat([left * right, left + right], dim=1)
        if k == "twice":
            return self.fc(self.fc(x))
        if k == "loop":
            for _ in range(self.loops):
                x = torch.relu(self.fc(x))
            return x
        if k == "matmul":
            return x @ self.weight
        if k == "reshape_transpose":
            rows, cols = x.shape
            return x.reshape(cols, rows).transpose(0, 1).contiguous()
        if k == "cast64":
            return (x.to(torch.float64) * 2.0).to(torch.float32)
        if k == "cast16":
            return (x.to(torch.float16) + 1.0).to(torch.float32)
        if k == "inplace":
            y = self.fc(x)
            y.relu_()
            y += 1.0
            return y
        if k == "identity":
            return x
        if k == "recurrent":  # an RNN-style cell: the hidden state feeds back each step
            h = torch.zeros_like(x)
            for _ in range(self.loops):
                h = torch.tanh(self.fc(torch.cat([x, h], dim=1)))
            return h
        raise AssertionError(k)


class Group(nn.Module):
    """A nested sequence of blocks (a deeper module hierarchy)."""

    def __init__(self, blocks: list[nn.Module]) -> None:
        super().__init__()
        self.blocks = nn.ModuleList(blocks)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for b in self.blocks:
            x = b(x)
        return x


class Program(nn.Module):
    """The model: blocks in order, the second input added at one point; returns a tensor, a
    tuple (with a reduction and an input passed through), or a dict."""

    def __init__(self, blocks: list[nn.Module], add_y_at: int | None, outputs: str) -> None:
        super().__init__()
        self.blocks = nn.ModuleList(blocks)
        self.add_y_at = add_y_at
        self.outputs = outputs

    def forward(self, x: torch.Tensor, y: torch.Tensor | None = None) -> Any:
        x0 = x
        for i, b in enumerate(self.blocks):
            if y is not None and i == self.add_y_at:
                x = x + y
            x = b(x)
        if self.outputs == "tuple":
            return x, x.sum(dim=1), x0
        if self.outputs == "dict":
            return {"out": x, "pair": (x, x * 2)}
        return x


Spec = Any  # a leaf (kind, loops) or ("group", [specs])

leaf_specs = st.tuples(st.sampled_from(LEAVES), st.integers(1, 3))


@st.composite
def block_specs(draw: st.DrawFn, depth: int = 0) -> Spec:
    """A leaf, or (up to two levels deep) a group of one to three blocks."""
    if depth >= 2 or draw(st.integers(0, 3)) < 3:
        return draw(leaf_specs)
    return ("group", [draw(block_specs(depth + 1)) for _ in range(draw(st.integers(1, 3)))])


def _build(spec: Spec, features: int) -> nn.Module:
    if spec[0] == "group":
        return Group([_build(s, features) for s in spec[1]])
    kind, loops = spec
    return Leaf(kind, features, loops)


@st.composite
def programs(draw: st.DrawFn) -> dict[str, Any]:
    return {
        "blocks": draw(st.lists(block_specs(), min_size=1, max_size=4)),
        "features": draw(st.sampled_from((4, 6, 8))),
        "batch": draw(st.integers(2, 3)),  # BatchNorm in train mode needs more than one row
        "two_inputs": draw(st.booleans()),
        "add_y_at": draw(st.integers(0, 3)),
        "outputs": draw(st.sampled_from(("tensor", "tuple", "dict"))),
        "eval_mode": draw(st.booleans()),
        "seed": draw(st.integers(0, 2**16)),
    }


def _trace(p: dict[str, Any]) -> torchlens.Trace:
    torch.manual_seed(p["seed"])
    blocks = [_build(s, p["features"]) for s in p["blocks"]]
    model = Program(blocks, p["add_y_at"] if p["two_inputs"] else None, p["outputs"])
    if p["eval_mode"]:
        model.eval()
    x = torch.randn(p["batch"], p["features"])
    inputs: Any = (x, torch.randn(p["batch"], p["features"])) if p["two_inputs"] else x
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="tracing runs the model's REAL forward", category=TorchLensWarning)
        return torchlens.trace(model, inputs)


@settings(max_examples=EXAMPLES, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(program=programs(), show_buffers=st.sampled_from(BUFFER_POLICIES))
def test_real_programs_export_in_every_view(program: dict[str, Any], show_buffers: str) -> None:
    note(f"program: {program}")
    log = _trace(program)
    ir = read_trace(log)
    event(f"passes > 1: {any(op.num_passes > 1 for op in ir.ops)}")
    event(f"buffers: {any(op.role == ROLE_BUFFER for op in ir.ops)}")
    for granularity in GRANULARITIES:
        options = {"granularity": granularity, "show_buffers": show_buffers}
        with tempfile.TemporaryDirectory() as a, tempfile.TemporaryDirectory() as b:
            first = run_public_export(log, Path(a), options)
            if first.error is not None and known_bug(first):
                continue  # asserted in test_known_bugs.py
            assert first.error is None, f"{granularity}: a real trace was refused: {first.error}"
            check_outcome(ir, first)
            if granularity == Granularity.MODULE and first.result is not None:
                event(f"module view functions: {min(first.result.function_count, 4)}")
            run_public_export(log, Path(b), options)
            assert files_of(Path(a)) == files_of(Path(b)), f"{granularity}: the same trace gave different bytes"

"""Demo model shipped with tlnetron (random weights, nothing downloaded).

A tiny GPT-style transformer written in plain torch (64 ops). It gives the CLI, the docs
and the tests a realistic model (embeddings, pre-LayerNorm attention blocks with residuals,
an MLP, an LM head) whose module names read well in a diagram::

    embed, pos,
    blocks.0.ln1, blocks.0.attn.{q,k,v,out}, blocks.0.ln2, blocks.0.mlp.{fc1,act,fc2},
    blocks.1...,
    ln_f, head

Weights are random but deterministic: the builder seeds torch with 0.

How long it takes, on a 2-core machine with nothing else running: the first trace in a
process takes over half a second, and its first ops are slowed by warm-up (a first
``linear`` takes milliseconds where later ones take tens of microseconds), so
:func:`trace_demo` traces the model twice and returns the second trace, which takes a
fifth of a second or less. ``tlnetron demo`` as a whole takes two to three seconds, most
of it importing torch and onnx; the export itself, a few hundredths of a second.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import torch
from torch import nn

if TYPE_CHECKING:
    from torchlens import Trace

__all__ = [
    "DEMO_BATCH",
    "DEMO_D_MODEL",
    "DEMO_HEADS",
    "DEMO_LAYERS",
    "DEMO_SEQ_LEN",
    "DEMO_TRACES",
    "DEMO_VOCAB",
    "DemoTransformer",
    "build_demo_model",
    "trace_demo",
]

DEMO_VOCAB = 64
DEMO_D_MODEL = 32
DEMO_HEADS = 4
DEMO_LAYERS = 2
DEMO_SEQ_LEN = 8
DEMO_BATCH = 1
DEMO_TRACES = 2
"""How many times :func:`trace_demo` traces the model: the last trace is returned, so its
observed durations are not the first trace's warm-up."""


class SelfAttention(nn.Module):
    """Multi-head causal self-attention with separate q/k/v/out projections."""

    def __init__(self, d_model: int, n_heads: int) -> None:
        super().__init__()
        if d_model % n_heads:
            raise ValueError(f"d_model={d_model} is not divisible by n_heads={n_heads}")
        self.n_heads = n_heads
        self.head_dim = d_model // n_heads
        self.q = nn.Linear(d_model, d_model)
        self.k = nn.Linear(d_model, d_model)
        self.v = nn.Linear(d_model, d_model)
        self.out = nn.Linear(d_model, d_model)

    def _split_heads(self, t: torch.Tensor) -> torch.Tensor:
        batch, seq, _ = t.shape
        return t.view(batch, seq, self.n_heads, self.head_dim).transpose(1, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        batch, seq, d_model = x.shape
        q = self._split_heads(self.q(x))
        k = self._split_heads(self.k(x))
        v = self._split_heads(self.v(x))
        scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(self.head_dim)
        causal = torch.ones(seq, seq, dtype=torch.bool, device=x.device).tril()
        scores = scores.masked_fill(~causal, float("-inf"))
        weights = torch.softmax(scores, dim=-1)
        context = torch.matmul(weights, v)
        context = context.transpose(1, 2).reshape(batch, seq, d_model)
        out: torch.Tensor = self.out(context)
        return out


class MLP(nn.Module):
    """Position-wise feed-forward network: Linear, GELU, Linear."""

    def __init__(self, d_model: int, hidden: int) -> None:
        super().__init__()
        self.fc1 = nn.Linear(d_model, hidden)
        self.act = nn.GELU()
        self.fc2 = nn.Linear(hidden, d_model)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out: torch.Tensor = self.fc2(self.act(self.fc1(x)))
        return out


class Block(nn.Module):
    """Pre-LayerNorm transformer block: x + attn(ln1(x)), then x + mlp(ln2(x))."""

    def __init__(self, d_model: int, n_heads: int) -> None:
        super().__init__()
        self.ln1 = nn.LayerNorm(d_model)
        self.attn = SelfAttention(d_model, n_heads)
        self.ln2 = nn.LayerNorm(d_model)
        self.mlp = MLP(d_model, 4 * d_model)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.ln1(x))
        x = x + self.mlp(self.ln2(x))
        return x


class DemoTransformer(nn.Module):
    """A tiny decoder-only transformer language model."""

    def __init__(
        self,
        vocab: int = DEMO_VOCAB,
        d_model: int = DEMO_D_MODEL,
        n_heads: int = DEMO_HEADS,
        n_layers: int = DEMO_LAYERS,
        max_len: int = DEMO_SEQ_LEN,
    ) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, d_model)
        self.pos = nn.Embedding(max_len, d_model)
        self.blocks = nn.ModuleList(Block(d_model, n_heads) for _ in range(n_layers))
        self.ln_f = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, vocab, bias=False)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        positions = torch.arange(tokens.shape[1], device=tokens.device)
        x = self.embed(tokens) + self.pos(positions)
        for block in self.blocks:
            x = block(x)
        logits: torch.Tensor = self.head(self.ln_f(x))
        return logits


def build_demo_model() -> tuple[nn.Module, torch.Tensor]:
    """Build the demo model with deterministic random weights.

    Seeds torch with 0, so every call returns identical weights and input.

    Returns:
        The model (in eval mode) and an int64 token tensor of shape
        ``(DEMO_BATCH, DEMO_SEQ_LEN)``.
    """
    torch.manual_seed(0)
    model = DemoTransformer().eval()
    tokens = torch.randint(0, DEMO_VOCAB, (DEMO_BATCH, DEMO_SEQ_LEN), dtype=torch.int64)
    return model, tokens


def trace_demo() -> Trace:
    """Trace the demo model with TorchLens, :data:`DEMO_TRACES` times, and keep the last.

    The first trace in a process runs its first ops slowly (warm-up), and those observed
    durations would skew every share of time in the artifact; the later trace's do not.

    Returns:
        The ``torchlens.Trace`` of the last forward pass of :func:`build_demo_model`.
    """
    import torchlens

    model, tokens = build_demo_model()
    log: Trace = torchlens.trace(model, tokens)
    for _ in range(DEMO_TRACES - 1):
        del log  # the warm-up trace is freed before the next one is taken
        log = torchlens.trace(model, tokens)
    return log

"""Benchmark models: real architectures built offline from configs, random weights.

Nothing is downloaded. ``build(name, quick=False)`` seeds torch and returns
``(model, args, kwargs)``; ``trace(name, quick=False)`` traces it with torchlens and
returns ``(log, seconds)``.

Full-size entries (the reference measurements use the same shapes):

* ``gpt2``   GPT2LMHeadModel(GPT2Config()) - 12 layers, 768 hidden; input_ids (1, 32)
* ``t5``     T5ForConditionalGeneration, T5-small shape with a 1000-token vocab; 16 + 16 ids
* ``resnet`` ResNet-50 layout (bottleneck blocks [3, 4, 6, 3]) in plain torch; 1x3x64x64, eval
* ``loop``   a recurrent cell (two Linears + add + tanh) applied 20 times in a Python loop
* ``lstm``   a 2-layer LSTM language model, cells written gate by gate, unrolled over 16 steps
* ``bert``   BertModel(BertConfig()) - BERT-base; input_ids (1, 32)

And, not in the default list, ``tiny``: Linear(4, 4) + ReLU (2 compute ops), whose export
is nearly all fixed cost (options, files, checker start, result): ``run.py --models
tiny,loop`` shows how much of a small trace's export that is.

``quick=True`` builds small configs of the same architectures for a fast smoke run.
"""

from __future__ import annotations

import time
import warnings
from typing import Any

import torch
from torch import nn

__all__ = ["ALL_MODELS", "MODELS", "build", "src_fingerprint", "trace"]

MODELS = ("gpt2", "t5", "resnet", "loop", "lstm", "bert")
ALL_MODELS = (*MODELS, "tiny")
SEED = 0


# --------------------------------------------------------------------------- ResNet-50 layout


class Bottleneck(nn.Module):
    expansion = 4

    def __init__(self, cin: int, width: int, stride: int = 1) -> None:
        super().__init__()
        cout = width * self.expansion
        self.conv1 = nn.Conv2d(cin, width, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.conv2 = nn.Conv2d(width, width, 3, stride=stride, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(width)
        self.conv3 = nn.Conv2d(width, cout, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(cout)
        self.relu = nn.ReLU()
        self.downsample: nn.Module | None = None
        if stride != 1 or cin != cout:
            self.downsample = nn.Sequential(nn.Conv2d(cin, cout, 1, stride=stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        identity = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        return self.relu(out + identity)


class ResNet(nn.Module):
    """torchvision's ResNet-50 layout (no torchvision needed)."""

    def __init__(self, layers: tuple[int, ...] = (3, 4, 6, 3), base: int = 64, num_classes: int = 1000) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(3, base, 7, stride=2, padding=3, bias=False)
        self.bn1 = nn.BatchNorm2d(base)
        self.relu = nn.ReLU()
        self.maxpool = nn.MaxPool2d(3, stride=2, padding=1)
        cin = base
        stages = []
        for i, n in enumerate(layers):
            width = base * 2**i
            blocks = []
            for j in range(n):
                blocks.append(Bottleneck(cin, width, stride=2 if (j == 0 and i > 0) else 1))
                cin = width * Bottleneck.expansion
            stages.append(nn.Sequential(*blocks))
        self.layer1, self.layer2, self.layer3, self.layer4 = stages
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(cin, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(torch.flatten(self.avgpool(x), 1))


# --------------------------------------------------------------------------- looped recurrence


class Cell(nn.Module):
    def __init__(self, dim: int) -> None:
        super().__init__()
        self.ih = nn.Linear(dim, dim)
        self.hh = nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor, h: torch.Tensor) -> torch.Tensor:
        return torch.tanh(self.ih(x) + self.hh(h))


class Looped(nn.Module):
    """One ``cell`` applied ``steps`` times over a sequence (a hand-rolled RNN)."""

    def __init__(self, dim: int = 64, steps: int = 20) -> None:
        super().__init__()
        self.steps = steps
        self.cell = Cell(dim)
        self.head = nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.zeros(x.shape[0], x.shape[2])
        for t in range(self.steps):
            h = self.cell(x[:, t], h)
        return self.head(h)


class GateLSTMCell(nn.Module):
    """An LSTM cell written out gate by gate, as char-RNN and research code often does."""

    def __init__(self, dim: int, hidden: int) -> None:
        super().__init__()
        self.gates = nn.Linear(dim + hidden, 4 * hidden)

    def forward(self, x: torch.Tensor, h: torch.Tensor, c: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        i, f, g, o = self.gates(torch.cat([x, h], dim=-1)).chunk(4, dim=-1)
        c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
        return torch.sigmoid(o) * torch.tanh(c), c


class CharLSTM(nn.Module):
    """A stacked LSTM language model unrolled step by step: embed, the cells, logits per step."""

    def __init__(self, vocab: int = 256, dim: int = 128, hidden: int = 256, layers: int = 2) -> None:
        super().__init__()
        self.hidden = hidden
        self.embed = nn.Embedding(vocab, dim)
        self.cells = nn.ModuleList(GateLSTMCell(dim if k == 0 else hidden, hidden) for k in range(layers))
        self.head = nn.Linear(hidden, vocab)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        batch, steps = ids.shape
        state = [(torch.zeros(batch, self.hidden), torch.zeros(batch, self.hidden)) for _ in self.cells]
        logits = []
        for t in range(steps):
            x = self.embed(ids[:, t])
            for k, cell in enumerate(self.cells):
                x, c = cell(x, *state[k])
                state[k] = (x, c)
            logits.append(self.head(x))
        return torch.stack(logits, dim=1)


# --------------------------------------------------------------------------- builders


def _gpt2(quick: bool) -> tuple[nn.Module, tuple[Any, ...], dict[str, Any]]:
    from transformers import GPT2Config, GPT2LMHeadModel

    if quick:
        cfg = GPT2Config(
            n_layer=2, n_embd=64, n_head=4, vocab_size=128, n_positions=64, bos_token_id=127, eos_token_id=127
        )
        vocab, seq = 128, 16
    else:
        cfg = GPT2Config()
        vocab, seq = cfg.vocab_size, 32
    return GPT2LMHeadModel(cfg).eval(), (torch.randint(0, vocab, (1, seq)),), {}


def _t5(quick: bool) -> tuple[nn.Module, tuple[Any, ...], dict[str, Any]]:
    from transformers import T5Config, T5ForConditionalGeneration

    if quick:
        cfg = T5Config(vocab_size=128, d_model=32, d_kv=8, d_ff=64, num_layers=2, num_heads=4, pad_token_id=0)
        vocab, seq = 128, 8
    else:
        cfg = T5Config(vocab_size=1000, d_model=512, d_kv=64, d_ff=2048, num_layers=6, num_heads=8, pad_token_id=0)
        vocab, seq = 1000, 16
    kwargs = {"input_ids": torch.randint(1, vocab, (1, seq)), "decoder_input_ids": torch.randint(1, vocab, (1, seq))}
    return T5ForConditionalGeneration(cfg).eval(), (), kwargs


def _resnet(quick: bool) -> tuple[nn.Module, tuple[Any, ...], dict[str, Any]]:
    if quick:
        return ResNet(layers=(1, 1, 1, 1), base=8, num_classes=10).eval(), (torch.randn(1, 3, 32, 32),), {}
    return ResNet().eval(), (torch.randn(1, 3, 64, 64),), {}


def _loop(quick: bool) -> tuple[nn.Module, tuple[Any, ...], dict[str, Any]]:
    steps = 5 if quick else 20
    dim = 16 if quick else 64
    return Looped(dim, steps).eval(), (torch.randn(1, steps, dim),), {}


def _lstm(quick: bool) -> tuple[nn.Module, tuple[Any, ...], dict[str, Any]]:
    if quick:
        return CharLSTM(vocab=32, dim=16, hidden=16, layers=1).eval(), (torch.randint(0, 32, (1, 4)),), {}
    return CharLSTM().eval(), (torch.randint(0, 256, (1, 16)),), {}


def _bert(quick: bool) -> tuple[nn.Module, tuple[Any, ...], dict[str, Any]]:
    from transformers import BertConfig, BertModel

    if quick:
        cfg = BertConfig(
            vocab_size=128,
            hidden_size=64,
            num_hidden_layers=2,
            num_attention_heads=4,
            intermediate_size=128,
            max_position_embeddings=64,
        )
        vocab, seq = 128, 16
    else:
        cfg = BertConfig()
        vocab, seq = cfg.vocab_size, 32
    return BertModel(cfg).eval(), (torch.randint(0, vocab, (1, seq)),), {}


def _tiny(quick: bool) -> tuple[nn.Module, tuple[Any, ...], dict[str, Any]]:
    return nn.Sequential(nn.Linear(4, 4), nn.ReLU()).eval(), (torch.randn(2, 4),), {}


_BUILDERS = {"gpt2": _gpt2, "t5": _t5, "resnet": _resnet, "loop": _loop, "lstm": _lstm, "bert": _bert, "tiny": _tiny}


def build(name: str, quick: bool = False) -> tuple[nn.Module, tuple[Any, ...], dict[str, Any]]:
    """Seed torch and build ``name``: ``(model, positional args, keyword args)``."""
    torch.manual_seed(SEED)
    return _BUILDERS[name](quick)


def trace(name: str, quick: bool = False) -> tuple[Any, float]:
    """Build and trace ``name`` with torchlens; return ``(log, trace seconds)``.

    The first ``torchlens.trace`` in a process also wraps torch (~1 s); callers that
    want a fair trace time should trace something small first (see ``warm_torchlens``).
    """
    import torchlens

    model, args, kwargs = build(name, quick)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t0 = time.perf_counter()
        log = torchlens.trace(model, args if args else None, input_kwargs=kwargs or None)
        seconds = time.perf_counter() - t0
    return log, seconds


def warm_torchlens() -> float:
    """Trace a tiny model once so torchlens' one-off torch wrapping is not charged to a model."""
    import torchlens

    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torchlens.trace(nn.Sequential(nn.Linear(4, 4), nn.ReLU()), torch.randn(1, 4))
    return time.perf_counter() - t0


def src_fingerprint() -> dict[str, str]:
    """Which tlnetron code was measured: where it was imported from, a hash of that package's
    files, and the work tree's commit (the work tree may hold uncommitted changes; to measure a
    fixed commit, extract it with ``git archive <commit> src | tar -x -C /tmp/snap`` and run
    with ``PYTHONPATH=/tmp/snap/src``)."""
    import hashlib
    import subprocess
    from pathlib import Path

    import tlnetron

    pkg = Path(tlnetron.__file__).resolve().parent
    h = hashlib.sha256()
    for f in sorted(pkg.rglob("*")):
        if f.is_file() and f.suffix in (".py", ".json", ".js") and "__pycache__" not in f.parts:
            h.update(str(f.relative_to(pkg)).encode())
            h.update(f.read_bytes())
    root = Path(__file__).resolve().parent.parent
    try:
        head = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, timeout=10
        ).stdout.strip()
    except Exception:
        head = "?"
    return {"tlnetron_from": str(pkg), "package_sha256": h.hexdigest()[:16], "work_tree_head": head}

"""A zoo of small real architectures, traced with TorchLens, for the test suite.

Every entry builds a model from a config with random weights (nothing is downloaded)
and is small enough that the whole zoo traces in a few seconds on 2 CPUs.

``ZOO`` maps a name to a builder returning ``(model, ZooInputs)``; ``trace(name)``
seeds torch, builds and traces. ``EXPECT`` records, per entry, facts about the trace
that tests can rely on. Structure (labels, shapes, module calls) is deterministic:
the same name gives the same labels on every run.

Warnings seen while tracing are filtered *inside* :func:`trace` only (see
``_TRACE_WARNING_FILTERS``); the test session keeps ``filterwarnings = error``.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
import torchlens
from torch import nn
from torchlens.errors import TorchLensWarning

__all__ = [
    "ALL_ZOO",
    "DEEP",
    "DEEP_DEFAULT",
    "DEEP_LAYERS",
    "EXPECT",
    "TASK_HEADS",
    "ZOO",
    "ZooExpect",
    "ZooInputs",
    "ZooTrace",
    "build",
    "deep_models",
    "trace",
]

SEED = 0


@dataclass(frozen=True)
class ZooInputs:
    """Inputs for one forward pass: positional ``args`` and keyword ``kwargs``."""

    args: tuple[Any, ...] = ()
    kwargs: dict[str, Any] = field(default_factory=dict)


Builder = Callable[[], tuple[nn.Module, ZooInputs]]
ZooTrace = Callable[[str], torchlens.Trace]
"""Type of the ``zoo_trace`` fixture: zoo entry name -> its (cached) trace."""


@dataclass(frozen=True)
class ZooExpect:
    """Facts a zoo entry's trace is known to satisfy (None = not asserted)."""

    recurrent: bool | None = None
    """Value of ``log.is_recurrent``."""
    min_passes: int = 1
    """Some Layer has at least this many passes."""
    pass_shapes_vary: bool = False
    """Some multi-pass Layer has different shapes across its passes."""
    training: bool | None = None
    """The root module's ``training`` flag."""
    buffer_suffixes: tuple[str, ...] = ()
    """Buffer ops exist on addresses ending with each of these."""
    buffer_values_change: bool | None = None
    """Whether some buffer write op has ``buffer_value_changed`` True. (Eval-mode
    BatchNorm still gets ``fused`` write pseudo-ops, with the flag False.)"""
    counter_chains: int | None = None
    """Number of compute ops whose parents and children are all buffer ops on a
    ``num_batches_tracked`` address (train-mode BatchNorm counter ``add_``)."""
    max_rank_at_least: int = 0
    """Some op output has at least this many dims."""
    has_multi_output: bool = False
    """Some op has ``in_multi_output`` True."""
    min_dtypes: int = 1
    """At least this many distinct output dtypes."""
    dtypes: tuple[torch.dtype, ...] = ()
    """These dtypes all occur among op outputs."""
    has_scalar: bool = False
    """Some op output has shape ()."""
    has_zero_dim: bool = False
    """Some op output has a 0 in its shape."""
    module_addresses: tuple[str, ...] = ()
    """These module addresses exist in ``log.modules``."""
    module_calls: dict[str, int] = field(default_factory=dict)
    """Module address -> exact ``num_calls``."""
    num_outputs: int = 1
    """Number of model output ops."""
    num_inputs: int = 1
    """Number of model input ops."""


# --------------------------------------------------------------------------- models


class BnCnn(nn.Module):
    """Two Conv2d+BatchNorm2d+ReLU blocks, global pooling and a classifier."""

    def __init__(self) -> None:
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 8, 3, padding=1),
            nn.BatchNorm2d(8),
            nn.ReLU(),
            nn.Conv2d(8, 16, 3, padding=1, stride=2),
            nn.BatchNorm2d(16),
            nn.ReLU(),
        )
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(16, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out: torch.Tensor = self.fc(self.pool(self.features(x)).flatten(1))
        return out


class BasicBlock(nn.Module):
    """ResNet basic block: conv-bn-relu-conv-bn + (downsampled) identity, relu."""

    def __init__(self, cin: int, cout: int, stride: int = 1) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.relu = nn.ReLU()
        self.conv2 = nn.Conv2d(cout, cout, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.downsample: nn.Module | None = None
        if stride != 1 or cin != cout:
            self.downsample = nn.Sequential(nn.Conv2d(cin, cout, 1, stride=stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        identity = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        result: torch.Tensor = self.relu(out + identity)
        return result


class TinyResNet(nn.Module):
    """A ResNet-style CNN: stem, two stages of two BasicBlocks, pool, fc."""

    def __init__(self, num_classes: int = 10) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(8)
        self.relu = nn.ReLU()
        self.layer1 = nn.Sequential(BasicBlock(8, 8), BasicBlock(8, 8))
        self.layer2 = nn.Sequential(BasicBlock(8, 16, stride=2), BasicBlock(16, 16))
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(16, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.relu(self.bn1(self.conv1(x)))
        x = self.layer2(self.layer1(x))
        out: torch.Tensor = self.fc(torch.flatten(self.avgpool(x), 1))
        return out


class BackboneWrapper(nn.Module):
    """Holds a CNN as ``self.backbone`` (a model reaching TorchLens wrapped)."""

    def __init__(self, backbone: nn.Module) -> None:
        super().__init__()
        self.backbone = backbone

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out: torch.Tensor = self.backbone(x)
        return out


class Seq2SeqWrapper(nn.Module):
    """Holds a transformers encoder-decoder as ``self.model``; returns its logits."""

    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, input_ids: torch.Tensor, decoder_input_ids: torch.Tensor) -> torch.Tensor:
        logits: torch.Tensor = self.model(input_ids=input_ids, decoder_input_ids=decoder_input_ids).logits
        return logits


class Loop(nn.Module):
    """One ``cell`` (Linear + tanh) applied 5 times in a Python loop."""

    def __init__(self, dim: int = 8, steps: int = 5) -> None:
        super().__init__()
        self.steps = steps
        self.cell = nn.Sequential(nn.Linear(dim, dim), nn.Tanh())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for _ in range(self.steps):
            x = self.cell(x)
        return x


class LoopGrowing(nn.Module):
    """``self.lin`` applied to x[:k] for k = 1..4: one layer, shapes vary per pass."""

    def __init__(self, dim: int = 4) -> None:
        super().__init__()
        self.lin = nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        sums = [self.lin(x[:k]).sum(dim=0) for k in range(1, x.shape[0] + 1)]
        return torch.stack(sums)


class MultiOutputMixed(nn.Module):
    """Multi-output ops (split, topk, chunk, max(dim)) and mixed dtypes.

    Dtypes flowing through: float32, float16, float64, bfloat16, int64 (topk/argmax
    indices), int32, bool (a mask) and complex64 (``torch.fft.rfft``).
    """

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        h = self.lin(x)  # (4, 8) float32
        left, right = torch.split(h, 4, dim=1)
        values, indices = torch.topk(h, 3, dim=1)
        top, bottom = torch.chunk(h, 2, dim=0)
        best, best_idx = torch.max(h, dim=1)
        half = left.to(torch.float16) * 2
        double = right.to(torch.float64).exp()
        brain = values.to(torch.bfloat16) + 1
        ints = indices.to(torch.int32) + best_idx.to(torch.int32).unsqueeze(1)
        longs = ints.long() * 3
        mask = h > 0
        masked = torch.where(mask, h, torch.zeros_like(h))
        spectrum = torch.fft.rfft(h, dim=1)  # complex64
        magnitude = spectrum.abs()
        total = (
            masked.sum()
            + half.float().sum()
            + double.float().sum()
            + brain.float().sum()
            + magnitude.sum()
            + best.sum()
            + (top - bottom).sum()
        )
        return total, longs


class Conv3dNet(nn.Module):
    """Conv3d on a 5-D input, a 6-D reshape, then a classifier."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv3d(3, 16, 3, padding=1)
        self.act = nn.ReLU()
        self.fc = nn.Linear(16, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.act(self.conv(x))  # (2, 16, 8, 16, 16)
        b, c, d, height, width = h.shape
        h6 = h.reshape(b, c, d, height, width // 4, 4)  # 6-D
        pooled = h6.amax(dim=-1).mean(dim=(2, 3, 4))  # (2, 16)
        out: torch.Tensor = self.fc(pooled)
        return out


class TwoHeads(nn.Module):
    """A submodule whose forward returns a tuple of tensors."""

    def __init__(self, dim: int = 8) -> None:
        super().__init__()
        self.a = nn.Linear(dim, 4)
        self.b = nn.Linear(dim, 2)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return self.a(x), self.b(x)


class Twice(nn.Module):
    """Calls ``shared`` twice; ``heads`` and the model both return tuples."""

    def __init__(self, dim: int = 8) -> None:
        super().__init__()
        self.shared = nn.Sequential(nn.Linear(dim, dim), nn.ReLU())
        self.heads = TwoHeads(dim)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        h = self.shared(x)
        h = self.shared(h)
        heads: tuple[torch.Tensor, torch.Tensor] = self.heads(h)
        return heads


class ScalarAndEmpty(nn.Module):
    """0-d tensors and a zero-size dimension flowing through ops."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h: torch.Tensor = self.lin(x)  # (2, 4)
        total = h.sum()  # ()
        empty = h[:, :0] * 2  # (2, 0)
        empty_total = empty.sum()  # () == 0
        widened = torch.cat([h, empty], dim=1)  # (2, 4)
        return widened * total + empty_total


# --------------------------------------------------------------------------- builders


def _demo() -> tuple[nn.Module, ZooInputs]:
    from tlnetron.demo import build_demo_model

    model, tokens = build_demo_model()
    return model, ZooInputs((tokens,))


def _gpt2() -> tuple[nn.Module, ZooInputs]:
    from transformers import GPT2Config, GPT2LMHeadModel

    # bos/eos default to 50256, outside the tiny vocab: transformers logs a complaint.
    config = GPT2Config(
        n_layer=2,
        n_embd=64,
        n_head=4,
        vocab_size=128,
        n_positions=64,
        bos_token_id=127,
        eos_token_id=127,
    )
    model = GPT2LMHeadModel(config).eval()
    return model, ZooInputs((torch.randint(0, 128, (1, 16)),))


def _gpt2_small() -> tuple[nn.Module, ZooInputs]:
    """GPT-2 small's own configuration (12 layers, 768 wide, 50,257-token vocabulary;
    random weights, nothing downloaded), on 32 tokens: the real transformer the browser
    suite times and holds to the legibility budget."""
    from transformers import GPT2Config, GPT2LMHeadModel

    config = GPT2Config()
    model = GPT2LMHeadModel(config).eval()
    return model, ZooInputs((torch.randint(0, config.vocab_size, (1, 32)),))


def _bert() -> tuple[nn.Module, ZooInputs]:
    from transformers import BertConfig, BertModel

    config = BertConfig(
        vocab_size=128,
        hidden_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=128,
        max_position_embeddings=64,
    )
    model = BertModel(config).eval()
    return model, ZooInputs((torch.randint(0, 128, (1, 16)),))


def _t5_model() -> nn.Module:
    from transformers import T5Config, T5ForConditionalGeneration

    config = T5Config(
        vocab_size=128,
        d_model=32,
        d_kv=8,
        d_ff=64,
        num_layers=2,
        num_decoder_layers=2,
        num_heads=4,
        pad_token_id=0,
    )
    return T5ForConditionalGeneration(config).eval()


def _t5_ids() -> tuple[torch.Tensor, torch.Tensor]:
    return torch.randint(1, 128, (1, 8)), torch.randint(1, 128, (1, 6))


def _t5() -> tuple[nn.Module, ZooInputs]:
    model = _t5_model()
    input_ids, decoder_input_ids = _t5_ids()
    return model, ZooInputs(kwargs={"input_ids": input_ids, "decoder_input_ids": decoder_input_ids})


def _wrapped_t5() -> tuple[nn.Module, ZooInputs]:
    model = Seq2SeqWrapper(_t5_model()).eval()
    return model, ZooInputs(_t5_ids())


def _bn_cnn_train() -> tuple[nn.Module, ZooInputs]:
    return BnCnn().train(), ZooInputs((torch.randn(2, 3, 16, 16),))


def _bn_cnn_eval() -> tuple[nn.Module, ZooInputs]:
    return BnCnn().eval(), ZooInputs((torch.randn(2, 3, 16, 16),))


def _resnet() -> tuple[nn.Module, ZooInputs]:
    return TinyResNet().eval(), ZooInputs((torch.randn(1, 3, 32, 32),))


def _wrapped_cnn() -> tuple[nn.Module, ZooInputs]:
    return BackboneWrapper(TinyResNet()).eval(), ZooInputs((torch.randn(1, 3, 32, 32),))


def _loop() -> tuple[nn.Module, ZooInputs]:
    return Loop().eval(), ZooInputs((torch.randn(1, 8),))


def _loop_growing() -> tuple[nn.Module, ZooInputs]:
    return LoopGrowing().eval(), ZooInputs((torch.randn(4, 4),))


def _multi_output_mixed() -> tuple[nn.Module, ZooInputs]:
    return MultiOutputMixed().eval(), ZooInputs((torch.randn(4, 8),))


def _conv3d() -> tuple[nn.Module, ZooInputs]:
    return Conv3dNet().eval(), ZooInputs((torch.randn(2, 3, 8, 16, 16),))


def _twice() -> tuple[nn.Module, ZooInputs]:
    return Twice().eval(), ZooInputs((torch.randn(2, 8),))


def _scalar_and_empty() -> tuple[nn.Module, ZooInputs]:
    return ScalarAndEmpty().eval(), ZooInputs((torch.randn(2, 4),))


# Task-head models, what people trace most: small configs, random weights, and the inputs a
# tokenizer or processor gives (token ids with an attention mask).


def _tokens(n: int = 12, vocab: int = 128) -> dict[str, torch.Tensor]:
    return {"input_ids": torch.randint(3, vocab, (1, n)), "attention_mask": torch.ones(1, n, dtype=torch.long)}


def _llama_lm() -> tuple[nn.Module, ZooInputs]:
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(
        vocab_size=128, hidden_size=64, intermediate_size=128, num_hidden_layers=3, num_attention_heads=4,
        num_key_value_heads=2, max_position_embeddings=64, bos_token_id=1, eos_token_id=2, pad_token_id=0,
    )  # fmt: skip
    return LlamaForCausalLM(config).eval(), ZooInputs(kwargs={**_tokens(), "use_cache": False})


def _bert_mlm() -> tuple[nn.Module, ZooInputs]:
    from transformers import BertConfig, BertForMaskedLM

    config = BertConfig(
        vocab_size=128, hidden_size=64, num_hidden_layers=3, num_attention_heads=4, intermediate_size=128,
        max_position_embeddings=64, pad_token_id=0,
    )  # fmt: skip
    return BertForMaskedLM(config).eval(), ZooInputs(kwargs=_tokens())


def _vit_cls() -> tuple[nn.Module, ZooInputs]:
    from transformers import ViTConfig, ViTForImageClassification

    config = ViTConfig(
        hidden_size=64, num_hidden_layers=3, num_attention_heads=4, intermediate_size=128, image_size=32,
        patch_size=8, num_labels=10,
    )  # fmt: skip
    return ViTForImageClassification(config).eval(), ZooInputs((torch.randn(1, 3, 32, 32),))


def _resnet_cls() -> tuple[nn.Module, ZooInputs]:
    from transformers import ResNetConfig, ResNetForImageClassification

    config = ResNetConfig(embedding_size=16, hidden_sizes=[16, 32, 64], depths=[1, 1, 1], num_labels=10)
    return ResNetForImageClassification(config).eval(), ZooInputs((torch.randn(1, 3, 64, 64),))


def _whisper() -> tuple[nn.Module, ZooInputs]:
    from transformers import WhisperConfig, WhisperForConditionalGeneration

    config = WhisperConfig(
        vocab_size=128, d_model=64, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4,
        decoder_attention_heads=4, encoder_ffn_dim=128, decoder_ffn_dim=128, num_mel_bins=16,
        max_source_positions=16, max_target_positions=32, pad_token_id=0, bos_token_id=1, eos_token_id=2,
        decoder_start_token_id=1,
    )  # fmt: skip
    features = torch.randn(1, 16, 32)  # (batch, mel bins, frames): two conv strides give 16 positions
    return WhisperForConditionalGeneration(config).eval(), ZooInputs(
        (features,), {"decoder_input_ids": torch.randint(3, 128, (1, 6)), "use_cache": False}
    )


ZOO: dict[str, Builder] = {
    "demo": _demo,
    "gpt2": _gpt2,
    "gpt2_small": _gpt2_small,
    "bert": _bert,
    "t5": _t5,
    "wrapped_t5": _wrapped_t5,
    "bn_cnn_train": _bn_cnn_train,
    "bn_cnn_eval": _bn_cnn_eval,
    "resnet": _resnet,
    "wrapped_cnn": _wrapped_cnn,
    "loop": _loop,
    "loop_growing": _loop_growing,
    "multi_output_mixed": _multi_output_mixed,
    "conv3d": _conv3d,
    "twice": _twice,
    "scalar_and_empty": _scalar_and_empty,
    "llama_lm": _llama_lm,
    "bert_mlm": _bert_mlm,
    "vit_cls": _vit_cls,
    "resnet_cls": _resnet_cls,
    "whisper": _whisper,
}

TASK_HEADS: tuple[str, ...] = ("gpt2", "gpt2_small", "t5", "llama_lm", "bert_mlm", "vit_cls", "resnet_cls", "whisper")
"""Zoo entries that are task-head models (a backbone and its head), as people load them."""

ALL_ZOO: list[str] = list(ZOO)


# Real depths, as people trace them: GPT-2 medium's 24 layers, Llama-7B's 32 and Llama-70B's
# 80, BERT-large's and ViT-large's 24, T5-base's and Whisper-small's 12+12, Mixtral's MoE
# blocks. Narrow widths keep tracing cheap; each model is called as its docs show (token ids
# with an attention mask, ``use_cache`` left on, a ModelOutput returned).


def _gpt2_24() -> tuple[nn.Module, ZooInputs]:
    from transformers import GPT2Config, GPT2LMHeadModel

    config = GPT2Config(
        n_layer=24, n_embd=32, n_head=2, vocab_size=64, n_positions=32, bos_token_id=63, eos_token_id=63
    )
    return GPT2LMHeadModel(config).eval(), ZooInputs(kwargs=_tokens(8, 64))


def _llama(layers: int) -> tuple[nn.Module, ZooInputs]:
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(
        vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=layers, num_attention_heads=2,
        num_key_value_heads=1, max_position_embeddings=32, bos_token_id=1, eos_token_id=2, pad_token_id=0,
    )  # fmt: skip
    return LlamaForCausalLM(config).eval(), ZooInputs(kwargs=_tokens(8, 64))


def _bert_24() -> tuple[nn.Module, ZooInputs]:
    from transformers import BertConfig, BertForMaskedLM

    config = BertConfig(
        vocab_size=64, hidden_size=32, num_hidden_layers=24, num_attention_heads=2, intermediate_size=64,
        max_position_embeddings=32, pad_token_id=0,
    )  # fmt: skip
    return BertForMaskedLM(config).eval(), ZooInputs(kwargs=_tokens(8, 64))


def _vit_24() -> tuple[nn.Module, ZooInputs]:
    from transformers import ViTConfig, ViTForImageClassification

    config = ViTConfig(
        hidden_size=32, num_hidden_layers=24, num_attention_heads=2, intermediate_size=64, image_size=16, patch_size=8,
        num_labels=10,
    )  # fmt: skip
    return ViTForImageClassification(config).eval(), ZooInputs((torch.randn(1, 3, 16, 16),))


def _t5_12() -> tuple[nn.Module, ZooInputs]:
    from transformers import T5Config, T5ForConditionalGeneration

    config = T5Config(
        vocab_size=64, d_model=32, d_kv=8, d_ff=64, num_layers=12, num_decoder_layers=12, num_heads=2, pad_token_id=0,
    )  # fmt: skip
    ids = {"input_ids": torch.randint(1, 64, (1, 8)), "attention_mask": torch.ones(1, 8, dtype=torch.long)}
    return T5ForConditionalGeneration(config).eval(), ZooInputs(
        kwargs={**ids, "decoder_input_ids": torch.randint(1, 64, (1, 4))}
    )


def _whisper_12() -> tuple[nn.Module, ZooInputs]:
    from transformers import WhisperConfig, WhisperForConditionalGeneration

    config = WhisperConfig(
        vocab_size=64, d_model=32, encoder_layers=12, decoder_layers=12, encoder_attention_heads=2,
        decoder_attention_heads=2, encoder_ffn_dim=64, decoder_ffn_dim=64, num_mel_bins=8, max_source_positions=8,
        max_target_positions=16, pad_token_id=0, bos_token_id=1, eos_token_id=2, decoder_start_token_id=1,
    )  # fmt: skip
    features = torch.randn(1, 8, 16)  # (batch, mel bins, frames): two conv strides give 8 positions
    return WhisperForConditionalGeneration(config).eval(), ZooInputs(
        (features,), {"decoder_input_ids": torch.randint(3, 64, (1, 4))}
    )


def _mixtral_8() -> tuple[nn.Module, ZooInputs]:
    from transformers import MixtralConfig, MixtralForCausalLM

    config = MixtralConfig(
        vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=8, num_attention_heads=2,
        num_key_value_heads=1, max_position_embeddings=32, num_local_experts=4, num_experts_per_tok=2,
        bos_token_id=1, eos_token_id=2, pad_token_id=0,
    )  # fmt: skip
    return MixtralForCausalLM(config).eval(), ZooInputs(kwargs=_tokens(8, 64))


DEEP: dict[str, Builder] = {
    "gpt2_24": _gpt2_24,
    "llama_32": lambda: _llama(32),
    "llama_80": lambda: _llama(80),
    "bert_24": _bert_24,
    "vit_24": _vit_24,
    "t5_12": _t5_12,
    "whisper_12": _whisper_12,
    "mixtral_8": _mixtral_8,
}
"""Task-head models at real depths (not in ``ZOO``: the per-view zoo tests stay quick)."""

DEEP_LAYERS: dict[str, tuple[int, ...]] = {
    "gpt2_24": (24,), "llama_32": (32,), "llama_80": (80,), "bert_24": (24,), "vit_24": (24,), "t5_12": (12, 12),
    "whisper_12": (12, 12), "mixtral_8": (8,),
}  # fmt: skip
"""Each deep model's layer stacks (encoder and decoder for the encoder-decoders)."""

DEEP_DEFAULT: tuple[str, ...] = ("gpt2_24", "llama_32", "t5_12")
"""The deep models the default test run traces; ``--deep-zoo`` traces all of ``DEEP``."""


def deep_models() -> list[Any]:
    """``pytest.param`` for each real-depth model; those outside ``DEEP_DEFAULT`` are marked
    ``deep_only`` and skip unless the run was given ``--deep-zoo`` (CI gives it)."""
    import pytest

    return [pytest.param(name, marks=() if name in DEEP_DEFAULT else pytest.mark.deep_only) for name in DEEP]


EXPECT: dict[str, ZooExpect] = {
    "demo": ZooExpect(
        module_addresses=("embed", "pos", "blocks.0.attn.q", "blocks.1.mlp.fc1", "ln_f", "head"),
        dtypes=(torch.int64, torch.float32),
    ),
    # gpt2 outputs: logits + the DynamicCache's key/value tensors for 2 layers.
    "gpt2": ZooExpect(recurrent=True, num_outputs=5, module_addresses=("transformer.h.0.attn", "lm_head")),
    # 12 layers: logits + 24 key/value cache tensors.
    "gpt2_small": ZooExpect(
        recurrent=True, num_outputs=25, module_addresses=("transformer.h.11.mlp.c_proj", "lm_head")
    ),
    # bert outputs: last_hidden_state, pooler_output.
    "bert": ZooExpect(num_outputs=2, module_addresses=("encoder.layer.1.attention",)),
    # t5 outputs: logits, the decoder cache (2 layers x self/cross x k/v = 8 tensors),
    # encoder_last_hidden_state; the wrapper returns logits only. T5's relative
    # position buckets take log(0), so the trace lists non-finite ops (log_1_33 ...).
    "t5": ZooExpect(num_inputs=2, num_outputs=10, module_addresses=("encoder", "decoder", "lm_head")),
    "wrapped_t5": ZooExpect(
        num_inputs=2, module_addresses=("model", "model.encoder", "model.decoder", "model.lm_head")
    ),
    "bn_cnn_train": ZooExpect(
        training=True,
        buffer_suffixes=("running_mean", "running_var", "num_batches_tracked"),
        buffer_values_change=True,
        counter_chains=2,
    ),
    "bn_cnn_eval": ZooExpect(
        training=False,
        buffer_suffixes=("running_mean", "running_var"),
        buffer_values_change=False,
        counter_chains=0,
    ),
    "resnet": ZooExpect(
        module_addresses=("layer1.0.conv1", "layer2.0.downsample.0", "layer2.1.bn2"),
        buffer_values_change=False,
    ),
    "wrapped_cnn": ZooExpect(
        module_addresses=("backbone", "backbone.layer2.0.downsample.0"), buffer_values_change=False
    ),
    "loop": ZooExpect(recurrent=True, min_passes=5, module_calls={"cell": 5, "cell.0": 5}),
    "loop_growing": ZooExpect(recurrent=True, min_passes=4, pass_shapes_vary=True, module_calls={"lin": 4}),
    "multi_output_mixed": ZooExpect(
        has_multi_output=True,
        min_dtypes=3,
        dtypes=(
            torch.float32,
            torch.float16,
            torch.float64,
            torch.bfloat16,
            torch.int32,
            torch.int64,
            torch.bool,
            torch.complex64,
        ),
        has_scalar=True,
        num_outputs=2,
    ),
    "conv3d": ZooExpect(max_rank_at_least=6, module_addresses=("conv",)),
    "twice": ZooExpect(
        recurrent=True,
        min_passes=2,
        module_calls={"shared": 2, "shared.0": 2, "heads": 1},
        num_outputs=2,
    ),
    "scalar_and_empty": ZooExpect(has_scalar=True, has_zero_dim=True),
    "llama_lm": ZooExpect(num_inputs=2, module_addresses=("model.layers.2.self_attn", "model.norm", "lm_head")),
    "bert_mlm": ZooExpect(num_inputs=2, module_addresses=("bert.encoder.layer.2", "cls.predictions")),
    "vit_cls": ZooExpect(module_addresses=("vit.embeddings", "vit.layernorm", "classifier")),
    "resnet_cls": ZooExpect(module_addresses=("resnet.encoder.stages.2", "classifier.1"), buffer_values_change=False),
    # whisper outputs: logits, encoder_last_hidden_state.
    "whisper": ZooExpect(
        num_inputs=2, num_outputs=2, module_addresses=("model.encoder.layers.1", "model.decoder.layers.1", "proj_out")
    ),
}

# Warnings emitted while tracing zoo models, ignored only inside ``trace``.
# Each entry: (message regex, matched at the start; category). Add a line (with why)
# when a new one shows up; never filter globally.
_TRACE_WARNING_FILTERS: tuple[tuple[str, type[Warning]], ...] = (
    # bn_cnn_train: torchlens discloses (once per process, code
    # batchnorm_train_stats_mutated) that tracing a train-mode BatchNorm advanced its
    # running statistics. Intended here: the entry exists to show the counter chain.
    ("tracing runs the model's REAL forward", TorchLensWarning),
    # llama_lm, bert_mlm, whisper: transformers tests its attention mask in Python
    # (``mask.all()`` and the like), a tensor-to-scalar escape torchlens discloses. Those
    # side computations are what the module view leaves undrawn.
    ("TorchLens observed .* tensor-to-Python scalar escape", TorchLensWarning),
)


def build(name: str) -> tuple[nn.Module, ZooInputs]:
    """Seed torch and build zoo entry ``name`` (model and inputs), of ``ZOO`` or ``DEEP``."""
    torch.manual_seed(SEED)
    return (ZOO.get(name) or DEEP[name])()


def trace(name: str) -> torchlens.Trace:
    """Build zoo entry ``name`` with a fixed seed and trace it with TorchLens.

    Raises:
        KeyError: ``name`` is not in ``ZOO``.
    """
    model, inputs = build(name)
    with warnings.catch_warnings():
        for message, category in _TRACE_WARNING_FILTERS:
            warnings.filterwarnings("ignore", message=message, category=category)
        log: torchlens.Trace = torchlens.trace(
            model,
            inputs.args if inputs.args else None,
            input_kwargs=inputs.kwargs or None,
        )
    return log

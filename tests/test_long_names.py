"""Names past the schema's limit export, shortened honestly (issue: over 2,000 characters).

A module class name, a module path and a torch function name longer than a node attribute
may hold are cut in the middle, saying how long they were and that the description holds
the whole text; the description (docString) does hold it. Every view exports, passes the
checker, and the sidebar value stays within the limit.
"""

from __future__ import annotations

import base64
import json
import warnings
from pathlib import Path
from typing import Any

import pytest
import torch
import torchlens
from torch import nn

import tlnetron
from tlnetron import TlnetronWarning
from tlnetron._generated.vocab import GRANULARITY, NODE_TEXT_MAX_LENGTH, BufferPolicy
from tlnetron.pipeline import export_ir
from tlnetron.ir.trace import ROLE_INPUT, ROLE_OP, ROLE_OUTPUT, OpIR, TraceIR
from tlnetron.words.text import shortened

LONG_CLASS = "Block" + "Q" * 2400
LONG_ATTR = "stage_" + "z" * 2300


def _long_model() -> nn.Module:
    inner = type(
        LONG_CLASS,
        (nn.Module,),
        {
            "__init__": lambda self: (nn.Module.__init__(self), setattr(self, "fc", nn.Linear(4, 4)))[0],
            "forward": lambda self, x: torch.relu(self.fc(x)) + 1,
        },
    )
    outer = nn.Module()
    outer.add_module(LONG_ATTR, inner())
    outer.add_module("head", nn.Linear(4, 2))
    outer.forward = lambda x: outer.head(getattr(outer, LONG_ATTR)(x))  # type: ignore[method-assign]
    return outer


def _attributes(node: dict[str, Any]) -> dict[str, str]:
    """Attribute name -> its text (STRING attributes are base64 in ONNX JSON)."""
    return {
        a["name"]: base64.b64decode(a["s"]).decode("utf-8") if "s" in a else str(a.get("i"))
        for a in node.get("attribute", [])
    }


@pytest.mark.parametrize("granularity", GRANULARITY)
def test_long_module_names_export_shortened_with_the_whole_in_the_description(tmp_path: Path, granularity: str) -> None:
    torch.manual_seed(0)
    log = torchlens.trace(_long_model().eval(), torch.randn(2, 4))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TlnetronWarning)
        result = tlnetron.export(log, tmp_path / "m.onnx.json", granularity=granularity)
    model = json.loads(result.artifact_json)
    bodies = [model["graph"], *model.get("functions", [])]
    nodes = [n for b in bodies for n in b.get("node", [])]
    seen_long = 0
    for node in nodes:
        for name, value in _attributes(node).items():
            text = value
            assert len(text) <= NODE_TEXT_MAX_LENGTH, (node["name"], name, len(text))
            if "characters in all" in text:
                seen_long += 1
                whole = LONG_CLASS if name == "class_name" else None
                doc = node.get("docString", "")
                assert (whole or LONG_ATTR) in doc, (node["name"], name)  # the whole name, where a person can read it
    assert seen_long >= 1, "no attribute was long enough to be shortened: the model does not test anything"


@pytest.mark.parametrize("granularity", GRANULARITY)
def test_a_long_torch_function_name_is_shortened_in_every_view(tmp_path: Path, granularity: str) -> None:
    """An IR literal: a function name past the limit (the old refusal, artifact_invalid)."""
    long_function = "torch.nn.functional." + "f" * 2500

    def op(name: str, role: str, parents: tuple[str, ...] = (), function: str | None = None) -> OpIR:
        return OpIR(
            name=name,
            layer=name,
            pass_index=1,
            num_passes=1,
            op_type={ROLE_OP: "relu"}.get(role, role),
            role=role,
            shape=(2,),
            dtype="float32",
            parents=parents,
            ports=tuple(f"arg{i}" for i in range(len(parents))),
            function=function,
            module_path="m" * 2100 if role == ROLE_OP else None,
        )

    ir = TraceIR(
        ops=(
            op("input_1", ROLE_INPUT),
            op("relu_1_1", ROLE_OP, ("input_1",), long_function),
            op("output_1", ROLE_OUTPUT, ("relu_1_1",)),
        )
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TlnetronWarning)
        result = export_ir(
            ir,
            tmp_path / "m.onnx.json",
            granularity=granularity,
            depth=None,
            show_buffers=BufferPolicy.MEANINGFUL,
            attachment=None,
        )
    node = next(n for n in json.loads(result.artifact_json)["graph"]["node"] if n["name"] == "relu_1_1")
    attrs = _attributes(node)
    assert attrs["function"] == shortened(long_function) and len(attrs["function"]) == NODE_TEXT_MAX_LENGTH
    assert attrs["function"].startswith("torch.nn.functional.fff") and "2,520 characters in all" in attrs["function"]
    assert f"torch function: {long_function}" in node["docString"]
    assert f"module_path (whole): {'m' * 2100}" in node["docString"]


def test_shortened_keeps_short_text_and_cuts_long_text_to_the_limit() -> None:
    assert shortened("abc") == "abc"
    assert shortened("x" * NODE_TEXT_MAX_LENGTH) == "x" * NODE_TEXT_MAX_LENGTH
    for n in (NODE_TEXT_MAX_LENGTH + 1, 10_000, 10**6):
        text = "a" * (n // 2) + "b" * (n - n // 2)
        cut = shortened(text)
        assert len(cut) == NODE_TEXT_MAX_LENGTH and cut.startswith("aaa") and cut.endswith("bbb")
        assert f"{n:,} characters in all" in cut

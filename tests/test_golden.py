"""Golden file: a tiny model's op-view artifact and companion, normalised.

Catches unintended format changes (keys, wording, attribute sets, ordering). What varies
from run to run or machine to machine is normalised before comparing: observed durations
(and shares of observed time) become ``<observed>``, source line numbers ``<line>``, tool
versions ``<version>``, and the export id (derived from all of it) ``<export_id>``, after
checking that both files carry the same one. Regenerate after an intended change with::

    UPDATE_GOLDEN=1 pytest tests/test_golden.py
"""

from __future__ import annotations

import json
import os
import re
import warnings
from pathlib import Path
from typing import Any

import onnx
import pytest
import torch
import torchlens
from google.protobuf import json_format
from torch import nn

import tlnetron
from tlnetron import TlnetronWarning
from tlnetron._generated.vocab import COMPANION_SIGNATURE, Granularity, MetaKey

GOLDEN = Path(__file__).resolve().parent / "golden"
ARTIFACT = GOLDEN / "tiny_op.onnx.json"
COMPANION = GOLDEN / "tiny_op.onnx.attachment.json"
OBSERVED = "<observed>"
VERSION = "<version>"
EXPORT_ID = "<export_id>"
MAX_BYTES = 10_000
STAT_DIGITS = 5
"""Significant digits of a float statistic kept in the golden companion."""

_DURATION = re.compile(r"\d[\d.,]*(?:e[+-]?\d+)? (?:s|ms|µs|ns)\b")
_LINE = re.compile(r"(\.py):\d+")


class Tiny(nn.Module):
    """Linear -> ReLU."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(3, 2)
        self.act = nn.ReLU()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out: torch.Tensor = self.act(self.fc(x))
        return out


def _is_observed(key: str) -> bool:
    key = key.lower()
    return "duration" in key or "µs" in key or "time" in key


def _text(value: str) -> str:
    return _LINE.sub(r"\1:<line>", _DURATION.sub(OBSERVED, value))


def normalise_artifact(data: dict[str, Any]) -> dict[str, Any]:
    """Replace observed durations, line numbers and tool versions (in place; returned)."""
    data["producerVersion"] = VERSION

    def walk(obj: Any) -> None:
        if isinstance(obj, dict):
            if set(obj) == {"key", "value"}:
                if _is_observed(obj["key"]):
                    obj["value"] = OBSERVED
                elif obj["key"] in ("torchlens.torchlens_version", "torchlens.torch_version"):
                    obj["value"] = VERSION
                elif obj["key"] == MetaKey.EXPORT_ID:
                    obj["value"] = EXPORT_ID
                else:
                    obj["value"] = _text(obj["value"])
            for key, value in obj.items():
                if key == "docString" and isinstance(value, str):
                    obj[key] = _text(value)
                else:
                    walk(value)
        elif isinstance(obj, list):
            for item in obj:
                walk(item)

    walk(data)
    return data


def normalise_companion(data: dict[str, Any]) -> dict[str, Any]:
    for section in ("metadata", "metrics"):
        for row in data[section]:
            if _is_observed(row["name"]):
                row["value"] = OBSERVED
            elif row["name"] == MetaKey.EXPORT_ID:
                row["value"] = EXPORT_ID
            elif isinstance(row["value"], str):
                row["value"] = re.sub(r"tlnetron \S+", f"tlnetron {VERSION}", row["value"])
            elif isinstance(row["value"], float):
                # A float statistic's last digits depend on the CPU's vector unit.
                row["value"] = float(f"{row['value']:.{STAT_DIGITS}g}")
    return data


def _dump(data: dict[str, Any]) -> str:
    return json.dumps(data, ensure_ascii=False, indent=1) + "\n"


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    torch.manual_seed(0)
    model = Tiny().eval()
    log = torchlens.trace(model, torch.randn(1, 3))
    path = tmp_path_factory.mktemp("golden") / "tiny_op.onnx.json"
    with warnings.catch_warnings():
        warnings.simplefilter("error", TlnetronWarning)  # the tiny model raises no warning
        result = tlnetron.export(log, path, granularity=Granularity.OP)
    assert result.companion_json is not None
    # The id depends on the observed durations: checked here, normalised below.
    ids = [p["value"] for p in json.loads(result.artifact_json)["metadataProps"] if p["key"] == MetaKey.EXPORT_ID]
    ids += [r["value"] for r in json.loads(result.companion_json)["metadata"] if r["name"] == MetaKey.EXPORT_ID]
    assert ids == [result.export_id] * 2 and re.fullmatch("[0-9a-f]{32}", result.export_id), ids
    artifact = _dump(normalise_artifact(json.loads(result.artifact_json)))
    companion = _dump(normalise_companion(json.loads(result.companion_json)))
    if os.environ.get("UPDATE_GOLDEN"):
        ARTIFACT.write_text(artifact, encoding="utf-8")
        COMPANION.write_text(companion, encoding="utf-8")
    return artifact, companion


def test_artifact_matches_golden(exported: tuple[str, str]) -> None:
    artifact, _ = exported
    assert ARTIFACT.is_file(), "no golden file: run UPDATE_GOLDEN=1 pytest tests/test_golden.py"
    assert artifact == ARTIFACT.read_text(encoding="utf-8"), (
        "the op-view artifact format changed; if intended, regenerate with UPDATE_GOLDEN=1 pytest tests/test_golden.py"
    )


def test_companion_matches_golden(exported: tuple[str, str]) -> None:
    _, companion = exported
    assert COMPANION.is_file(), "no golden file: run UPDATE_GOLDEN=1 pytest tests/test_golden.py"
    assert companion == COMPANION.read_text(encoding="utf-8"), (
        "the companion format changed; if intended, regenerate with UPDATE_GOLDEN=1 pytest tests/test_golden.py"
    )


def test_golden_files_are_small_and_still_valid() -> None:
    for path in (ARTIFACT, COMPANION):
        assert path.stat().st_size < MAX_BYTES, path
    model = onnx.ModelProto()
    json_format.Parse(ARTIFACT.read_text(encoding="utf-8"), model)  # normalising keeps it a ModelProto
    onnx.checker.check_model(model, full_check=True)
    names = [n.name for n in model.graph.node]
    assert names == ["linear_1_1", "relu_1_2"]
    assert json.loads(COMPANION.read_text(encoding="utf-8"))["signature"] == COMPANION_SIGNATURE


def test_normalisation_removes_every_duration(exported: tuple[str, str]) -> None:
    for text in exported:
        assert not _DURATION.search(text.replace(OBSERVED, "")), "an observed duration escaped normalisation"

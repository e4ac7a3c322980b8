"""The artifact JSON is exactly what protobuf's own ``MessageToDict`` gives for the checked proto.

The builder emits the proto and its JSON form in one pass; the ModelProto is captured as
``export`` built it (a spy around ``tlnetron.api.build_model``), so the comparison is against
the real, checker-validated proto, not one parsed back from the written text.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import onnx
import pytest
from google.protobuf import json_format

import tlnetron
import tlnetron.api
from tlnetron import TlnetronWarning
from zoo import ZooTrace

CASES = [
    ("loop", "module", "meaningful"),
    ("loop_growing", "rolled", "meaningful"),
    ("bn_cnn_train", "op", "always"),
    ("bn_cnn_train", "module", "always"),
    ("multi_output_mixed", "op", "meaningful"),
    ("scalar_and_empty", "op", "meaningful"),
    ("conv3d", "module", "never"),
    ("twice", "module", "meaningful"),
    ("bert", "module", "meaningful"),
    ("wrapped_cnn", "rolled", "always"),
]


@pytest.mark.parametrize(("name", "granularity", "policy"), CASES, ids=[f"{n}-{g}-{b}" for n, g, b in CASES])
def test_serialiser_matches_protobuf(
    zoo_trace: ZooTrace, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str, granularity: str, policy: str
) -> None:
    built: list[tuple[onnx.ModelProto, dict[str, object]]] = []
    real_build = tlnetron.api.build_model

    def spy(*args: object, **kwargs: object) -> tuple[onnx.ModelProto, dict[str, object]]:
        model, as_json = real_build(*args, **kwargs)  # type: ignore[arg-type]
        copy = onnx.ModelProto()
        copy.CopyFrom(model)
        built.append((copy, as_json))
        return model, as_json

    monkeypatch.setattr(tlnetron.api, "build_model", spy)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TlnetronWarning)
        result = tlnetron.export(zoo_trace(name), tmp_path / "m.onnx.json", granularity=granularity, show_buffers=policy)
    ((model, as_json),) = built

    assert as_json == json_format.MessageToDict(model)
    text = result.artifact_json
    assert json.loads(text) == as_json
    parsed = onnx.ModelProto()
    json_format.Parse(text, parsed)
    assert parsed == model
    assert parsed.SerializeToString(deterministic=True) == model.SerializeToString(deterministic=True)
    # Protobuf's own JSON text reads back to the same proto as ours does.
    assert json.loads(json_format.MessageToJson(model)) == json.loads(text)

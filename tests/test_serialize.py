"""The fast serialiser writes exactly what protobuf's own ``MessageToDict`` would.

The ModelProto is captured as ``export`` built it (a spy around ``tlnetron.api.to_json``),
so the comparison is against the real proto, not one parsed back from the serialiser's
own output.
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
from tlnetron.serialize import model_to_dict, to_json
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
    built: list[onnx.ModelProto] = []

    def spy(model: onnx.ModelProto) -> str:
        copy = onnx.ModelProto()
        copy.CopyFrom(model)
        built.append(copy)
        return to_json(model)

    monkeypatch.setattr(tlnetron.api, "to_json", spy)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TlnetronWarning)
        result = tlnetron.export(zoo_trace(name), tmp_path / "m.onnx.json", granularity=granularity, show_buffers=policy)
    (model,) = built

    assert model_to_dict(model) == json_format.MessageToDict(model)
    text = to_json(model)
    assert text == result.artifact_json
    parsed = onnx.ModelProto()
    json_format.Parse(text, parsed)
    assert parsed == model
    assert parsed.SerializeToString(deterministic=True) == model.SerializeToString(deterministic=True)
    # Protobuf's own JSON text reads back to the same proto as ours does.
    assert json.loads(json_format.MessageToJson(model)) == json.loads(text)


def test_serialiser_refuses_fields_it_does_not_write(zoo_trace: ZooTrace, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    built: list[onnx.ModelProto] = []
    monkeypatch.setattr(tlnetron.api, "to_json", lambda m: built.append(m) or to_json(m))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TlnetronWarning)
        tlnetron.export(zoo_trace("loop"), tmp_path / "m.onnx.json", granularity="module")
    model = onnx.ModelProto()
    model.CopyFrom(built[0])
    model.graph.initializer.add(name="w", data_type=onnx.TensorProto.FLOAT, dims=[1], float_data=[1.0])
    with pytest.raises(ValueError, match="initializer"):
        to_json(model)

"""The artifact JSON is exactly what protobuf's own ``MessageToDict`` gives for the checked proto.

The builder emits the serialized proto and its JSON text in one pass; both are captured as
``export`` built them (a spy around ``tlnetron.pipeline.build_model``), so the comparison is
against the bytes the checker validated, not a proto parsed back from the written text.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import onnx
import pytest
from google.protobuf import json_format

import tlnetron
import tlnetron.pipeline
import tlnetron.build.artifact
from tlnetron.build.artifact import BuiltModel
from tlnetron import TlnetronWarning
from tlnetron._generated.vocab import BufferPolicy, Granularity
from zoo import ZooTrace

CASES = [
    ("loop", Granularity.MODULE, BufferPolicy.MEANINGFUL),
    ("loop_growing", Granularity.ROLLED, BufferPolicy.MEANINGFUL),
    ("bn_cnn_train", Granularity.OP, BufferPolicy.ALWAYS),
    ("bn_cnn_train", Granularity.MODULE, BufferPolicy.ALWAYS),
    ("multi_output_mixed", Granularity.OP, BufferPolicy.MEANINGFUL),
    ("scalar_and_empty", Granularity.OP, BufferPolicy.MEANINGFUL),
    ("conv3d", Granularity.MODULE, BufferPolicy.NEVER),
    ("twice", Granularity.MODULE, BufferPolicy.MEANINGFUL),
    ("bert", Granularity.MODULE, BufferPolicy.MEANINGFUL),
    ("wrapped_cnn", Granularity.ROLLED, BufferPolicy.ALWAYS),
]


def _capture_builds(monkeypatch: pytest.MonkeyPatch) -> list[BuiltModel]:
    """Every model ``export`` builds from now on, as it was built (a spy around
    ``tlnetron.pipeline.build_model``)."""
    built: list[BuiltModel] = []
    real_build = tlnetron.build.artifact.build_model

    def spy(*args: object, **kwargs: object) -> BuiltModel:
        built.append(real_build(*args, **kwargs))  # type: ignore[arg-type]
        return built[-1]

    monkeypatch.setattr(tlnetron.pipeline, "build_model", spy)
    return built


@pytest.mark.parametrize(("name", "granularity", "policy"), CASES, ids=[f"{n}-{g}-{b}" for n, g, b in CASES])
def test_serialiser_matches_protobuf(
    zoo_trace: ZooTrace, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str, granularity: str, policy: str
) -> None:
    built = _capture_builds(monkeypatch)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TlnetronWarning)
        result = tlnetron.export(
            zoo_trace(name), tmp_path / "m.onnx.json", granularity=granularity, show_buffers=policy
        )
    (out,) = built
    model = onnx.ModelProto.FromString(out.proto)  # the bytes the checker checked
    as_json = json.loads(out.json)
    assert result.artifact_bytes == out.json

    assert as_json == json_format.MessageToDict(model)
    text = result.artifact_json
    assert json.loads(text) == as_json
    parsed = onnx.ModelProto()
    json_format.Parse(text, parsed)
    assert parsed == model
    assert parsed.SerializeToString(deterministic=True) == model.SerializeToString(deterministic=True)
    # Protobuf's own JSON text reads back to the same proto as ours does.
    assert json.loads(json_format.MessageToJson(model)) == json.loads(text)


@pytest.mark.parametrize(
    ("name", "granularity"), [("bert", "module"), ("bert", "op"), ("loop", "module"), ("wrapped_cnn", "rolled")]
)
def test_chunked_build_gives_the_model_built_in_one_piece(
    zoo_trace: ZooTrace, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str, granularity: str
) -> None:
    """Nodes, value infos and functions built a few at a time (parts concatenated, JSON
    fragments joined) give the same JSON bytes and the same proto as one single chunk."""

    def export(chunk: int) -> tuple[bytes, onnx.ModelProto]:
        monkeypatch.setattr(tlnetron.build.artifact, "CHUNK_NODES", chunk)
        seen = _capture_builds(monkeypatch)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", TlnetronWarning)
            result = tlnetron.export(
                zoo_trace(name), tmp_path / f"m{chunk}.onnx.json", granularity=granularity, attachment=False
            )
        (out,) = seen
        assert result.artifact_bytes == out.json
        return out.json, onnx.ModelProto.FromString(out.proto)

    whole_json, whole = export(1 << 30)
    small_json, small = export(3)
    assert len(whole.graph.node) > 3 or len(whole.functions) > 3  # the small chunks really split it
    assert small_json == whole_json
    assert small == whole
    assert json.loads(small_json) == json_format.MessageToDict(small)

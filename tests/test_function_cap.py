"""The module view stays within onnx.checker's 10,000-function limit by inlining the deepest
call levels first, and says so (the limit is lowered here so a real model reaches it)."""

from __future__ import annotations

import json
from pathlib import Path

import onnx
import pytest
from google.protobuf import json_format

import tlnetron
import tlnetron.view_module as view_module
from zoo import ZooTrace


@pytest.mark.parametrize("cap", [10, 1, 0])
def test_calls_past_the_function_limit_are_inlined(zoo_trace: ZooTrace, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cap: int) -> None:
    log = zoo_trace("bert")
    full = tlnetron.export(log, tmp_path / "full.onnx.json")
    assert full.function_count > cap
    monkeypatch.setattr(view_module, "MAX_FUNCTIONS", cap)
    with pytest.warns(tlnetron.TlnetronWarning) as caught:
        capped = tlnetron.export(log, tmp_path / "capped.onnx.json")
    assert "function_limit_inlined" in {w.message.code for w in caught if isinstance(w.message, tlnetron.TlnetronWarning)}
    assert capped.function_count <= cap
    model = onnx.ModelProto()
    json_format.Parse(capped.artifact_json, model)
    onnx.checker.check_model(model, full_check=True)
    meta = {p.key: p.value for p in model.metadata_props}
    assert json.loads(meta["torchlens.inlined_call_count"]) > 0
    assert "function_limit_inlined" in json.loads(meta["torchlens.warnings"])
    # Inlining moves boxes, it never loses ops: every op node is still drawn somewhere.
    def op_nodes(m: onnx.ModelProto) -> set[str]:
        return {n.name for body in (m.graph, *m.functions) for n in body.node if n.domain == "ai.torchlens.lossy"}

    reference = onnx.ModelProto()
    json_format.Parse(full.artifact_json, reference)
    assert op_nodes(model) == op_nodes(reference)
    assert "torchlens.inlined_call_count" not in {p.key for p in reference.metadata_props}

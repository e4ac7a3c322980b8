"""The module view stays within onnx.checker's 10,000-function limit by inlining the deepest
call levels first, and says so (the limit is lowered here so a real model reaches it)."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import onnx
import pytest
from google.protobuf import json_format

import tlnetron
import tlnetron.views.module as view_module
from tlnetron._generated.vocab import Domain
from zoo import ZooTrace


@pytest.mark.parametrize("cap", [10, 1, 0])
def test_calls_past_the_function_limit_are_inlined(
    zoo_trace: ZooTrace, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cap: int
) -> None:
    log = zoo_trace("bert")
    full = tlnetron.export(log, tmp_path / "full.onnx.json")
    assert full.function_count > cap
    monkeypatch.setattr(view_module, "MAX_FUNCTIONS", cap)
    with pytest.warns(tlnetron.TlnetronWarning) as caught:
        capped = tlnetron.export(log, tmp_path / "capped.onnx.json")
    assert "function_limit_inlined" in {
        w.message.code for w in caught if isinstance(w.message, tlnetron.TlnetronWarning)
    }
    assert capped.function_count <= cap
    model = onnx.ModelProto()
    json_format.Parse(capped.artifact_json, model)
    onnx.checker.check_model(model, full_check=True)
    meta = {p.key: p.value for p in model.metadata_props}
    assert json.loads(meta["torchlens.inlined_call_count"]) > 0
    assert "function_limit_inlined" in json.loads(meta["torchlens.warnings"])

    # Inlining moves boxes, it never loses ops: every op node is still drawn somewhere.
    def op_nodes(m: onnx.ModelProto) -> set[str]:
        return {n.name for body in (m.graph, *m.functions) for n in body.node if n.domain == Domain.LOSSY}

    reference = onnx.ModelProto()
    json_format.Parse(full.artifact_json, reference)
    assert op_nodes(model) == op_nodes(reference)
    assert "torchlens.inlined_call_count" not in {p.key for p in reference.metadata_props}


@pytest.mark.parametrize(
    ("version", "quadratic"),
    [
        ("1.22.0", False),
        ("1.17.0", False),
        ("1.9.1", False),
        ("1.23.0", True),
        ("1.23.2", True),
        ("1.24.0rc1", True),
        ("2.0.0", True),
        ("dev", False),
    ],
)
def test_which_onnx_checks_functions_in_quadratic_time(version: str, quadratic: bool) -> None:
    from tlnetron.check.onnx_check import checker_is_quadratic

    assert checker_is_quadratic(version) is quadratic


@pytest.mark.parametrize("reached", [True, False])
def test_a_quadratic_checker_is_named_with_its_remedy_never_in_the_artifact(
    zoo_trace: ZooTrace, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, reached: bool
) -> None:
    """Past the function count where onnx 1.23's check dominates (lowered here so a real
    model reaches it), the installed onnx's quadratic check is named with its remedy, in
    the result's warnings but not in the artifact (it is about this machine, not the trace)."""
    import tlnetron.check.advisories as advisories
    from tlnetron.check.onnx_check import checker_is_quadratic

    log = zoo_trace("bert")
    n = tlnetron.export(log, tmp_path / "probe.onnx.json", attachment=False).function_count
    assert n > 1
    monkeypatch.setattr(advisories, "QUADRATIC_CHECK_FROM_FUNCTIONS", n if reached else n + 1)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = tlnetron.export(log, tmp_path / "m.onnx.json")
    ours = [
        w.message
        for w in caught
        if isinstance(w.message, tlnetron.TlnetronWarning) and w.message.code == "onnx_checker_quadratic"
    ]
    expected = reached and checker_is_quadratic()
    assert bool(ours) is expected
    assert ("onnx_checker_quadratic" in result.warnings) is expected
    if expected:
        text = str(ours[0])
        assert onnx.__version__ in text and f"{n:,}" in text and "onnx==1.22.0" in text and "depth=" in text
    model = onnx.ModelProto()
    json_format.Parse(result.artifact_json, model)
    meta = {p.key: p.value for p in model.metadata_props}
    assert "onnx_checker_quadratic" not in json.loads(meta.get("torchlens.warnings", "[]"))

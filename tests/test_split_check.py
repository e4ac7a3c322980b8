"""On onnx 1.23, ``check_onnx`` runs the full check split (structural check on the real bytes,
strict shape inference on pieces with few functions) for module views with many functions:
the verdict and message of ``onnx.checker.check_model(full_check=True)``, in linear time.

Here the split is forced on small models (threshold 0, a quadratic checker assumed, so it
also runs on onnx 1.22) and compared with the real full check, on an exported module view
and on broken copies of it."""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator
from pathlib import Path

import onnx
import pytest
from google.protobuf import json_format
from onnx import TensorProto, helper
from zoo import ZooTrace

import tlnetron
import tlnetron.pipeline
from tlnetron.check import onnx_check
from tlnetron._generated.vocab import Domain


@pytest.fixture
def forced(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(onnx_check, "SPLIT_CHECK_FROM_FUNCTIONS", 0)
    monkeypatch.setattr(onnx_check, "checker_is_quadratic", lambda onnx_version=None: True)


@pytest.fixture(scope="module")
def module_view(zoo_trace: ZooTrace, tmp_path_factory: pytest.TempPathFactory) -> onnx.ModelProto:
    path = tmp_path_factory.mktemp("split") / "t5.onnx.json"
    result = tlnetron.export(zoo_trace("t5"), path, attachment=False)
    model = json_format.Parse(result.artifact_json, onnx.ModelProto())
    path.unlink()
    assert len(model.functions) >= 20 and any(n.domain == Domain.MODULE for f in model.functions for n in f.node)
    return model


def _call(m: onnx.ModelProto) -> onnx.NodeProto:
    return next(n for n in m.graph.node if n.domain == Domain.MODULE)


def _nested(m: onnx.ModelProto) -> onnx.FunctionProto:
    return next(f for f in m.functions if any(n.domain == Domain.MODULE for n in f.node))


def _drop_lossy_opset(m: onnx.ModelProto) -> None:
    f = _nested(m)
    keep = [o for o in f.opset_import if o.domain != Domain.LOSSY]
    del f.opset_import[:]
    f.opset_import.extend(keep)


def _breaks() -> Iterator[tuple[str, Callable[[onnx.ModelProto], object], bool]]:
    """(name, mutation, whether the split still applies)."""
    yield "unchanged", lambda m: None, True
    yield (
        "initializer typed unlike the input",
        lambda m: m.graph.initializer.append(helper.make_tensor(m.graph.input[0].name, TensorProto.INT32, [2], [1, 2])),
        True,
    )
    yield "function without the lossy opset", _drop_lossy_opset, True
    yield (
        "call cycle",
        lambda m: _nested(m).node.add(
            op_type=_nested(m).name,
            domain=Domain.MODULE,
            overload=_nested(m).overload,
            input=[_nested(m).input[0]],
            output=["loop"],
        ),
        True,
    )
    yield "call with an extra input", lambda m: _call(m).input.append(m.graph.input[0].name), True
    yield "call with an extra output", lambda m: _call(m).output.append("extra"), True
    yield "function with an extra formal", lambda m: m.functions[0].input.append("unbound"), True
    yield (
        "function never called",
        lambda m: (m.functions.add().CopyFrom(m.functions[0]), setattr(m.functions[-1], "overload", "never")),
        True,
    )
    yield "function returning its input", lambda m: m.functions[0].output.append(m.functions[0].input[0]), False
    yield (
        "standard op with a bad arity",
        lambda m: (
            m.functions[0].opset_import.add(domain="", version=21),
            m.functions[0].node.add(op_type="Add", input=[m.functions[0].input[0]] * 3, output=["bad"]),
        ),
        False,
    )
    yield "call to no function", lambda m: setattr(_call(m), "overload", "nowhere"), False


@pytest.mark.parametrize(("name", "mutate", "splits"), list(_breaks()), ids=[b[0] for b in _breaks()])
def test_the_split_check_gives_the_real_verdict(
    forced: None, module_view: onnx.ModelProto, name: str, mutate: Callable[[onnx.ModelProto], object], splits: bool
) -> None:
    model = copy.deepcopy(module_view)
    mutate(model)
    data = model.SerializeToString()
    try:
        onnx.checker.check_model(data, full_check=True)
        real = None
    except (onnx.checker.ValidationError, onnx.shape_inference.InferenceError) as exc:
        real = str(exc).strip()
    split: list[bool] = []
    assert onnx_check.check_onnx(data, split=split) == real
    assert split == [splits]


def test_a_split_export_passes_the_real_full_check(
    forced: None, zoo_trace: ZooTrace, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[bool] = []
    real = tlnetron.pipeline.check_onnx

    def spy(model: bytes, **kw: object) -> str | None:
        out = real(model, **kw)  # type: ignore[arg-type]
        seen.extend(kw["split"])  # type: ignore[call-overload]
        return out

    monkeypatch.setattr(tlnetron.pipeline, "check_onnx", spy)
    result = tlnetron.export(zoo_trace("gpt2"), tmp_path / "m.onnx.json", attachment=False)
    assert seen == [True]
    assert "onnx_checker_quadratic" not in result.warnings
    onnx.checker.check_model(json_format.Parse(result.artifact_json, onnx.ModelProto()), full_check=True)


def test_every_piece_holds_few_functions(module_view: onnx.ModelProto, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(onnx_check, "_SPLIT_CHUNK", 4)
    pieces = list(onnx_check._split_pieces(module_view))
    stubs = {f.overload for p in pieces for f in p.functions if f.name == onnx_check._STUB}
    assert all(len(p.functions) <= 4 + len(stubs) for p in pieces)
    bodies = [f.overload for p in pieces[1:] for f in p.functions if f.name != onnx_check._STUB]
    assert bodies == [f.overload for f in module_view.functions]  # every body once, in order
    assert not any(
        n.domain == Domain.MODULE and n.op_type != onnx_check._STUB for p in pieces for f in p.functions for n in f.node
    )


def test_a_schema_for_our_domains_turns_the_split_off(module_view: onnx.ModelProto) -> None:
    op = next(n.op_type for f in module_view.functions for n in f.node if n.domain == Domain.LOSSY)
    schema = onnx.defs.OpSchema(op, Domain.LOSSY, 1, inputs=[], outputs=[])
    onnx.defs.register_schema(schema)
    try:
        assert "schema" in (onnx_check.split_check_refusal(module_view) or "")
    finally:
        onnx.defs.deregister_schema(op, 1, Domain.LOSSY)
    assert onnx_check.split_check_refusal(module_view) is None

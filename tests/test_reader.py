"""The reader reads less where the view cannot show it, and the export cannot tell.

``export`` reads a trace with its buffer policy (``read_trace(log, show_buffers=...)``):
buffer pseudo-ops the policy hides skip their shape, dtype, bytes and access kind. The rolled
view reads repeated passes briefly (``brief_repeats=True``): only what a layer compares or
sums across passes. Exporting the lighter IR must give exactly the bytes the fully read IR
gives.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest

from tlnetron import TlnetronWarning, export
from tlnetron._generated.vocab import BUFFER_POLICY, GRANULARITY, BufferPolicy, Granularity
from tlnetron.pipeline import export_ir
from tlnetron.ir.trace import ROLE_BUFFER, ROLE_INPUT, ROLE_OP, ROLE_OUTPUT, OpIR, TraceIR
from tlnetron.read.trace import read_trace
from zoo import ZooTrace


@pytest.mark.parametrize("name", ["bn_cnn_train", "bn_cnn_eval", "resnet"])
@pytest.mark.parametrize("policy", BUFFER_POLICY)
@pytest.mark.parametrize("granularity", GRANULARITY)
def test_light_buffer_read_exports_the_same_bytes(
    zoo_trace: ZooTrace, tmp_path: Path, name: str, policy: str, granularity: str
) -> None:
    log = zoo_trace(name)
    light = read_trace(log, show_buffers=policy)
    full = read_trace(log)
    buffers = [op for op in full.ops if op.role == ROLE_BUFFER]
    assert buffers, f"{name} has no buffer pseudo-ops to read lightly"
    skipped = [op for op in light.ops if op.role == ROLE_BUFFER and op.shape is None]
    if policy == BufferPolicy.ALWAYS:
        assert light == full
    else:
        assert skipped, "the policy hides buffers, so some were read lightly"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TlnetronWarning)
        # One file name in two folders: the companion names its artifact, and the export
        # id in both files is derived from both.
        (tmp_path / "a").mkdir()
        (tmp_path / "b").mkdir()
        via_export = export(log, tmp_path / "a" / "m.onnx.json", granularity=granularity, show_buffers=policy)
        via_full = export_ir(
            full,
            tmp_path / "b" / "m.onnx.json",
            granularity=granularity,
            depth=None,
            show_buffers=policy,
            attachment=None,
        )
    assert via_export.artifact_json == via_full.artifact_json
    assert via_export.companion_json == via_full.companion_json
    assert via_export.warnings == via_full.warnings


@pytest.mark.parametrize("name", ["loop", "loop_growing", "twice", "gpt2", "bn_cnn_train", "multi_output_mixed"])
@pytest.mark.parametrize("policy", BUFFER_POLICY)
def test_brief_repeats_export_the_same_rolled_bytes(
    zoo_trace: ZooTrace, tmp_path: Path, name: str, policy: str
) -> None:
    log = zoo_trace(name)
    brief = read_trace(log, show_buffers=policy, module_calls=False, brief_repeats=True)
    full = read_trace(log, show_buffers=policy, module_calls=False)
    assert [
        (op.name, op.shape, op.dtype, op.parents, op.ports, op.duration_s, op.flops, op.nbytes) for op in brief.ops
    ] == [(op.name, op.shape, op.dtype, op.parents, op.ports, op.duration_s, op.flops, op.nbytes) for op in full.ops]
    repeats = [op for op in brief.ops if op.role == ROLE_OP and op.pass_index > 1]
    if name in ("loop", "loop_growing", "twice"):
        assert repeats, f"{name} has repeated passes"
    assert all(op.location is None and not op.module_calls and op.module_path is None for op in repeats)
    by_name = {op.name: op for op in full.ops}
    assert all(op.function == by_name[op.name].function and op.params == by_name[op.name].params for op in repeats)
    assert [op for op in brief.ops if op.pass_index == 1] == [op for op in full.ops if op.pass_index == 1]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TlnetronWarning)
        # One file name in two folders: the companion names its artifact, and the export
        # id in both files is derived from both.
        (tmp_path / "a").mkdir()
        (tmp_path / "b").mkdir()
        via_export = export(log, tmp_path / "a" / "m.onnx.json", granularity=Granularity.ROLLED, show_buffers=policy)
        via_full = export_ir(
            full,
            tmp_path / "b" / "m.onnx.json",
            granularity=Granularity.ROLLED,
            depth=None,
            show_buffers=policy,
            attachment=None,
        )
    assert via_export.artifact_json == via_full.artifact_json
    assert via_export.companion_json == via_full.companion_json
    assert via_export.warnings == via_full.warnings


@pytest.mark.parametrize("name", ["loop", "loop_growing", "twice"])
def test_what_an_op_is_is_the_same_for_every_pass_of_its_layer(zoo_trace: ZooTrace, name: str) -> None:
    """The reader reads an op's type, function, parameters, multi-output slot and module
    address once per layer (TorchLens keeps them per Layer). Hold TorchLens to that on
    every repeated pass, and the reader's IR to what each op itself says."""
    log = zoo_trace(name)
    fields = (
        "type",
        "func_qualname",
        "num_params",
        "param_names",
        "param_shapes",
        "multi_output_index",
        "in_multi_output",
        "address",
    )
    first: dict[str, tuple[object, ...]] = {}
    repeats = 0
    for op in log.ops:
        seen = tuple(repr(getattr(op, f, None)) for f in fields)
        if op.layer_label in first:
            repeats += 1
            assert seen == first[op.layer_label], f"{op.label} differs from its layer's first pass"
        else:
            first[op.layer_label] = seen
    assert repeats, f"{name} has no repeated passes"
    ir = read_trace(log)
    for raw, op in zip(log.ops, ir.ops):
        if op.role == ROLE_OP:
            assert op.function == str(raw.func_qualname or raw.func_name)
            assert op.num_params == int(raw.num_params or 0)
            assert op.module_path == (str(raw.address) if raw.module_call_stack and raw.address else None)


@pytest.mark.parametrize("name", ["gpt2", "t5", "wrapped_cnn", "loop", "multi_output_mixed"])
def test_an_ops_module_address_is_its_innermost_calls(zoo_trace: ZooTrace, name: str) -> None:
    """The reader takes an op's module address from its innermost module call's label
    (``"<address>:<call index>"``) instead of reading ``op.address``. Hold TorchLens to
    that on every op inside a call, and the IR to what ``op.address`` says, in every view."""
    log = zoo_trace(name)
    inside = 0
    for op in log.ops:
        if op.module_call_stack and not op.is_buffer:
            inside += 1
            assert str(op.address) == str(op.module_call_stack[-1]).rpartition(":")[0], op.label
    assert inside
    for module_calls, brief in ((True, False), (False, False), (False, True)):
        ir = read_trace(log, module_calls=module_calls, brief_repeats=brief)
        for raw, op in zip(log.ops, ir.ops):
            if op.role == ROLE_OP and op.module_calls:
                assert op.module_path == str(raw.address), raw.label


def test_rolled_layer_whose_first_pass_is_hidden_is_described_by_its_first_pass(tmp_path: Path) -> None:
    """The buffer policy can hide a layer's first pass (its neighbours are all hidden
    buffers) and keep a later one; the rolled node still names the first pass's function
    and source, which a brief read of the later pass does not carry."""

    def op(name: str, layer: str, pass_index: int, role: str, parents: tuple[str, ...] = (), **kw: object) -> OpIR:
        return OpIR(
            name=name, layer=layer, pass_index=pass_index, num_passes=2 if layer == "add_1_1" else 1,
            op_type={ROLE_OP: "add"}.get(role, role), role=role, shape=(2,), dtype="float32",
            parents=parents, ports=tuple(f"arg{i}" for i in range(len(parents))), **kw,  # type: ignore[arg-type]
        )  # fmt: skip

    detail = {"function": "add", "location": "m.py:3 in forward", "module_calls": ("m:1",), "module_path": "m"}
    ops = (
        op("buffer_1", "buffer_1", 1, ROLE_BUFFER, buffer_address="m.num_batches_tracked"),
        op("add_1_1:1", "add_1_1", 1, ROLE_OP, ("buffer_1",), **detail),
        op("buffer_2", "buffer_2", 1, ROLE_BUFFER, ("add_1_1:1",), buffer_address="m.num_batches_tracked"),
        op("input_1", "input_1", 1, ROLE_INPUT),
        op("add_1_1:2", "add_1_1", 2, ROLE_OP, ("input_1",)),  # read briefly: no function, no source
        op("output_1", "output_1", 1, ROLE_OUTPUT, ("add_1_1:2",)),
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TlnetronWarning)
        res = export_ir(
            TraceIR(ops=ops),
            tmp_path / "m.onnx.json",
            granularity=Granularity.ROLLED,
            depth=None,
            show_buffers=BufferPolicy.MEANINGFUL,
            attachment=None,
        )
    (node,) = [n for n in json.loads(res.artifact_json)["graph"]["node"] if n["name"] == "add_1_1"]
    attrs = {a["name"] for a in node.get("attribute", [])}
    assert {"function", "module_path"} <= attrs
    assert "torch function: add" in node.get("docString", "") and "called at: m.py:3 in forward" in node.get(
        "docString", ""
    )
    assert node["input"] == ["input_1"]


def test_worded_fact_memos_start_empty_for_every_export(tmp_path: Path) -> None:
    """Memos of worded facts help within one export only; a repeated export (as in the
    benchmarks) must not be faster because an earlier one filled them."""
    from tlnetron.words.facts import bytes_text, flops_text
    from tlnetron.ir.trace import ROLE_INPUT, ROLE_OP, ROLE_OUTPUT, OpIR, TraceIR
    from tlnetron.ir.drawing import shape_text

    flops_text(123_456)
    bytes_text(7)
    shape_text((9, 9))
    assert flops_text.cache_info().currsize and bytes_text.cache_info().currsize
    ops = (
        OpIR(
            name="input_1",
            layer="input_1",
            pass_index=1,
            num_passes=1,
            op_type="input",
            role=ROLE_INPUT,
            shape=None,
            dtype=None,
        ),
        OpIR(
            name="relu_1_1",
            layer="relu_1_1",
            pass_index=1,
            num_passes=1,
            op_type="relu",
            role=ROLE_OP,
            shape=None,
            dtype=None,
            parents=("input_1",),
            ports=("arg0",),
        ),
        OpIR(
            name="output_1",
            layer="output_1",
            pass_index=1,
            num_passes=1,
            op_type="output",
            role=ROLE_OUTPUT,
            shape=None,
            dtype=None,
            parents=("relu_1_1",),
        ),
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TlnetronWarning)
        export_ir(
            TraceIR(ops=ops),
            tmp_path / "m.onnx.json",
            granularity=Granularity.OP,
            depth=None,
            show_buffers=BufferPolicy.MEANINGFUL,
            attachment=None,
        )
    # No op has FLOPs, bytes or a shape: nothing from before the export survives it.
    assert flops_text.cache_info().currsize == 0
    assert bytes_text.cache_info().currsize == 0
    assert shape_text.cache_info().currsize == 0


def test_versions_are_those_of_the_imported_packages(zoo_trace: ZooTrace, monkeypatch: pytest.MonkeyPatch) -> None:
    """The IR records the versions of the torch and torchlens that made the trace: their
    modules' ``__version__``; the installed metadata only when a module has none."""
    import importlib.metadata

    import torch
    import torchlens

    from tlnetron.read import trace as reader
    from tlnetron.read.values import dist_version

    dist_version.cache_clear()
    ir = reader.read_trace(zoo_trace("twice"))
    assert (ir.torchlens_version, ir.torch_version) == (str(torchlens.__version__), str(torch.__version__))
    # Here the installed distributions agree with the modules.
    assert ir.torch_version == importlib.metadata.version("torch")
    # A module without __version__ falls back to the metadata, then to "unknown".
    dist_version.cache_clear()
    monkeypatch.delattr(torchlens, "__version__")
    assert dist_version("torchlens") == importlib.metadata.version("torchlens")
    assert dist_version("no-such-distribution-tlnetron") == "unknown"
    dist_version.cache_clear()

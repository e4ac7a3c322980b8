"""The model zoo traces, and each entry shows the structure it exists for."""

from __future__ import annotations

import pytest
import torch
import torchlens

from zoo import ALL_ZOO, EXPECT, ZOO, ZooTrace, build, trace

from tlnetron.demo import DEMO_SEQ_LEN, DEMO_VOCAB, build_demo_model, trace_demo


def _op_shapes(log: torchlens.Trace) -> list[tuple[int, ...]]:
    return [tuple(op.shape) for op in log.ops if op.shape is not None]


def _counter_chains(log: torchlens.Trace) -> int:
    """Compute ops fed by and feeding only buffers on num_batches_tracked addresses."""

    def is_counter_buffer(ref: str) -> bool:
        op = log.ops[ref]
        return bool(op.is_buffer) and str(op.address).endswith("num_batches_tracked")

    return sum(
        1
        for op in log.ops
        if op.is_compute_op
        and op.parents
        and op.children
        and all(is_counter_buffer(p) for p in op.parents)
        and all(is_counter_buffer(c) for c in op.children)
    )


def _structure(log: torchlens.Trace) -> list[tuple[object, ...]]:
    """Everything that must not change between two traces of one zoo entry."""
    rows: list[tuple[object, ...]] = [
        (
            op.label,
            op.func_name,
            tuple(op.shape) if op.shape is not None else None,
            str(op.dtype),
            tuple(log.ops[p].label for p in op.parents),
            tuple(op.module_call_stack),
        )
        for op in log.ops
    ]
    rows.append(tuple(call.call_label for call in log.module_calls))
    return rows


def test_registry_is_consistent() -> None:
    assert ALL_ZOO == list(ZOO)
    assert set(EXPECT) == set(ZOO)


@pytest.mark.parametrize("name", ALL_ZOO)
def test_entry_traces(name: str, zoo_trace: ZooTrace) -> None:
    log = zoo_trace(name)
    assert log.outcome is not None
    assert log.outcome.status == "complete"
    assert len(log.ops) > 0
    assert log.num_ops > 0
    assert log.num_ops < len(log.ops)  # input/output pseudo-ops are not compute ops
    assert log.num_module_calls > 0


@pytest.mark.parametrize("name", ALL_ZOO)
def test_entry_expectations(name: str, zoo_trace: ZooTrace) -> None:
    log = zoo_trace(name)
    expect = EXPECT[name]
    ops = list(log.ops)
    shapes = _op_shapes(log)
    dtypes = {op.dtype for op in ops}

    assert len(log.input_ops) == expect.num_inputs
    assert len(log.output_ops) == expect.num_outputs
    if expect.recurrent is not None:
        assert log.is_recurrent is expect.recurrent
    assert max(layer.num_passes for layer in log.layers) >= expect.min_passes
    if expect.pass_shapes_vary:
        assert any(len({tuple(op.shape) for op in layer.ops}) > 1 for layer in log.recurrent_layers)
    if expect.training is not None:
        assert log.modules["self"].training is expect.training
    buffer_addresses = [str(op.address) for op in ops if op.is_buffer]
    for suffix in expect.buffer_suffixes:
        assert any(address.endswith(suffix) for address in buffer_addresses), suffix
    if expect.buffer_values_change is not None:
        changed = any(op.is_buffer and op.buffer_value_changed for op in ops)
        assert changed is expect.buffer_values_change
    if expect.counter_chains is not None:
        assert _counter_chains(log) == expect.counter_chains
    assert max(len(shape) for shape in shapes) >= expect.max_rank_at_least
    if expect.has_multi_output:
        assert any(op.in_multi_output for op in ops)
    assert len(dtypes) >= expect.min_dtypes
    assert set(expect.dtypes) <= dtypes
    if expect.has_scalar:
        assert () in shapes
    if expect.has_zero_dim:
        assert any(0 in shape for shape in shapes)
    for address in expect.module_addresses:
        assert address in log.modules, address
    for address, calls in expect.module_calls.items():
        assert log.modules[address].num_calls == calls, address


@pytest.mark.parametrize("name", ALL_ZOO)
def test_structure_is_deterministic(name: str, zoo_trace: ZooTrace) -> None:
    assert _structure(trace(name)) == _structure(zoo_trace(name))


def test_loop_layer_has_five_passes(zoo_trace: ZooTrace) -> None:
    log = zoo_trace("loop")
    layer = log["cell.0"]
    assert layer.num_calls == 5
    assert [op.label for op in log.layers["linear_1_1"].ops] == [f"linear_1_1:{k}" for k in range(1, 6)]


def test_loop_growing_shapes_vary_across_passes(zoo_trace: ZooTrace) -> None:
    layer = zoo_trace("loop_growing").layers["linear_1_2"]
    assert [tuple(op.shape) for op in layer.ops] == [(k, 4) for k in range(1, 5)]


def test_multi_output_mixed_outputs_share_a_call(zoo_trace: ZooTrace) -> None:
    log = zoo_trace("multi_output_mixed")
    calls: dict[object, list[int]] = {}
    for op in log.ops:
        if op.in_multi_output:
            calls.setdefault(op.func_call_id, []).append(op.multi_output_index)
    # split, topk, chunk and max(dim) each give two outputs from one call.
    assert len(calls) >= 4
    assert all(sorted(indices) == [0, 1] for indices in calls.values())


def test_conv3d_has_rank_five_and_six_shapes(zoo_trace: ZooTrace) -> None:
    ranks = {len(shape) for shape in _op_shapes(zoo_trace("conv3d"))}
    assert {5, 6} <= ranks


def test_twice_returns_a_tuple_from_a_submodule(zoo_trace: ZooTrace) -> None:
    log = zoo_trace("twice")
    assert len(log.module_calls["heads:1"].output_ops) == 2


def test_wrapped_models_nest_the_original(zoo_trace: ZooTrace) -> None:
    for plain, wrapped, prefix in (("t5", "wrapped_t5", "model."), ("resnet", "wrapped_cnn", "backbone.")):
        plain_modules = {m.address for m in zoo_trace(plain).modules} - {"self"}
        wrapped_modules = {m.address for m in zoo_trace(wrapped).modules}
        assert {prefix + address for address in plain_modules} <= wrapped_modules


def test_demo_model_is_deterministic() -> None:
    model_a, tokens_a = build_demo_model()
    model_b, tokens_b = build_demo_model()
    assert not model_a.training
    assert tokens_a.dtype == torch.int64
    assert tuple(tokens_a.shape) == (1, DEMO_SEQ_LEN)
    assert torch.equal(tokens_a, tokens_b)
    for (name_a, p_a), (name_b, p_b) in zip(model_a.state_dict().items(), model_b.state_dict().items(), strict=True):
        assert name_a == name_b
        assert torch.equal(p_a, p_b)
    with torch.no_grad():
        assert tuple(model_a(tokens_a).shape) == (1, DEMO_SEQ_LEN, DEMO_VOCAB)


def test_trace_demo(zoo_trace: ZooTrace) -> None:
    log = trace_demo()
    assert _structure(log) == _structure(zoo_trace("demo"))
    assert "blocks.0.attn.q" in log.modules
    assert "blocks.1.mlp.fc2" in log.modules


def test_build_seeds_inputs() -> None:
    _, first = build("bn_cnn_train")
    _, second = build("bn_cnn_train")
    assert torch.equal(first.args[0], second.args[0])

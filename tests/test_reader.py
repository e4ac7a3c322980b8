"""The reader reads less for buffers the policy hides, and the export cannot tell.

``export`` reads a trace with its buffer policy (``read_trace(log, show_buffers=...)``):
buffer pseudo-ops the policy hides skip their shape, dtype, bytes and access kind. Exporting
that lighter IR must give exactly the bytes the fully read IR gives.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

from tlnetron import TlnetronWarning, export
from tlnetron.api import export_ir
from tlnetron.ir import ROLE_BUFFER
from tlnetron.reader import read_trace
from zoo import ZooTrace


@pytest.mark.parametrize("name", ["bn_cnn_train", "bn_cnn_eval", "resnet"])
@pytest.mark.parametrize("policy", ["meaningful", "never", "always"])
@pytest.mark.parametrize("granularity", ["module", "op", "rolled"])
def test_light_buffer_read_exports_the_same_bytes(
    zoo_trace: ZooTrace, tmp_path: Path, name: str, policy: str, granularity: str
) -> None:
    log = zoo_trace(name)
    light = read_trace(log, show_buffers=policy)
    full = read_trace(log)
    buffers = [op for op in full.ops if op.role == ROLE_BUFFER]
    assert buffers, f"{name} has no buffer pseudo-ops to read lightly"
    skipped = [op for op in light.ops if op.role == ROLE_BUFFER and op.shape is None]
    if policy == "always":
        assert light == full
    else:
        assert skipped, "the policy hides buffers, so some were read lightly"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TlnetronWarning)
        via_export = export(log, tmp_path / "a.onnx.json", granularity=granularity, show_buffers=policy)
        via_full = export_ir(
            full, tmp_path / "b.onnx.json", granularity=granularity, depth=None, show_buffers=policy, attachment=None
        )
    assert via_export.artifact_json == via_full.artifact_json.replace("b.onnx.json", "a.onnx.json")
    assert via_export.companion_json == via_full.companion_json.replace("b.onnx.json", "a.onnx.json")
    assert via_export.warnings == via_full.warnings


def test_worded_fact_memos_start_empty_for_every_export(tmp_path: Path) -> None:
    """Memos of worded facts help within one export only; a repeated export (as in the
    benchmarks) must not be faster because an earlier one filled them."""
    from tlnetron.facts import bytes_text, flops_text
    from tlnetron.ir import ROLE_INPUT, ROLE_OP, ROLE_OUTPUT, OpIR, TraceIR
    from tlnetron.projection import shape_text

    flops_text(123_456)
    bytes_text(7)
    shape_text((9, 9))
    assert flops_text.cache_info().currsize and bytes_text.cache_info().currsize
    ops = (
        OpIR(name="input_1", layer="input_1", pass_index=1, num_passes=1, op_type="input", role=ROLE_INPUT, shape=None, dtype=None),
        OpIR(name="relu_1_1", layer="relu_1_1", pass_index=1, num_passes=1, op_type="relu", role=ROLE_OP, shape=None, dtype=None, parents=("input_1",), ports=("arg0",)),
        OpIR(name="output_1", layer="output_1", pass_index=1, num_passes=1, op_type="output", role=ROLE_OUTPUT, shape=None, dtype=None, parents=("relu_1_1",)),
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TlnetronWarning)
        export_ir(TraceIR(ops=ops), tmp_path / "m.onnx.json", granularity="op", depth=None, show_buffers="meaningful", attachment=None)
    # No op has FLOPs, bytes or a shape: nothing from before the export survives it.
    assert flops_text.cache_info().currsize == 0
    assert bytes_text.cache_info().currsize == 0
    assert shape_text.cache_info().currsize == 0

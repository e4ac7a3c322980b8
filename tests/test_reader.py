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

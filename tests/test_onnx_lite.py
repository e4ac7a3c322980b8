"""An export loads onnx's protobuf classes and C++ checker without ``onnx/__init__`` (so
without numpy's ml_dtypes, 0.5-1.2 s), and a later ``import onnx`` is the real package,
sharing those classes and exceptions. Run in a fresh interpreter: the suite imports onnx."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

CHILD = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    import tlnetron.api  # noqa: F401  (the export path: must not import onnx)
    from tlnetron.build import _onnx
    assert "onnx" not in sys.modules and "ml_dtypes" not in sys.modules
    m = _onnx.ModelProto(ir_version=10)
    m.opset_import.add(domain="ai.torchlens.lossy", version=1)
    m.graph.name = "g"
    m.graph.node.add(op_type="x", domain="ai.torchlens.lossy", input=["a"], output=["b"])
    for vi in (m.graph.input.add(name="a"), m.graph.output.add(name="b")):
        vi.type.tensor_type.elem_type = 1
        vi.type.tensor_type.shape.dim.add(dim_value=1)
    _onnx.checker.check_model(m.SerializeToString(), full_check=True)
    try:
        _onnx.checker.check_model(b"\\x08\\x63", full_check=True)
    except _onnx.checker.ValidationError:
        pass
    else:
        raise AssertionError("ir_version 99 passed")
    assert "onnx" not in sys.modules and "ml_dtypes" not in sys.modules and "numpy" not in sys.modules
    import onnx
    assert onnx.ModelProto is _onnx.ModelProto
    assert onnx.checker.ValidationError is _onnx.checker.ValidationError
    assert onnx.shape_inference.InferenceError is _onnx.shape_inference.InferenceError
    onnx.checker.check_model(m, full_check=True)
    assert _onnx.__version__ == onnx.__version__
    print("ok")
    """
)


def test_export_needs_no_onnx_init_and_onnx_still_imports(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, check=False, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip() == "ok"

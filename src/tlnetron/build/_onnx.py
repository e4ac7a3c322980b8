"""What an export needs of onnx, loaded without running ``onnx/__init__``.

``import onnx`` imports numpy and ml_dtypes (``onnx._mapping`` reads ml_dtypes' types at
import time): 0.5-1.2 s with ml_dtypes 0.7.0, nearly all in ml_dtypes' own registration of
its numpy loops. An export needs none of it: only onnx's protobuf classes
(``onnx/onnx_ml_pb2.py``, generated code that imports nothing of onnx) and its C++
extension (``onnx.onnx_cpp2py_export``: checker, shape inference, op schemas), which
imports no Python at all. This module loads those two under their own names, without their
parent package, exactly as the package itself would have (same ``sys.modules`` keys, so a
later ``import onnx`` runs its ``__init__`` and reuses them: the same classes, the same
exceptions). When onnx is already imported, its own modules and functions are used (as
before: a caller that patched ``onnx.checker.check_model`` is obeyed). Anything else (e.g.
``helper``) imports onnx for real on first use.

The checker is called as ``onnx.checker.check_model`` calls it for bytes
(``C.check_model(bytes, full_check, skip_opset_compatibility_check, check_custom_domain)``,
the same in onnx 1.22 and 1.23).
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import sys
from types import ModuleType, SimpleNamespace
from typing import TYPE_CHECKING, Any

__all__ = [
    "AttributeProto",
    "FunctionProto",
    "ModelProto",
    "NodeProto",
    "TensorProto",
    "TypeProto",
    "ValueInfoProto",
    "checker",
    "defs",
    "shape_inference",
]

_MAXIMUM_PROTOBUF = 2147483647  # onnx.checker.MAXIMUM_PROTOBUF


def _load(name: str) -> ModuleType:
    full = f"onnx.{name}"
    module = sys.modules.get(full)
    if module is not None:
        return module
    package = importlib.util.find_spec("onnx")  # finds the package; does not run its __init__
    if package is None or not package.submodule_search_locations:
        raise ImportError("onnx is not installed")
    spec = importlib.machinery.PathFinder.find_spec(full, list(package.submodule_search_locations))
    if spec is None or spec.loader is None:
        raise ImportError(f"{full} not found")
    module = importlib.util.module_from_spec(spec)
    sys.modules[full] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[full]
        raise
    return module


try:
    if "onnx" in sys.modules:
        raise ImportError  # already paid for: use it as it is
    _pb = _load("onnx_ml_pb2")
    _C = _load("onnx_cpp2py_export")
except ImportError:
    import onnx as _real

    _pb, _C = _real.onnx_ml_pb2, _real.onnx_cpp2py_export

if TYPE_CHECKING:
    from onnx import (
        AttributeProto,
        FunctionProto,
        ModelProto,
        NodeProto,
        TensorProto,
        TypeProto,
        ValueInfoProto,
    )
else:
    AttributeProto, FunctionProto, ModelProto, NodeProto = (
        _pb.AttributeProto,
        _pb.FunctionProto,
        _pb.ModelProto,
        _pb.NodeProto,
    )
    TensorProto, TypeProto, ValueInfoProto = _pb.TensorProto, _pb.TypeProto, _pb.ValueInfoProto


def _bytes(model: Any) -> bytes:
    return model if isinstance(model, bytes) else model.SerializeToString()


def _real_onnx() -> Any:
    import onnx

    return onnx


def _imported() -> Any:
    """The real onnx package when something imported it (then its own functions are called,
    as before this module: a caller that patched them is obeyed), else None."""
    real = sys.modules.get("onnx")
    return real if real is not None and hasattr(real, "checker") else None


def _check_model(model: ModelProto | bytes, full_check: bool = False) -> None:
    real = _imported()
    if real is not None:
        real.checker.check_model(model, full_check=full_check)
        return
    data = _bytes(model)
    if len(data) > _MAXIMUM_PROTOBUF:
        raise ValueError("This protobuf of onnx model is too large (>2GiB). Call check_model with model path instead.")
    try:
        _C.checker.check_model(data, full_check, False, False)
    except TypeError:  # another onnx's C signature: its own Python wrapper knows it
        _real_onnx().checker.check_model(model, full_check=full_check)


def _infer_shapes(
    model: ModelProto | bytes, check_type: bool = False, strict_mode: bool = False, data_prop: bool = False
) -> ModelProto:
    real = _imported()
    if real is not None:
        inferred: ModelProto = real.shape_inference.infer_shapes(
            model, check_type=check_type, strict_mode=strict_mode, data_prop=data_prop
        )
        return inferred
    try:
        inferred_bytes = _C.shape_inference.infer_shapes(_bytes(model), check_type, strict_mode, data_prop)
    except TypeError:  # another onnx's C signature: its own Python wrapper knows it
        fallback: ModelProto = _real_onnx().shape_inference.infer_shapes(
            model, check_type=check_type, strict_mode=strict_mode, data_prop=data_prop
        )
        return fallback
    out = ModelProto()
    out.ParseFromString(inferred_bytes)
    return out


def _has(op_type: str, domain: str = "") -> bool:
    real = _imported()
    return bool(real.defs.has(op_type, domain) if real is not None else _C.defs.has_schema(op_type, domain))


checker = SimpleNamespace(check_model=_check_model, ValidationError=_C.checker.ValidationError)
shape_inference = SimpleNamespace(infer_shapes=_infer_shapes, InferenceError=_C.shape_inference.InferenceError)
defs = SimpleNamespace(has=_has)


def __getattr__(name: str) -> Any:
    if name == "__version__":
        from importlib.metadata import version

        value = version("onnx")
        globals()[name] = value
        return value
    import onnx  # the rest of onnx (helper, ...): imported for real, once

    return getattr(onnx, name)

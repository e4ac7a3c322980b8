"""Stage 5a: JSON text, fast and deterministic.

:func:`dumps` writes the artifact and companion objects (compact UTF-8 through orjson,
which is an order of magnitude faster than the standard library on these sizes; non-finite
numbers are refused by validation before it is called). The artifact object itself comes
from :func:`tlnetron.onnx_build.build_model`, which emits it alongside the proto;
``tests/test_serialize.py`` holds it equal to protobuf's own ``MessageToDict``.
"""

from __future__ import annotations

from typing import Any

import orjson

__all__ = ["dumps"]


def dumps(obj: Any) -> str:
    """Compact, deterministic JSON text (key order as built; UTF-8, not ASCII-escaped)."""
    return orjson.dumps(obj).decode("utf-8")

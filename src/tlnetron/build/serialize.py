"""JSON text, fast and deterministic.

:func:`dumps_bytes` writes the artifact and companion objects (compact UTF-8 through orjson,
which is an order of magnitude faster than the standard library on these sizes; non-finite
numbers are refused by validation before it is called). The artifact's objects are built,
and encoded a part at a time, by :func:`tlnetron.build.artifact.build_model` alongside the
proto; ``tests/test_serialize.py`` holds the text equal to protobuf's own ``MessageToDict``.
"""

from __future__ import annotations

from typing import Any

import orjson

__all__ = ["dumps_bytes"]


def dumps_bytes(obj: Any) -> bytes:
    """Compact, deterministic JSON as UTF-8 bytes (key order as built, not ASCII-escaped).

    Exports write these bytes as they are: decoding a large artifact to ``str`` and
    encoding it back would copy it twice.
    """
    return orjson.dumps(obj)

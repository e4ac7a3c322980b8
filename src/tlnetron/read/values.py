"""Plain values TorchLens hands over (dtypes, shapes, counts, source frames) as the IR holds
them, and the installed versions of the packages a trace was made with."""

from __future__ import annotations

import functools
import sys
from typing import Any

from ..ir.trace import Dim
from .stats import finite_float

__all__ = ["Dtypes", "Locations", "count_of", "dist_version", "dtype_name", "shape_of"]


def dtype_name(dtype: Any) -> str | None:
    if dtype is None:
        return None
    text = str(dtype)
    return text[6:] if text.startswith("torch.") else text


def shape_of(shape: Any) -> tuple[Dim, ...] | None:
    if shape is None:
        return None
    if type(shape) is tuple:
        for d in shape:
            if type(d) is not int:
                break
        else:
            return shape  # the common case: already a tuple of plain ints
    try:
        dims = tuple(shape)
    except TypeError:
        return None
    out: list[Dim] = []
    for d in dims:
        if isinstance(d, bool):
            return None
        if isinstance(d, int):
            out.append(int(d))
        elif isinstance(d, str):
            out.append(d)
        else:
            try:
                out.append(int(d))
            except (TypeError, ValueError):
                return None
    return tuple(out)


def count_of(value: Any) -> int | None:
    """An int count (FLOPs may arrive as float-valued Flops); None when unknown."""
    if isinstance(value, int) and 0 <= value < 2**53:  # Flops / Bytes are int subclasses
        return int(value)  # exactly what rounding its float gives
    f = finite_float(value)
    if f is None or f < 0:
        return None
    return int(round(f))


@functools.lru_cache(maxsize=None)
def dist_version(dist: str) -> str:
    """The version of ``dist`` as imported: its module's ``__version__`` (the code that made
    the trace), else the installed distribution's metadata, else ``"unknown"``.

    The module attribute comes first because it is free, while the first metadata lookup of
    a process scans every ``sys.path`` entry (paid by each CLI export).
    """
    module = sys.modules.get(dist)
    text = getattr(module, "__version__", None)
    if text:
        return str(text)
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(dist)
    except PackageNotFoundError:
        return "unknown"


class Locations:
    """``_location`` for one read, memoised per frame object (TorchLens shares them)."""

    __slots__ = ("_frames",)

    def __init__(self) -> None:
        # id -> (frame, is torch's own frame, worded location); the frame is kept so its id
        # cannot be reused while this read runs.
        self._frames: dict[int, tuple[Any, bool, str | None]] = {}

    def _frame(self, frame: Any) -> tuple[Any, bool, str | None]:
        known = self._frames.get(id(frame))
        if known is None:
            where = getattr(frame, "file", None)
            is_torch = "/torch/" in str(where or "")
            text = None
            if where:
                func = getattr(frame, "func_qualname", None) or getattr(frame, "func_name", "?")
                text = f"{str(where).rsplit('/', 1)[-1]}:{getattr(frame, 'line_number', '?')} in {func}"
            known = self._frames[id(frame)] = (frame, is_torch, text)
        return known

    def __call__(self, code_context: Any) -> str | None:
        """The innermost model frame (the caller of trace() is last; torch frames skipped)."""
        if not code_context:
            return None
        if isinstance(code_context, list) and len(code_context) > 1:
            # Usually the innermost candidate is already a model frame.
            innermost = code_context[-2]
            known = self._frames.get(id(innermost)) or self._frame(innermost)
            if not known[1]:
                return known[2]
        frames = list(code_context)
        candidates = frames[:-1] or frames
        known_frames = self._frames
        for f in reversed(candidates):
            known = known_frames.get(id(f)) or self._frame(f)
            if not known[1]:
                return known[2]
        return self._frame(candidates[-1])[2]


class Dtypes:
    """dtype -> its name, converted once per dtype seen (an unhashable one each time)."""

    __slots__ = ("_names",)

    def __init__(self) -> None:
        self._names: dict[Any, str | None] = {}

    def __call__(self, raw: Any) -> str | None:
        try:
            return self._names[raw]
        except KeyError:
            name = self._names[raw] = dtype_name(raw)
            return name
        except TypeError:
            return dtype_name(raw)

"""Speed and memory machinery, in one place: none of it changes a byte of any output.

* :func:`export_memo`: memos of worded facts (shapes, FLOPs, bytes, ports), emptied by
  :func:`clear_memos` at the start of every export.
* :func:`gc_paused`: the cyclic collector off while an export runs.
* :func:`checker_allocator`: glibc tuned around ``onnx.checker`` on a large model.
* :func:`start_writeback`: the kernel asked to start writing a staged file at once.

What each one buys is measured in ``benchmarks/`` (``benchmarks/README.md``), not here.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import gc
import os
import sys
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

__all__ = [
    "FASTBINS_OFF_FROM_BYTES",
    "checker_allocator",
    "clear_memos",
    "export_memo",
    "gc_paused",
    "start_writeback",
]

_F = TypeVar("_F", bound=Callable[..., Any])

_MEMOS: list[Any] = []


def export_memo(fn: _F) -> _F:
    """Memoize ``fn`` within one export: its arguments recur across layers (a shape, a FLOP
    count, the argument slots); emptied per export so a warm process times like a fresh one."""
    memo = functools.lru_cache(maxsize=4096, typed=True)(fn)
    _MEMOS.append(memo)
    return memo  # type: ignore[return-value]


def clear_memos() -> None:
    """Empty every :func:`export_memo` (the pipeline calls this as an export starts)."""
    for memo in _MEMOS:
        memo.cache_clear()


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic collector while exporting: an export's many short-lived objects are
    acyclic, so a collection mid-export walks the caller's whole model and trace for nothing."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


# glibc's mallopt parameter for the fastbin size limit, and its default (DEFAULT_MXFAST).
_M_MXFAST = 1
_DEFAULT_MXFAST = 64 * ctypes.sizeof(ctypes.c_size_t) // 4

FASTBINS_OFF_FROM_BYTES = 2_000_000
"""Serialized size (about 4,000 nodes) from which :func:`checker_allocator` tunes glibc."""


def _glibc_function(name: str, argtypes: tuple[Any, ...], tuned: str) -> Any:
    """glibc's function ``name``; None on another C library, or when the user tuned the
    allocator through ``GLIBC_TUNABLES`` (``tuned`` names the tunable), which we then
    leave alone."""
    try:
        libc = os.confstr("CS_GNU_LIBC_VERSION") or ""
    except (ValueError, OSError, AttributeError):  # no confstr name here: not glibc
        return None
    if not libc.startswith("glibc") or tuned in os.environ.get("GLIBC_TUNABLES", ""):
        return None
    try:
        fn = getattr(ctypes.CDLL(None), name)
    except (OSError, AttributeError):
        return None
    fn.argtypes = argtypes
    fn.restype = ctypes.c_int
    return fn


@functools.lru_cache(maxsize=1)
def _mallopt() -> Callable[[int, int], int] | None:
    """glibc's ``mallopt``, unless the user tuned fastbins (``glibc.malloc.mxfast``)."""
    fn: Callable[[int, int], int] | None = _glibc_function("mallopt", (ctypes.c_int, ctypes.c_int), "mxfast")
    return fn


@functools.lru_cache(maxsize=1)
def _malloc_trim() -> Callable[[int], int] | None:
    """glibc's ``malloc_trim``, unless the user tuned when glibc trims (``glibc.malloc.trim_threshold``)."""
    fn: Callable[[int], int] | None = _glibc_function("malloc_trim", (ctypes.c_size_t,), "trim_threshold")
    return fn


@contextlib.contextmanager
def checker_allocator(size: int) -> Iterator[None]:
    """glibc tuned for ``onnx.checker`` on a model of ``size`` serialized bytes.

    Fastbins off while it checks (consolidating the ones its C++ copy of the model fills is
    a large share of a big check), then back to default, and the heap it freed handed back
    to the system (``malloc_trim``), which glibc would otherwise keep for good. Small models
    gain nothing and are left alone; so are other C libraries and a user's own tuning.
    """
    if size < FASTBINS_OFF_FROM_BYTES:
        yield
        return
    mallopt = _mallopt()
    if mallopt is not None:
        mallopt(_M_MXFAST, 0)
    try:
        yield
    finally:
        if mallopt is not None:
            mallopt(_M_MXFAST, _DEFAULT_MXFAST)
        trim = _malloc_trim()
        if trim is not None:
            trim(0)


_SYNC_FILE_RANGE_WRITE = 2  # <linux/fs.h>: start writeback of dirty pages, do not wait


def _writeback_starter() -> Callable[[int], object] | None:
    """``sync_file_range(fd, 0, 0, SYNC_FILE_RANGE_WRITE)`` where the C library has it."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        fn = ctypes.CDLL(None, use_errno=True).sync_file_range
    except (OSError, AttributeError):
        return None
    fn.argtypes = (ctypes.c_int, ctypes.c_int64, ctypes.c_int64, ctypes.c_uint)
    fn.restype = ctypes.c_int
    return lambda fd: fn(fd, 0, 0, _SYNC_FILE_RANGE_WRITE)


_writeback = _writeback_starter()


def start_writeback(fd: int) -> None:
    """Ask the kernel to start writing ``fd``'s dirty pages now, while the export goes on
    checking; only a head start (the result is ignored): durability is the commit's fsync."""
    if _writeback is not None:
        _writeback(fd)

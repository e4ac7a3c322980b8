"""Stage 5b, the writer: artifact and companion land atomically, both or neither.

Each file is staged as a temporary sibling as soon as its bytes exist, and the kernel is
asked to start writing it out (``sync_file_range``, Linux) while the export goes on
checking; at commit every temporary file is synced to disk (``fdatasync``: its data and
size; ``fsync`` where there is no fdatasync), then every destination is replaced with
``os.replace``. If a later replace fails, files already replaced are restored from
hard-link (or copy) backups, so a refusal or a crash leaves existing files as they were;
staged files that are never committed are removed.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import shutil
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import BinaryIO

from ._generated.vocab import ErrorCode
from .errors import TlnetronError

__all__ = ["StagedFiles", "companion_path_for", "staged_files"]


def companion_path_for(artifact: Path) -> Path:
    """``<stem>.attachment.json`` beside the artifact (``model.onnx.json`` -> ``model.onnx.attachment.json``)."""
    return artifact.with_name(f"{artifact.stem}.attachment.json")


# The data and the size of a new file reach the disk before it replaces anything;
# fdatasync skips only what reading it back does not need (timestamps). macOS has no
# fdatasync: fsync there.
_datasync = getattr(os, "fdatasync", os.fsync)

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


_start_writeback = _writeback_starter()
"""Only a head start: its result is ignored, and durability comes from ``_datasync`` at
commit, which reports any write error. Started while the model is built and checked, it
cuts the wait in fdatasync per export by 0.5-0.7 ms (loop and LSTM exports, same-process
A/B; ``benchmarks/README.md``) for ~0.08 ms per call."""


def _tmp(path: Path) -> Path:
    return path.with_name(f".{path.name}.{os.getpid()}.tlnetron-tmp")


def _unwritable(exc: OSError) -> TlnetronError:
    return TlnetronError(
        ErrorCode.DESTINATION_UNWRITABLE,
        f"could not write {exc.filename or 'the files'} ({exc.strerror or exc}); nothing was changed.",
        where=str(exc.filename or ""),
        remedy="choose a folder you can write to, with free space.",
    )


class StagedFiles:
    """The files of one write, staged as temporary siblings as their bytes become known and
    put in place together by :meth:`commit`, in the order of ``destinations``.

    Use through :func:`staged_files`, which removes whatever was staged but not committed.
    """

    def __init__(self, destinations: Sequence[Path]) -> None:
        self._order = list(destinations)
        self._staged: dict[Path, tuple[Path, BinaryIO]] = {}  # destination -> (temporary, open file)

    def stage(self, path: Path, data: bytes) -> None:
        """Write ``data`` to a temporary sibling of ``path`` and start writing it to disk.

        Raises:
            TlnetronError: ``destination_unwritable`` when it cannot be written.
        """
        if path not in self._order or path in self._staged:
            raise ValueError(f"{path} is not a destination of this write, or is staged already")
        tmp = _tmp(path)
        try:
            fh = open(tmp, "wb")  # noqa: SIM115 - kept open until commit, closed by discard()
        except OSError as exc:
            raise _unwritable(exc) from exc
        self._staged[path] = (tmp, fh)
        try:
            fh.write(data)
            fh.flush()
        except OSError as exc:
            raise _unwritable(exc) from exc
        if _start_writeback is not None:
            _start_writeback(fh.fileno())

    def commit(self) -> None:
        """Sync every file, then replace every destination, or change nothing.

        Raises:
            TlnetronError: ``destination_unwritable`` when any file cannot be written.
            ValueError: when a destination was never staged.
        """
        missing = [str(p) for p in self._order if p not in self._staged]
        if missing:
            raise ValueError(f"never staged: {', '.join(missing)}")
        staged = [(path, *self._staged[path]) for path in self._order]
        backups: list[tuple[Path, Path]] = []
        replaced: list[Path] = []
        try:
            # Synced once all are written, so the filesystem can commit them together.
            for _, _, fh in staged:
                _datasync(fh.fileno())
            for _, _, fh in staged:
                fh.close()
            # Only files replaced before the last one can need restoring.
            for path, _, _ in staged[:-1]:
                if path.exists():
                    backup = path.with_name(f".{path.name}.{os.getpid()}.tlnetron-bak")
                    try:
                        os.link(path, backup)
                    except FileExistsError:  # left behind by a killed run with our pid
                        backup.unlink()
                        os.link(path, backup)
                    except OSError:
                        shutil.copy2(path, backup)
                    backups.append((path, backup))
            for path, tmp, _ in staged:
                os.replace(tmp, path)
                replaced.append(path)
                del self._staged[path]  # renamed away: nothing left to remove
        except OSError as exc:
            backed = dict(backups)
            for path in replaced:
                with contextlib.suppress(OSError):
                    if path in backed:
                        os.replace(backed.pop(path), path)
                    else:
                        path.unlink()
            raise _unwritable(exc) from exc
        finally:
            for _, backup in backups:
                with contextlib.suppress(OSError):
                    backup.unlink()

    def discard(self) -> None:
        """Close and remove every staged file that was not put in place."""
        for tmp, fh in self._staged.values():
            with contextlib.suppress(OSError):
                fh.close()
            with contextlib.suppress(OSError):
                tmp.unlink()
        self._staged.clear()


@contextlib.contextmanager
def staged_files(destinations: Sequence[Path]) -> Iterator[StagedFiles]:
    """A :class:`StagedFiles` for ``destinations`` whose uncommitted files are removed on the way out."""
    out = StagedFiles(destinations)
    try:
        yield out
    finally:
        out.discard()

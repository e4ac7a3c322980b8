"""The writer: artifact and companion land atomically, both or neither.

Each file is staged as a temporary sibling as soon as its bytes exist, and the kernel is
asked to start writing it out (``sync_file_range``, Linux) while the export goes on
checking; at commit every temporary file is synced to disk (``fdatasync``: its data and
size; ``fsync`` where there is no fdatasync), then every destination is replaced with
``os.replace``. If a later replace fails, files already replaced are restored from
hard-link (or copy) backups, so a refusal leaves existing files as they were; staged files
that are never committed are removed.

Between two processes: writers to one artifact path take turns (``flock`` on a hidden lock
file beside it while they stage and commit), so two exports never interleave their pairs.
Against ``kill -9``: before the first rename, the commit writes a journal naming every
staged file and its destination; a writer killed between renames leaves it behind, and the
next writer to that place finishes those renames (the staged files were synced before the
journal was written) and removes any temporary or backup file a killed writer left.
"""

from __future__ import annotations

import contextlib
import glob
import json
import os
import re
import shutil
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, BinaryIO, TypeVar

from .._generated.vocab import ErrorCode
from ..errors import TlnetronError
from ..perf import start_writeback

__all__ = ["StagedFiles", "companion_path_for", "read_pair", "staged_files", "unwritable", "write_in_flight"]


def companion_path_for(artifact: Path) -> Path:
    """``<stem>.attachment.json`` beside the artifact (``model.onnx.json`` -> ``model.onnx.attachment.json``)."""
    return artifact.with_name(f"{artifact.stem}.attachment.json")


# The data and the size of a new file reach the disk before it replaces anything;
# fdatasync skips only what reading it back does not need (timestamps). macOS has no
# fdatasync: fsync there.
_datasync = getattr(os, "fdatasync", os.fsync)

_TMP, _BAK = "tlnetron-tmp", "tlnetron-bak"


def _tmp(path: Path) -> Path:
    return path.with_name(f".{path.name}.{os.getpid()}.{_TMP}")


def _journal(first: Path) -> Path:
    return first.with_name(f".{first.name}.tlnetron-journal")


def _lock_file(first: Path) -> Path:
    return first.with_name(f".{first.name}.tlnetron-lock")


def _finish_interrupted(destinations: Sequence[Path]) -> None:
    """Finish the renames of a commit that was killed midway, then drop what killed writers left.

    Called with the lock held, before this writer stages anything: every temporary or backup
    file of these destinations is then a leftover.
    """
    journal = _journal(destinations[0])
    names = {d.name for d in (*destinations, companion_path_for(destinations[0]))}
    try:
        entries = json.loads(journal.read_bytes())
    except (OSError, ValueError):
        entries = []  # no journal, or one cut short before any rename began
    parent = destinations[0].parent
    for entry in entries if isinstance(entries, list) else []:
        tmp_name, dest_name = entry if isinstance(entry, list) and len(entry) == 2 else ("", "")
        # Only a name this writer's scheme makes for one of these destinations is renamed.
        ours = (
            isinstance(dest_name, str)
            and dest_name in names
            and isinstance(tmp_name, str)
            and re.fullmatch(rf"\.{re.escape(dest_name)}\.[0-9]+\.{_TMP}", tmp_name) is not None
        )
        if ours:
            with contextlib.suppress(OSError):
                os.replace(parent / tmp_name, parent / dest_name)
    with contextlib.suppress(OSError):
        journal.unlink()
    for dest in (*destinations, companion_path_for(destinations[0])):
        for kind in (_TMP, _BAK):
            for stray in glob.glob(os.path.join(glob.escape(str(parent)), f".{glob.escape(dest.name)}.*.{kind}")):
                with contextlib.suppress(OSError):
                    os.unlink(stray)


@contextlib.contextmanager
def _writers_take_turns(destinations: Sequence[Path]) -> Iterator[None]:
    """Hold an exclusive lock beside the first destination (no-op where there is no ``flock``).

    The lock file is removed on release, so none is left beside the artifact; a writer that
    locked a file another writer has since removed (or replaced) tries again.
    """
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX
        yield
        return
    # The companion's name is locked too: case-variants of one artifact name share it.
    locks = sorted({_lock_file(destinations[0]), _lock_file(companion_path_for(destinations[0]))}, key=str)
    held: list[tuple[Path, int]] = []
    try:
        for lock in locks:
            held.append((lock, _lock(fcntl, lock)))
        _finish_interrupted(destinations)
        yield
    finally:
        for lock, fd in reversed(held):
            with contextlib.suppress(OSError):
                os.unlink(lock)
            os.close(fd)  # releases the lock


def _lock(fcntl: Any, lock: Path) -> int:
    """An exclusive ``flock`` on ``lock``, retried until the file locked is the one at that name."""
    while True:
        try:
            fd = os.open(lock, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o644)
        except OSError as exc:
            raise unwritable(exc) from exc
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            if os.path.samestat(os.fstat(fd), os.stat(lock)):
                return fd
        except FileNotFoundError:
            pass
        except BaseException:
            os.close(fd)
            raise
        os.close(fd)


def unwritable(exc: OSError, dest: Path | None = None, flag: str | None = None) -> TlnetronError:
    """``destination_unwritable`` for a failed write; ``flag`` names the option that gave ``dest``."""
    if flag is not None and dest is not None:
        return TlnetronError(
            ErrorCode.DESTINATION_UNWRITABLE,
            f"could not write into {flag} {str(dest)!r} ({exc.strerror or exc}).",
            where=str(exc.filename or dest),
            remedy=f"pass {flag} with a folder you can write to, with free space.",
        )
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

    def __init__(self, destinations: Sequence[Path], supersedes: Path | None = None) -> None:
        self._order = list(destinations)
        self._supersedes = supersedes
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
            raise unwritable(exc) from exc
        self._staged[path] = (tmp, fh)
        try:
            fh.write(data)
            fh.flush()
        except OSError as exc:
            raise unwritable(exc) from exc
        start_writeback(fh.fileno())

    def commit(self) -> None:
        """Sync every file, then replace every destination, or change nothing.

        Raises:
            TlnetronError: ``destination_unwritable`` when any file cannot be written.
            ValueError: when a destination was never staged.
        """
        missing = [str(p) for p in self._order if p not in self._staged]
        if missing:
            raise ValueError(f"never staged: {', '.join(missing)}")
        if not self._order:
            return  # a memory-only export: nothing to put in place
        staged = [(path, *self._staged[path]) for path in self._order]
        backups: list[tuple[Path, Path]] = []
        replaced: list[Path] = []
        try:
            # Synced once all are written, so the filesystem can commit them together.
            for _, _, fh in staged:
                _datasync(fh.fileno())
            for _, _, fh in staged:
                fh.close()
            # From here a kill leaves the journal for the next writer to finish the renames.
            journal = _journal(self._order[0])
            names = json.dumps([[tmp.name, path.name] for path, tmp, _ in staged]).encode()
            fd = os.open(journal, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            try:
                os.write(fd, names)
            finally:
                os.close(fd)
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
            # A companion of the old artifact goes first, so no reader sees it beside the new one.
            if self._supersedes is not None and _is_companion(self._supersedes):
                backup = self._supersedes.with_name(f".{self._supersedes.name}.{os.getpid()}.{_BAK}")
                with contextlib.suppress(FileNotFoundError):
                    backup.unlink()
                os.link(self._supersedes, backup)
                backups.append((self._supersedes, backup))
                self._supersedes.unlink()
                replaced.append(self._supersedes)
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
            raise unwritable(exc) from exc
        finally:
            with contextlib.suppress(OSError):
                _journal(self._order[0]).unlink()
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


def _is_companion(path: Path) -> bool:
    try:
        with open(path, "rb") as fh:
            head = fh.read(64)
    except OSError:
        return False
    return head.replace(b" ", b"").startswith(b'{"signature":"netron:attachment"')


@contextlib.contextmanager
def staged_files(destinations: Sequence[Path], supersedes: Path | None = None) -> Iterator[StagedFiles]:
    """A :class:`StagedFiles` for ``destinations`` whose uncommitted files are removed on the way out.

    ``supersedes``: a companion left from an earlier export, removed at commit (before the
    artifact is replaced; restored if the commit fails) when it is a netron:attachment file.
    While it is open, no other writer (in any process) writes to the same artifact or companion name.
    """
    out = StagedFiles(destinations, supersedes)
    with _writers_take_turns(destinations) if destinations else contextlib.nullcontext():
        try:
            yield out
        finally:
            out.discard()


def write_in_flight(artifact: Path) -> bool:
    """Whether a writer holds the lock of ``artifact``'s pair now.

    A lock file left by a killed writer is held by no one.
    """
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX
        return False
    for lock in (_lock_file(artifact), _lock_file(companion_path_for(artifact))):
        try:
            fd = os.open(lock, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
        except OSError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        except OSError:
            pass
        finally:
            os.close(fd)
    return False


_Read = TypeVar("_Read")
_PAIR_PAUSE = 0.005
"""Seconds a reader pauses before reading again: short, as the gap between two exports is."""
_PAIR_TRIES = 6000
"""A reader waits out writers this many times (30 s of pauses) before taking what it has."""


def read_pair(artifact: Path, companion: Path, read: Callable[[Path], _Read]) -> tuple[_Read, _Read]:
    """``read`` of the artifact and of its companion, taken from one export.

    A writer replaces both files by rename, one after the other: the pair read is one
    export's when the artifact is the same file after the companion was read as before,
    and no writer was committing meanwhile. Otherwise it is read again.
    """
    for _ in range(_PAIR_TRIES):
        before = _identity(artifact)
        first, second = read(artifact), read(companion)
        if before == _identity(artifact) and not write_in_flight(artifact):
            return first, second
        time.sleep(_PAIR_PAUSE)
    return first, second


def _identity(path: Path) -> tuple[int, ...] | None:
    try:
        info = os.stat(path)
    except OSError:
        return None
    return (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns)

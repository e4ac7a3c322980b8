"""What an export hands back: :class:`ExportResult` (its own module, so the pipeline, the
server and the command line share it without importing one another)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["ExportResult"]


@dataclass(frozen=True, slots=True)
class ExportResult:
    """What an export wrote (and served)."""

    artifact: Path | None
    companion: Path | None
    granularity: str
    node_count: int
    edge_count: int
    typed_edge_count: int
    function_count: int
    warnings: tuple[str, ...]
    """Codes of every warning the export gave: the artifact's ``torchlens.warnings`` (about
    the view), plus any about this machine (``onnx_checker_quadratic``), never recorded in it."""
    seconds: float
    url: str | None = None
    export_id: str = ""
    """The id written into the artifact's ``torchlens.export_id`` and the companion's row of
    that name (``tlnetron.build.export_id``); "" for a result that did not export."""
    artifact_bytes: bytes = field(default=b"", repr=False)
    """The artifact exactly as written (UTF-8 JSON)."""
    companion_bytes: bytes | None = field(default=None, repr=False)
    """The companion exactly as written, when one was built."""
    server: Any = field(default=None, repr=False, compare=False)
    page: Path | None = None
    """The self-contained HTML page written instead of the two files (a path ending in .html)."""

    @property
    def artifact_json(self) -> str:
        """The artifact's JSON text (decoded from :attr:`artifact_bytes` on access)."""
        return self.artifact_bytes.decode("utf-8")

    @property
    def companion_json(self) -> str | None:
        """The companion's JSON text, or None when no companion was built."""
        return None if self.companion_bytes is None else self.companion_bytes.decode("utf-8")

    def stop(self) -> None:
        """Stop serving (when ``serve=True``); does nothing otherwise."""
        if self.server is not None:
            self.server.stop()

"""What an export hands back: :class:`ExportResult` (its own module, so the pipeline, the
server and the command line share it without importing one another)."""

from __future__ import annotations

import html
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

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

    draw: ClassVar[Callable[[ExportResult], str] | None] = None
    """Draws a result as a notebook cell's page (Netron's HTML); set by :mod:`tlnetron.api`,
    since the pages stage comes after this shared module."""

    def __repr__(self) -> str:
        wrote = [p.name for p in (self.page, self.artifact, self.companion) if p is not None][: 1 if self.page else 2]
        parts = [
            f"{self.granularity} view: {self.node_count} nodes, {self.edge_count} edges, "
            f"{self.function_count} functions",
            ("wrote " + " + ".join(wrote)) if wrote else "in memory",
            f"{self.seconds:.2f} s",
        ]
        if self.warnings:
            parts.append("warnings: " + ", ".join(self.warnings))
        if self.url:
            parts.append(f"serving {self.url}")
        return f"<tlnetron.ExportResult {'; '.join(parts)}>"

    def _repr_html_(self) -> str:
        """A notebook cell whose value is the result shows the model in Netron (a served one links its page)."""
        summary = html.escape(repr(self))
        if self.url:
            link = html.escape(self.url, quote=True)
            return f'<code>{summary}</code><br>open <a href="{link}" target="_blank">{link}</a>'
        if ExportResult.draw is None:
            return f"<code>{summary}</code>"
        from .errors import TlnetronError

        try:
            return ExportResult.draw(self)
        except TlnetronError as exc:  # no netron, or its app expired: the summary and the remedy, not a traceback
            return f"<code>{summary}</code><br>{html.escape(str(exc))}"

    def stop(self) -> None:
        """Stop serving (when ``serve=True``); does nothing otherwise."""
        if self.server is not None:
            self.server.stop()

"""tlnetron: export TorchLens traces to the Netron model viewer.

``tlnetron.export(trace, "model.onnx.json")`` writes an ONNX protobuf-JSON artifact Netron
opens fully lit (typed edges, module drill-down, a curated properties panel) and its
``netron:attachment`` metrics companion. See the README for the command line.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._version import __version__
from .check.schemas import SCHEMA_VERSION, schema_dir
from .errors import Problem, TlnetronError, TlnetronWarning
from .progress import PROGRESS_STAGES, Progress

if TYPE_CHECKING:
    from .api import LEGIBILITY_BUDGET, ExportResult, export, show

__all__ = [
    "LEGIBILITY_BUDGET",
    "PROGRESS_STAGES",
    "SCHEMA_VERSION",
    "ExportResult",
    "Progress",
    "Problem",
    "TlnetronError",
    "TlnetronWarning",
    "__version__",
    "export",
    "render",
    "schema_dir",
    "show",
]

# The exporter imports onnx (and with it numpy and ml_dtypes, the slowest imports: see
# benchmarks/README.md, cold.py): it is imported on first use, so `import tlnetron` and the
# commands that only print help or schemas start without it.
_FROM_API = frozenset({"LEGIBILITY_BUDGET", "ExportResult", "export", "show"})
_FROM_PICTURES = frozenset({"render"})


def __getattr__(name: str) -> Any:
    if name in _FROM_API:
        from . import api

        value = getattr(api, name)
        globals()[name] = value
        return value
    if name in _FROM_PICTURES:
        from .pages import pictures

        value = getattr(pictures, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'tlnetron' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | _FROM_API | _FROM_PICTURES)

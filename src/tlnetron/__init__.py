"""tlnetron: export TorchLens traces to the Netron model viewer.

``tlnetron.export(trace, "model.onnx.json")`` writes an ONNX protobuf-JSON artifact Netron
opens fully lit (typed edges, module drill-down, a curated properties panel) and its
``netron:attachment`` metrics companion. See the README for the command line.
"""

from __future__ import annotations

__version__ = "0.1.0"

from .api import LEGIBILITY_BUDGET, PROGRESS_STAGES, ExportResult, Progress, export
from .errors import Problem, TlnetronError, TlnetronWarning
from .schemas import SCHEMA_VERSION, schema_dir

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
    "schema_dir",
]

"""TorchLens integration: tlnetron as a ``torchlens.export_targets`` provider.

``pyproject.toml`` declares the entry point ``tlnetron = tlnetron.integration:export_target_factory``.
TorchLens discovers it from metadata without importing anything; an explicit
``torchlens.ecosystem.plugins.activate("tlnetron")`` calls the zero-argument factory below
and registers the row, after which ``torchlens.export.resolve_export_target("tlnetron")``
returns :func:`tlnetron.export`.
"""

from __future__ import annotations

from typing import Any

__all__ = ["TARGET_NAME", "export_target_factory"]

TARGET_NAME = "tlnetron"


def export_target_factory() -> dict[str, Any]:
    """The frozen export-target row TorchLens' plugin door commits."""
    from ._generated.vocab import COMPANION_SIGNATURE, GRANULARITY
    from .api import export

    return {
        "name": TARGET_NAME,
        "fn": export,
        "tier": "present",
        "capabilities": {
            "format": "onnx-protobuf-json (Netron)",
            "granularities": ",".join(GRANULARITY),
            "companion": COMPANION_SIGNATURE,
        },
    }

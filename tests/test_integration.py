"""tlnetron as a TorchLens ``torchlens.export_targets`` provider.

TorchLens discovers the entry point from installed metadata without importing anything
(``torchlens.ecosystem.plugins.discover``); an explicit, distribution-scoped
``activate("tlnetron", groups=("torchlens.export_targets",))`` calls the zero-argument
factory and commits its row through the export door, after which
``torchlens.export.resolve_export_target("tlnetron")`` is ``tlnetron.export``.

The export-target registry refuses collisions: a second ``activate`` in the same process
fails (strict: ``ConfigurationError``; soft: a ``PluginLoadWarning``) and leaves the first
registration in place. The ``activated`` fixture therefore clears any earlier
registration first and restores the registry as it found it.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import onnx
import pytest
import torch
import torchlens
import torchlens.export
from google.protobuf import json_format
from torch import nn
from torchlens.ecosystem import plugins

import tlnetron
import tlnetron.integration
from tlnetron import TlnetronWarning
from tlnetron._generated.vocab import COMPANION_SIGNATURE

GROUP = "torchlens.export_targets"
ENTRY_VALUE = "tlnetron.integration:export_target_factory"


class Small(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.body = nn.Sequential(nn.Linear(4, 6), nn.ReLU(), nn.Linear(6, 2))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out: torch.Tensor = self.body(x).sigmoid()
        return out


@pytest.fixture(scope="module")
def log() -> torchlens.Trace:
    torch.manual_seed(0)
    trace: torchlens.Trace = torchlens.trace(Small().eval(), torch.randn(3, 4))
    return trace


def _registered() -> bool:
    return "tlnetron" in torchlens.export.export_targets()


@pytest.fixture
def activated() -> Iterator[plugins.ActivationReport]:
    """Activate tlnetron from a clean slot; put back whatever was registered before."""
    prior: tuple[Any, Any] | None = None
    if _registered():
        prior = (torchlens.export.resolve_export_target("tlnetron"), torchlens.export.export_target_info("tlnetron"))
        torchlens.export.unregister_export_target("tlnetron")
    try:
        yield plugins.activate("tlnetron", groups=(GROUP,))
    finally:
        if _registered():
            torchlens.export.unregister_export_target("tlnetron")
        if prior is not None:
            fn, info = prior
            caps = {k: v for k, v in dict(info.capabilities).items() if k != "tier"}
            torchlens.export.register_export_target(
                "tlnetron", fn, tier=info.capabilities["tier"], capabilities=caps, provider=info.provider
            )


def test_discovery_lists_tlnetron_without_importing_it() -> None:
    candidates = [c for c in plugins.discover(GROUP) if c.name == "tlnetron"]
    assert len(candidates) == 1, plugins.discover(GROUP)
    (c,) = candidates
    assert c.group == GROUP
    assert c.distribution == "tlnetron"
    assert c.value == ENTRY_VALUE
    assert c.version  # the installed distribution's version, from metadata


def test_factory_takes_no_arguments_and_returns_the_row() -> None:
    import inspect

    factory = tlnetron.integration.export_target_factory
    assert all(
        p.default is not inspect.Parameter.empty or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
        for p in inspect.signature(factory).parameters.values()
    )
    row = factory()
    assert isinstance(row, dict)
    assert {"name", "fn", "tier"} <= set(row)
    assert row["name"] == "tlnetron"
    assert row["fn"] is tlnetron.export
    assert row["tier"] in ("present", "bridge")


def test_explicit_activation_registers_tlnetron_export(activated: plugins.ActivationReport) -> None:
    assert [c.name for c in activated.loaded] == ["tlnetron"]
    assert activated.failed == ()
    assert activated.distribution == "tlnetron"
    assert torchlens.export.resolve_export_target("tlnetron") is tlnetron.export
    info = torchlens.export.export_target_info("tlnetron")
    assert info.provider.distribution == "tlnetron"
    assert info.capabilities["tier"] == tlnetron.integration.export_target_factory()["tier"]
    states = {r.candidate.name: r.state for r in plugins.plugin_status() if r.candidate.group == GROUP}
    assert states["tlnetron"] == "loaded"


def test_second_activation_collides_and_keeps_the_first(activated: plugins.ActivationReport) -> None:
    from torchlens.ecosystem.plugins import PluginLoadWarning

    with pytest.raises(Exception, match="already has an entry 'tlnetron'"):
        plugins.activate("tlnetron", groups=(GROUP,))
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        report = plugins.activate("tlnetron", groups=(GROUP,), strict=False)
    assert report.loaded == () and [c.name for c in report.failed] == ["tlnetron"]
    assert any(isinstance(w.message, PluginLoadWarning) for w in seen)
    assert torchlens.export.resolve_export_target("tlnetron") is tlnetron.export


def test_export_through_the_registry_writes_a_valid_artifact(
    activated: plugins.ActivationReport, log: torchlens.Trace, tmp_path: Path
) -> None:
    fn = torchlens.export.resolve_export_target("tlnetron")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TlnetronWarning)
        result = fn(log, tmp_path / "small.onnx.json")
    assert isinstance(result, tlnetron.ExportResult)
    assert result.artifact == tmp_path / "small.onnx.json" and result.artifact.is_file()
    text = result.artifact.read_text(encoding="utf-8")
    proto = json_format.Parse(text, onnx.ModelProto())
    onnx.checker.check_model(proto, full_check=True)
    assert proto.producer_name == "tlnetron"
    assert result.companion is not None
    companion = json.loads(result.companion.read_text(encoding="utf-8"))
    assert companion["signature"] == COMPANION_SIGNATURE
    names = {n.name for n in proto.graph.node} | {n.name for f in proto.functions for n in f.node}
    assert all(r["target"] in names for r in companion["metadata"] + companion["metrics"] if r["kind"] == "node")

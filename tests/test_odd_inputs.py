"""``export()`` answers odd inputs with a typed refusal, never a traceback from deep inside,
and writes nothing: paths with NUL or lone surrogates, file names past the file system's
limit (the companion and temporary files beside it count), a baseline string of lone
surrogates, a progress hook that is not a function."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
import torch
import torchlens
from torch import nn

import tlnetron
from tlnetron import TlnetronError


@pytest.fixture(scope="module")
def log() -> torchlens.Trace:
    torch.manual_seed(0)
    trace: torchlens.Trace = torchlens.trace(nn.Sequential(nn.Linear(3, 3), nn.ReLU()).eval(), torch.randn(1, 3))
    return trace


def refused(log: torchlens.Trace, folder: Path, path: Any, **kwargs: Any) -> TlnetronError:
    before = sorted(os.listdir(folder))
    with pytest.raises(TlnetronError) as info:
        tlnetron.export(log, path, **kwargs)
    assert sorted(os.listdir(folder)) == before, "a refused export wrote something"
    assert "Remedy:" in str(info.value)
    return info.value


def test_a_path_with_nul_is_refused(log: torchlens.Trace, tmp_path: Path) -> None:
    for path in (str(tmp_path / "m\x00.onnx.json"), tmp_path / "a\x00b" / "m.onnx.json"):
        assert refused(log, tmp_path, path).code == "invalid_path"


def test_a_path_with_lone_surrogates_is_refused(log: torchlens.Trace, tmp_path: Path) -> None:
    for name in ("m\ud800.onnx.json", "m\udcff.onnx.json"):  # \udcff is how Python spells an undecodable byte
        err = refused(log, tmp_path, str(tmp_path / name))
        assert err.code == "invalid_path" and "surrogates" in str(err)


def test_a_file_name_past_the_limit_is_refused_counting_what_is_written_beside_it(
    log: torchlens.Trace, tmp_path: Path
) -> None:
    name_max = os.pathconf(tmp_path, "PC_NAME_MAX")
    err = refused(log, tmp_path, tmp_path / ("m" * (name_max - 4) + ".json"))
    assert err.code == "invalid_path" and "bytes" in str(err)
    # The longest name accepted really is writable, companion and temporary files included.
    longest = int(str(err).split("takes at most ")[1].split(" bytes")[0])
    ok = tmp_path / ("m" * (longest - len(".onnx.json")) + ".onnx.json")
    assert len(ok.name.encode()) == longest
    result = tlnetron.export(log, ok)
    assert result.artifact == ok and ok.is_file() and result.companion is not None and result.companion.is_file()
    assert (
        refused(log, tmp_path, tmp_path / ("m" * (longest + 1 - len(".onnx.json")) + ".onnx.json")).code
        == "invalid_path"
    )


def test_a_baseline_string_of_lone_surrogates_is_refused(log: torchlens.Trace, tmp_path: Path) -> None:
    err = refused(log, tmp_path, tmp_path / "m.onnx.json", baseline="run-\ud83d")
    assert err.code == "invalid_baseline"


@pytest.mark.parametrize("progress", [42, "bar", True, object()])
def test_a_progress_that_is_not_a_function_is_refused(log: torchlens.Trace, tmp_path: Path, progress: Any) -> None:
    err = refused(log, tmp_path, tmp_path / "m.onnx.json", progress=progress)
    assert err.code == "invalid_option" and "progress=" in str(err)

"""The export id that links an artifact and its companion, and ``tlnetron validate`` on pairs.

Every export writes one id into the artifact's model metadata (``torchlens.export_id``) and
into the companion (the model row of that name). It is derived from both files (sha256,
with the id zeroed), so identical exports are byte-identical and different ones get
different ids. ``tlnetron validate ARTIFACT --attachment COMPANION`` names a companion of
another export in one line (``companion_mismatch``) instead of one line per row; files
without ids are checked row by row, as before.
"""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import json
import re
import warnings
from pathlib import Path
from typing import Any

import onnx
import pytest
import torch
import torchlens
from google.protobuf import json_format
from torch import nn

import tlnetron
from test_golden import Tiny  # Linear -> ReLU, the golden files' model
from tlnetron import TlnetronWarning, cli
from tlnetron._generated.vocab import (
    COMPANION_SIGNATURE,
    BufferPolicy,
    CaptureStatus,
    CompanionKind,
    CompanionRow,
    Granularity,
    MetaKey,
    ValidationCode,
)
from tlnetron.api import ExportResult
from tlnetron.pipeline import export_ir
from tlnetron.build.export_id import PLACEHOLDER, companion_with_id, export_id_of
from tlnetron.ir.trace import Honesty, OpIR, TraceIR
from tlnetron.check.pairs import (
    MISMATCH_MIN_ROWS,
    artifact_export_id,
    companion_export_id,
    pair_mismatch,
    shown_in_model,
)
from tlnetron.check.validation import companion_problems, parse_artifact

ID = re.compile(r"[0-9a-f]{32}")
MISMATCH = ValidationCode.COMPANION_MISMATCH
ROW_INVALID = ValidationCode.NETRON_ATTACHMENT_INVALID


class Other(nn.Module):
    """Four element-wise ops, none of them Tiny's: no node name in common with it."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out: torch.Tensor = torch.tanh(torch.sigmoid(torch.exp(torch.sin(x))))
        return out


def _trace(model: nn.Module) -> torchlens.Trace:
    torch.manual_seed(0)
    return torchlens.trace(model.eval(), torch.randn(1, 3))


@pytest.fixture(scope="module")
def small() -> torchlens.Trace:
    return _trace(Tiny())


@pytest.fixture(scope="module")
def other() -> torchlens.Trace:
    return _trace(Other())


def _export(trace: torchlens.Trace, path: Path, **options: Any) -> ExportResult:
    path.parent.mkdir(parents=True, exist_ok=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TlnetronWarning)
        return tlnetron.export(trace, path, **options)


def _ids(result: ExportResult) -> list[str]:
    """The id rows of both files, as written."""
    artifact = json.loads(result.artifact_json)
    ids = [p["value"] for p in artifact["metadataProps"] if p["key"] == MetaKey.EXPORT_ID]
    if result.companion_json is not None:
        companion = json.loads(result.companion_json)
        ids += [
            r["value"]
            for r in companion["metadata"]
            if (r["kind"], r["target"], r["name"]) == (CompanionKind.MODEL, "", CompanionRow.TORCHLENS_EXPORT_ID)
        ]
    return ids


def _zeroed_digest(export_id: str, *files: bytes) -> str:
    return hashlib.sha256(b"".join(f.replace(export_id.encode(), PLACEHOLDER.encode()) for f in files)).hexdigest()[:32]


# ------------------------------------------------------------------ the id in both files


def test_an_export_writes_the_same_id_into_both_files(small: torchlens.Trace, tmp_path: Path) -> None:
    result = _export(small, tmp_path / "m.onnx.json")
    assert ID.fullmatch(result.export_id), result.export_id
    assert _ids(result) == [result.export_id] * 2
    artifact, companion = (tmp_path / "m.onnx.json").read_bytes(), (tmp_path / "m.onnx.attachment.json").read_bytes()
    assert (artifact, companion) == (result.artifact_bytes, result.companion_bytes)
    # The documented recipe: sha256 of the artifact then the companion, the id zeroed in both.
    assert _zeroed_digest(result.export_id, artifact, companion) == result.export_id
    # It is the first model metadata row after the schema version, and the companion's first row.
    keys = [p["key"] for p in json.loads(artifact)["metadataProps"]]
    assert keys[keys.index(MetaKey.SCHEMA_VERSION) + 1] == MetaKey.EXPORT_ID
    assert json.loads(companion)["metadata"][0]["name"] == CompanionRow.TORCHLENS_EXPORT_ID
    # The proto the checker sees is the one written (the id is not a placeholder there).
    model, problems = parse_artifact(artifact.decode("utf-8"))
    assert model is not None and not problems
    onnx.checker.check_model(model, full_check=True)
    assert artifact_export_id(model) == result.export_id


def test_the_same_export_twice_gives_identical_bytes(small: torchlens.Trace, tmp_path: Path) -> None:
    a = _export(small, tmp_path / "a" / "m.onnx.json", granularity=Granularity.OP)
    b = _export(small, tmp_path / "b" / "m.onnx.json", granularity=Granularity.OP)
    assert a.export_id == b.export_id
    for name in ("m.onnx.json", "m.onnx.attachment.json"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes(), name


def test_different_exports_get_different_ids(small: torchlens.Trace, other: torchlens.Trace, tmp_path: Path) -> None:
    results = {
        "small": _export(small, tmp_path / "1" / "m.onnx.json"),
        "other trace": _export(other, tmp_path / "2" / "m.onnx.json"),
        "op view": _export(small, tmp_path / "3" / "m.onnx.json", granularity=Granularity.OP),
        "buffers never": _export(
            small, tmp_path / "4" / "m.onnx.json", show_buffers=BufferPolicy.NEVER, granularity=Granularity.OP
        ),
        "no companion": _export(small, tmp_path / "5" / "m.onnx.json", attachment=False),
        "other name": _export(small, tmp_path / "6" / "n.onnx.json"),  # the companion names its artifact
        "baseline": _export(small, tmp_path / "7" / "m.onnx.json", baseline="run-41"),
    }
    ids = {name: r.export_id for name, r in results.items()}
    assert len(set(ids.values())) == len(ids), ids
    for r in results.values():
        assert ID.fullmatch(r.export_id) and _ids(r) == [r.export_id] * (1 + (r.companion_json is not None))


def test_without_a_companion_the_id_is_the_artifacts_digest(small: torchlens.Trace, tmp_path: Path) -> None:
    result = _export(small, tmp_path / "m.onnx.json", attachment=False)
    assert result.companion_bytes is None and not (tmp_path / "m.onnx.attachment.json").exists()
    assert _ids(result) == [result.export_id]
    assert _zeroed_digest(result.export_id, result.artifact_bytes) == result.export_id


TINY_IR = TraceIR(
    ops=(
        OpIR("input_1", "input_1", 1, 1, "input", "input", (2, 4), "float32", nbytes=32),
        OpIR(
            "relu_1_1",
            "relu_1_1",
            1,
            1,
            "relu",
            "op",
            (2, 4),
            "float32",
            parents=("input_1",),
            ports=("arg0",),
            duration_s=1e-6,
            flops=8,
            nbytes=32,
        ),
        OpIR(
            "output_1", "output_1", 1, 1, "output", "output", (2, 4), "float32", parents=("relu_1_1",), ports=("arg0",)
        ),
    ),
    calls=(),
    honesty=Honesty(capture_status=CaptureStatus.COMPLETE, verified=True),
)


def test_a_memory_only_export_carries_an_id() -> None:
    """``path=None`` (what ``serve=True`` without a path exports): no companion, an id all the same."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TlnetronWarning)
        result = export_ir(
            TINY_IR, None, granularity=Granularity.OP, depth=None, show_buffers=BufferPolicy.MEANINGFUL, attachment=None
        )
    assert result.artifact is None and result.companion_bytes is None
    assert ID.fullmatch(result.export_id) and _ids(result) == [result.export_id]
    assert _zeroed_digest(result.export_id, result.artifact_bytes) == result.export_id


def test_the_id_goes_over_the_placeholders_and_nowhere_else() -> None:
    artifact = b'{"metadataProps":[{"key":"torchlens.export_id","value":"' + PLACEHOLDER.encode() + b'"}],"graph":{}}'
    companion = (
        b'{"signature":"'
        + COMPANION_SIGNATURE.encode()
        + b'","metadata":[{"kind":"model","target":"","name":"torchlens.export_id","value":"'
        + PLACEHOLDER.encode()
        + b'"},{"kind":"model","target":"","name":"x","value":"'
        + PLACEHOLDER.encode()
        + b'"}],"metrics":[]}\n'
    )
    export_id = export_id_of(artifact, companion)
    assert export_id == hashlib.sha256(artifact + companion).hexdigest()[:32] != export_id_of(artifact, None)
    stamped = companion_with_id(companion, export_id)
    assert stamped == companion.replace(PLACEHOLDER.encode(), export_id.encode(), 1)
    with pytest.raises(ValueError, match="placeholder"):
        companion_with_id(
            b'{"signature":"' + COMPANION_SIGNATURE.encode() + b'","metadata":[],"metrics":[]}', export_id
        )


def test_the_builder_refuses_metadata_without_the_placeholder() -> None:
    from tlnetron.build.artifact import build_model
    from tlnetron.options import ExportOptions
    from tlnetron.views import view

    projection = view(Granularity.OP).project(
        TINY_IR, ExportOptions(granularity=Granularity.OP, show_buffers=BufferPolicy.MEANINGFUL)
    )
    assert build_model(projection, [(MetaKey.EXPORT_ID, PLACEHOLDER)], producer_version="0", graph_doc="").export_id
    with pytest.raises(ValueError, match="placeholder"):
        build_model(projection, [(MetaKey.EXPORT_ID, "1" * 32)], producer_version="0", graph_doc="")


# ------------------------------------------------------------------ validate on pairs


def _validate(capsys: pytest.CaptureFixture[str], artifact: Path, companion: Path) -> tuple[int, list[str]]:
    capsys.readouterr()
    code = cli.main(["validate", str(artifact), "--attachment", str(companion)])
    return code, capsys.readouterr().out.splitlines()


@pytest.fixture(scope="module")
def pairs(small: torchlens.Trace, other: torchlens.Trace, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Two exports of different traces (op view: many node rows), and a second export of
    the first trace in another view."""
    d = tmp_path_factory.mktemp("pairs")
    _export(small, d / "small.onnx.json", granularity=Granularity.OP)
    _export(other, d / "other.onnx.json", granularity=Granularity.OP)
    _export(small, d / "module.onnx.json")
    return {
        "small": d / "small.onnx.json",
        "small companion": d / "small.onnx.attachment.json",
        "other": d / "other.onnx.json",
        "other companion": d / "other.onnx.attachment.json",
        "module": d / "module.onnx.json",
        "module companion": d / "module.onnx.attachment.json",
    }


def _load(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def _write(path: Path, data: Any) -> Path:
    path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    return path


def _without_id_row(companion: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(companion)
    out["metadata"] = [r for r in out["metadata"] if r["name"] != CompanionRow.TORCHLENS_EXPORT_ID]
    return out


def _without_id_prop(artifact: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(artifact)
    out["metadataProps"] = [p for p in out["metadataProps"] if p["key"] != MetaKey.EXPORT_ID]
    return out


def test_validate_is_clean_on_a_matched_pair(pairs: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    for name in ("small", "other", "module"):
        code, lines = _validate(capsys, pairs[name], pairs[f"{name} companion"])
        assert code == cli.EXIT_OK and lines[0].startswith("valid:"), lines
        assert pair_mismatch(pairs[name].read_bytes(), _load(pairs[f"{name} companion"])) is None


def test_validate_names_a_mismatched_pair_in_one_line(
    pairs: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    artifact, companion = pairs["small"], pairs["other companion"]
    model = json_format.Parse(artifact.read_text(encoding="utf-8"), onnx.ModelProto())
    # Row by row, nearly every row of the other model's companion targets a node not shown here.
    ungated = list(
        companion_problems(
            _without_id_row(_load(companion)), dataclasses.replace(shown_in_model(model), export_id=None)
        )
    )
    assert len(ungated) >= MISMATCH_MIN_ROWS and {p.code for p in ungated} == {ROW_INVALID}

    code, lines = _validate(capsys, artifact, companion)
    assert code == cli.EXIT_INVALID
    assert len(lines) == 1 and lines[0].startswith(f"{MISMATCH}\tcompanion\t"), lines
    small_id, other_id = artifact_export_id(model), companion_export_id(_load(companion))
    assert small_id and other_id and small_id in lines[0] and other_id in lines[0]


def test_ids_decide_even_where_every_target_matches(pairs: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    """The module view's companion on the op view's artifact of the same trace: its node
    names may match, but it was written by another export."""
    code, lines = _validate(capsys, pairs["small"], pairs["module companion"])
    assert code == cli.EXIT_INVALID and [line.split("\t", 1)[0] for line in lines] == [MISMATCH], lines


def test_pair_mismatch_reads_every_form_of_the_artifact(pairs: dict[str, Path]) -> None:
    text = pairs["small"].read_text(encoding="utf-8")
    forms = [text, text.encode("utf-8"), json.loads(text), json_format.Parse(text, onnx.ModelProto())]
    other = _load(pairs["other companion"])
    mine = _load(pairs["small companion"])
    for form in forms:
        problem = pair_mismatch(form, other)
        assert problem is not None and problem.code == MISMATCH and problem.where == "companion", form.__class__
        assert pair_mismatch(form, mine) is None
    # Text that is not JSON has no id and shows nothing: every row of a companion with an id is unshown.
    assert pair_mismatch(b"not json", other) is not None


def test_other_row_problems_are_still_reported_beside_a_mismatch(
    pairs: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    companion = _load(pairs["other companion"])
    companion["metrics"].append(copy.deepcopy(companion["metrics"][0]))  # a duplicate row
    companion["metadata"].append({"kind": "model", "target": "x", "name": "note", "value": 1})  # no model is "x"
    path = _write(pairs["other companion"].with_name("dup.onnx.attachment.json"), companion)
    code, lines = _validate(capsys, pairs["small"], path)
    assert code == cli.EXIT_INVALID
    assert [line.split("\t", 2)[:2] for line in lines] == [
        [MISMATCH, "companion"],
        [ROW_INVALID, f"metadata[{len(companion['metadata']) - 1}]"],
        [ROW_INVALID, f"metrics[{len(companion['metrics']) - 1}]"],
    ], lines


def test_a_companion_without_an_id_is_checked_row_by_row(
    pairs: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    """A hand-made companion (no id) whose rows mostly match: one line for its one bad row,
    whether the artifact has an id or not -- exactly as before export ids."""
    artifact = _load(pairs["small"])
    names = [n["name"] for n in artifact["graph"]["node"]]
    hand_made = {
        "signature": COMPANION_SIGNATURE,
        "metadata": [{"kind": "model", "target": "", "name": "note", "value": "by hand"}],
        "metrics": [
            *({"kind": "node", "target": n, "name": "my metric", "value": 1} for n in names),
            {"kind": "node", "target": "no such node", "name": "my metric", "value": 2},
        ],
    }
    assert companion_export_id(hand_made) is None
    companion = _write(pairs["small"].with_name("hand.onnx.attachment.json"), hand_made)
    stripped = _write(pairs["small"].with_name("stripped.onnx.json"), _without_id_prop(artifact))
    for path in (pairs["small"], stripped):
        code, lines = _validate(capsys, path, companion)
        assert code == cli.EXIT_INVALID
        assert lines == [f"{ROW_INVALID}\tmetrics[{len(names)}]\t" + lines[0].split("\t", 2)[2]], lines
        assert "'no such node'" in lines[0]


def test_files_without_ids_are_never_named_a_mismatch(
    pairs: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    """Another model's companion with neither file carrying an id: one line per row, as before."""
    artifact = _write(pairs["small"].with_name("old.onnx.json"), _without_id_prop(_load(pairs["small"])))
    companion = _write(
        pairs["small"].with_name("old.onnx.attachment.json"), _without_id_row(_load(pairs["other companion"]))
    )
    code, lines = _validate(capsys, artifact, companion)
    assert code == cli.EXIT_INVALID
    codes = [line.split("\t", 1)[0] for line in lines]
    assert MISMATCH not in codes and len(codes) >= MISMATCH_MIN_ROWS and set(codes) == {ROW_INVALID}, lines
    assert pair_mismatch(artifact.read_bytes(), _load(companion)) is None


@pytest.mark.parametrize("which", ["artifact", "companion"])
def test_with_one_id_most_targets_unshown_is_a_mismatch(
    pairs: dict[str, Path], capsys: pytest.CaptureFixture[str], which: str
) -> None:
    """Only one file has an id (the other from an older tlnetron, say): a companion whose
    rows mostly target names the artifact does not show is named once."""
    artifact, companion = pairs["small"], pairs["other companion"]
    if which == "artifact":
        companion = _write(companion.with_name("noid.onnx.attachment.json"), _without_id_row(_load(companion)))
    else:
        artifact = _write(artifact.with_name("noid.onnx.json"), _without_id_prop(_load(artifact)))
    code, lines = _validate(capsys, artifact, companion)
    assert code == cli.EXIT_INVALID
    assert len(lines) == 1 and lines[0].startswith(f"{MISMATCH}\tcompanion\t"), lines
    assert f"only the {which} has a {MetaKey.EXPORT_ID}" in lines[0]
    problem = pair_mismatch(artifact.read_bytes(), _load(companion))
    assert problem is not None and problem.line() == lines[0]

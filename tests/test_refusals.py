"""Every typed refusal of ``tlnetron.export``: stable code, a remedy, and nothing written.

Refusals happen before anything touches the disk, so an existing artifact and companion at
the destination stay byte-identical; a failure in the middle of writing the pair (the
second ``os.replace``) restores the first file and leaves no temporary files behind.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import torch
import torchlens

import tlnetron
import tlnetron.perf
import tlnetron.pipeline
import tlnetron.write.pair
from tlnetron import TlnetronError, TlnetronWarning
from tlnetron._generated.vocab import GRANULARITY, BufferPolicy, Granularity
from zoo import ZooTrace

MODEL = "twice"  # small and fast; has module calls and two outputs


@pytest.fixture(scope="module")
def log(zoo_trace: ZooTrace) -> torchlens.Trace:
    return zoo_trace(MODEL)


def _export(trace: Any, path: Any = None, **kwargs: Any) -> tlnetron.ExportResult:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TlnetronWarning)
        return tlnetron.export(trace, path, **kwargs)


def _tree(root: Path) -> dict[str, bytes]:
    """Every file under ``root`` with its bytes (hidden temp files included)."""
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _refused(code: str, trace: Any, path: Any = None, **kwargs: Any) -> TlnetronError:
    with pytest.raises(TlnetronError) as info:
        _export(trace, path, **kwargs)
    err = info.value
    assert err.code == code, str(err)
    text = str(err)
    assert text.startswith(f"[{code}] ")
    assert "Remedy:" in text and err.remedy, text
    assert text.split("Remedy:", 1)[1].strip()
    return err


# ------------------------------------------------------------------ one case per code


@pytest.mark.parametrize("subject", ["dict", "module", "none", "string"])
def test_not_a_trace(tmp_path: Path, subject: str) -> None:
    trace: Any = {
        "dict": {"ops": []},
        "module": torch.nn.Linear(2, 2),
        "none": None,
        "string": "run.tlspec",
    }[subject]
    _refused("not_a_trace", trace, tmp_path / "m.onnx.json")
    assert _tree(tmp_path) == {}


@pytest.mark.parametrize("granularity", ["ops", "Module", "", None, 1, "flat"])
def test_invalid_granularity(log: torchlens.Trace, tmp_path: Path, granularity: Any) -> None:
    _refused("invalid_granularity", log, tmp_path / "m.onnx.json", granularity=granularity)
    assert _tree(tmp_path) == {}


@pytest.mark.parametrize("policy", ["sometimes", "Always", "", None, True])
def test_invalid_buffer_policy(log: torchlens.Trace, tmp_path: Path, policy: Any) -> None:
    _refused("invalid_buffer_policy", log, tmp_path / "m.onnx.json", show_buffers=policy)
    assert _tree(tmp_path) == {}


@pytest.mark.parametrize("depth", [0, -1, 1.5, True, False, "2"], ids=repr)
def test_invalid_depth(log: torchlens.Trace, tmp_path: Path, depth: Any) -> None:
    _refused("invalid_depth", log, tmp_path / "m.onnx.json", depth=depth)
    assert _tree(tmp_path) == {}


@pytest.mark.parametrize("granularity", [g for g in GRANULARITY if g != Granularity.MODULE])
def test_depth_not_applicable(log: torchlens.Trace, tmp_path: Path, granularity: str) -> None:
    err = _refused("depth_not_applicable", log, tmp_path / "m.onnx.json", granularity=granularity, depth=2)
    assert Granularity.MODULE in err.remedy
    assert _tree(tmp_path) == {}


@pytest.mark.parametrize("case", ["no_json", "attachment_name", "directory", "not_a_path"])
def test_invalid_path(log: torchlens.Trace, tmp_path: Path, case: str) -> None:
    target: Any = {
        "no_json": tmp_path / "model.onnx",
        "attachment_name": tmp_path / "model.attachment.json",
        "directory": tmp_path / "folder.json",
        "not_a_path": 42,
    }[case]
    if case == "directory":
        target.mkdir()
    before = _tree(tmp_path)
    _refused("invalid_path", log, target)
    assert _tree(tmp_path) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == (["folder.json"] if case == "directory" else [])


def _under_a_file(tmp_path: Path) -> Path:
    blocker = tmp_path / "a_regular_file"
    blocker.write_text("not a folder")
    return blocker / "m.onnx.json"


@pytest.mark.parametrize("case", ["missing_parent", "parent_is_a_file", "proc"])
def test_destination_unwritable(log: torchlens.Trace, tmp_path: Path, case: str) -> None:
    # Tests run as root, so a chmod'ed folder would still be writable: use a parent that is
    # a regular file, a folder that does not exist, or /proc (no regular files can be made).
    target = {
        "missing_parent": tmp_path / "missing" / "m.onnx.json",
        "parent_is_a_file": _under_a_file(tmp_path) if case == "parent_is_a_file" else None,
        "proc": Path("/proc/tlnetron-test.onnx.json"),
    }[case]
    before = _tree(tmp_path)
    _refused("destination_unwritable", log, target)
    assert _tree(tmp_path) == before
    assert not (tmp_path / "missing").exists()
    assert not Path("/proc/tlnetron-test.onnx.json").exists()


def test_attachment_needs_path(log: torchlens.Trace) -> None:
    # Refused before serving is attempted (no netron needed to see this refusal).
    _refused("attachment_needs_path", log, None, attachment=True, serve=True)


@pytest.mark.parametrize(
    ("path_kind", "kwargs"),
    [
        ("none", {}),
        ("none", {"serve": False}),
        ("none", {"attachment": False}),
        ("file", {"attachment": "yes"}),
        ("file", {"attachment": 1}),
        ("file", {"serve": "yes"}),
    ],
    ids=["no-path-no-serve", "serve-false", "attachment-false-no-path", "attachment-yes", "attachment-1", "serve-yes"],
)
def test_invalid_option(log: torchlens.Trace, tmp_path: Path, path_kind: str, kwargs: dict[str, Any]) -> None:
    path = tmp_path / "m.onnx.json" if path_kind == "file" else None
    _refused("invalid_option", log, path, **kwargs)
    assert _tree(tmp_path) == {}


# ------------------------------------------------------------------ existing files survive


def _existing_pair(log: torchlens.Trace, folder: Path) -> tuple[Path, dict[str, bytes]]:
    path = folder / "m.onnx.json"
    result = _export(log, path, granularity=Granularity.OP)
    assert result.companion is not None and result.companion.is_file()
    return path, _tree(folder)


def _refusing_calls(log: torchlens.Trace) -> Iterator[tuple[str, Any, dict[str, Any]]]:
    yield "not_a_trace", {"not": "a trace"}, {}
    yield "invalid_granularity", log, {"granularity": "layers"}
    yield "invalid_buffer_policy", log, {"show_buffers": "some"}
    yield "invalid_depth", log, {"depth": 0}
    yield "depth_not_applicable", log, {"granularity": Granularity.ROLLED, "depth": 1}
    yield "invalid_option", log, {"attachment": "yes"}


def test_refusals_leave_existing_files_byte_identical(log: torchlens.Trace, tmp_path: Path) -> None:
    path, before = _existing_pair(log, tmp_path)
    assert set(before) == {"m.onnx.json", "m.onnx.attachment.json"}
    for code, trace, kwargs in _refusing_calls(log):
        _refused(code, trace, path, **kwargs)
        assert _tree(tmp_path) == before, code


# ------------------------------------------------------------------ atomic writes


class _FailingSecondReplace:
    """Stands in for ``os`` inside ``tlnetron.write.pair``: the second ``replace`` fails."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str]] = []

    def replace(self, src: Any, dst: Any) -> None:
        self.calls.append((str(src), str(dst)))
        if len(self.calls) == 2:
            raise OSError(28, "No space left on device (simulated)", str(dst))
        os.replace(src, dst)

    def __getattr__(self, name: str) -> Any:
        return getattr(os, name)


@pytest.mark.parametrize("existing", [True, False], ids=["over-existing-files", "into-empty-folder"])
def test_failed_second_replace_restores_everything(
    log: torchlens.Trace, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, existing: bool
) -> None:
    path = tmp_path / "m.onnx.json"
    before: dict[str, bytes] = {}
    if existing:
        path, before = _existing_pair(log, tmp_path)
    fake = _FailingSecondReplace()
    monkeypatch.setattr(tlnetron.write.pair, "os", fake)
    # The module view differs from the op view on disk, so a half-done write would show.
    _refused("destination_unwritable", log, path, granularity=Granularity.MODULE)
    monkeypatch.undo()
    assert len(fake.calls) >= 2, "the writer did not replace the files one by one"
    assert fake.calls[0][1] == str(path)
    assert _tree(tmp_path) == before  # first file restored (or removed), no temp/backup files
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []
    # And the destination still accepts a normal export afterwards.
    result = _export(log, path, granularity=Granularity.MODULE)
    assert path.read_text(encoding="utf-8") == result.artifact_json


def test_every_file_reaches_the_disk_before_any_destination_is_replaced(
    log: torchlens.Trace, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path, _ = _existing_pair(log, tmp_path)
    events: list[tuple[str, Any]] = []
    real_sync = tlnetron.write.pair._datasync

    def sync(fd: int) -> None:
        events.append(("sync", os.fstat(fd).st_size))
        real_sync(fd)

    class _Os:
        def replace(self, src: Any, dst: Any) -> None:
            events.append(("replace", Path(dst).name))
            os.replace(src, dst)

        def __getattr__(self, name: str) -> Any:
            return getattr(os, name)

    monkeypatch.setattr(tlnetron.write.pair, "_datasync", sync)
    monkeypatch.setattr(tlnetron.write.pair, "os", _Os())
    result = _export(log, path, granularity=Granularity.OP)
    monkeypatch.undo()
    assert result.companion is not None
    sizes = [len(result.artifact_bytes), len(result.companion_bytes or b"")]
    assert events == [
        ("sync", sizes[0]),
        ("sync", sizes[1]),
        ("replace", path.name),
        ("replace", result.companion.name),
    ]


def test_both_files_are_staged_and_written_out_while_the_checker_runs(
    log: torchlens.Trace, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The kernel starts writing each file as soon as its bytes exist (before the checker);
    the destinations are replaced only after the checker passed and every file was synced."""
    path, _ = _existing_pair(log, tmp_path)
    events: list[tuple[str, Any]] = []
    real_start, real_sync, real_check = (
        tlnetron.perf._writeback,
        tlnetron.write.pair._datasync,
        tlnetron.pipeline.check_onnx,
    )
    assert real_start is not None, "Linux's sync_file_range was not found"

    def start(fd: int) -> object:
        events.append(("writeback", os.fstat(fd).st_size))
        return real_start(fd)

    def sync(fd: int) -> None:
        events.append(("sync", os.fstat(fd).st_size))
        real_sync(fd)

    def check(data: bytes, **kw: object) -> str | None:
        # What is on disk while the checker runs: the old pair, both new files staged, and the
        # locks of both names (the companion's too: two artifact names can share one companion).
        events.append(("check", sorted(p.name for p in tmp_path.iterdir())))
        return real_check(data, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(tlnetron.write.pair, "start_writeback", start)
    monkeypatch.setattr(tlnetron.write.pair, "_datasync", sync)
    monkeypatch.setattr(tlnetron.pipeline, "check_onnx", check)
    result = _export(log, path, granularity=Granularity.MODULE)
    monkeypatch.undo()
    sizes = {"artifact": len(result.artifact_bytes), "companion": len(result.companion_bytes or b"")}
    pid = os.getpid()
    assert events == [
        ("writeback", sizes["companion"]),  # both staged once the model is built (the export id is in both)
        ("writeback", sizes["artifact"]),
        (
            "check",
            sorted(
                [
                    path.name,
                    "m.onnx.attachment.json",
                    f".{path.name}.{pid}.tlnetron-tmp",
                    f".m.onnx.attachment.json.{pid}.tlnetron-tmp",
                    f".{path.name}.tlnetron-lock",
                    ".m.onnx.attachment.json.tlnetron-lock",
                ]
            ),
        ),
        ("sync", sizes["artifact"]),
        ("sync", sizes["companion"]),
    ]
    assert path.read_bytes() == result.artifact_bytes
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_a_checker_refusal_after_staging_removes_the_staged_files(log: torchlens.Trace, tmp_path: Path) -> None:
    """The real onnx.checker refuses a graph that is not in SSA form (two ops of one name).
    The companion is refused too (two rows of one target), but the invalid artifact is
    what is reported; the artifact was already staged, and is removed."""
    from tlnetron.pipeline import export_ir
    from tlnetron.ir.trace import ROLE_INPUT, ROLE_OP, ROLE_OUTPUT, OpIR, TraceIR

    path, before = _existing_pair(log, tmp_path)
    relu = {
        "layer": "relu",
        "pass_index": 1,
        "num_passes": 1,
        "op_type": "relu",
        "role": ROLE_OP,
        "shape": (2,),
        "dtype": "float32",
        "ports": ("arg0",),
        "duration_s": 1e-6,
    }
    ops = (
        OpIR(
            name="input_1",
            layer="input_1",
            pass_index=1,
            num_passes=1,
            op_type="input",
            role=ROLE_INPUT,
            shape=(2,),
            dtype="float32",
        ),
        OpIR(name="relu", parents=("input_1",), **relu),
        OpIR(name="relu", parents=("relu",), **relu),
        OpIR(
            name="output_1",
            layer="output_1",
            pass_index=1,
            num_passes=1,
            op_type="output",
            role=ROLE_OUTPUT,
            shape=(2,),
            dtype="float32",
            parents=("relu",),
        ),
    )
    staged: list[str] = []
    real_stage = tlnetron.write.pair.StagedFiles.stage

    def stage(self: tlnetron.write.pair.StagedFiles, dest: Path, data: bytes) -> None:
        staged.append(dest.name)
        real_stage(self, dest, data)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(tlnetron.write.pair.StagedFiles, "stage", stage)
        with pytest.raises(TlnetronError) as info:
            export_ir(
                TraceIR(ops=ops),
                path,
                granularity=Granularity.OP,
                depth=None,
                show_buffers=BufferPolicy.MEANINGFUL,
                attachment=None,
            )
    assert info.value.code == "artifact_invalid" and "single static assignment" in str(info.value)
    assert staged == ["m.onnx.json"]
    assert _tree(tmp_path) == before  # no temporary file left, existing files untouched


def test_a_checker_failure_with_both_files_staged_changes_nothing(
    log: torchlens.Trace, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path, before = _existing_pair(log, tmp_path)
    seen: list[list[str]] = []

    def failing_check(data: bytes, **kw: object) -> str:
        seen.append(sorted(p.name for p in tmp_path.iterdir() if p.name.endswith(".tlnetron-tmp")))
        return "made to fail after staging"

    monkeypatch.setattr(tlnetron.pipeline, "check_onnx", failing_check)
    err = _refused("artifact_invalid", log, path, granularity=Granularity.MODULE)
    assert "made to fail after staging" in str(err)
    assert len(seen) == 1 and len(seen[0]) == 2  # both files were staged when the check ran
    assert _tree(tmp_path) == before


def test_a_staging_failure_removes_what_was_staged_before(log: torchlens.Trace, tmp_path: Path) -> None:
    """The companion is staged first; when the artifact's temporary file cannot be created
    (a folder holds its name), the companion's is removed too and the pair stays as it was."""
    path, before = _existing_pair(log, tmp_path)
    blocker = tmp_path / f".{path.name}.{os.getpid()}.tlnetron-tmp"
    blocker.mkdir()
    err = _refused("destination_unwritable", log, path, granularity=Granularity.MODULE)
    assert str(blocker) in str(err)
    blocker.rmdir()
    assert _tree(tmp_path) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.onnx.attachment.json", "m.onnx.json"]


def test_staged_files_commit_only_a_complete_set(tmp_path: Path) -> None:
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    with tlnetron.write.pair.staged_files([a, b]) as out:
        out.stage(b, b"second")
        with pytest.raises(ValueError, match="not a destination"):
            out.stage(tmp_path / "c.json", b"")
        with pytest.raises(ValueError, match="never staged"):
            out.commit()
        out.stage(a, b"first")
        out.commit()
    assert _tree(tmp_path) == {"a.json": b"first", "b.json": b"second"}
    with tlnetron.write.pair.staged_files([a]) as out:
        out.stage(a, b"not committed")
    assert _tree(tmp_path) == {"a.json": b"first", "b.json": b"second"}


def test_writeback_starts_on_a_real_file(tmp_path: Path) -> None:
    start = tlnetron.perf._writeback_starter()
    assert start is not None  # Linux: glibc and musl have sync_file_range
    with open(tmp_path / "f", "wb") as fh:
        fh.write(b"x" * 100_000)
        fh.flush()
        assert start(fh.fileno()) == 0
    assert (tmp_path / "f").read_bytes() == b"x" * 100_000


def test_companion_destination_is_a_folder(log: torchlens.Trace, tmp_path: Path) -> None:
    """A real-world second-replace failure: the companion's name is taken by a folder."""
    path, _ = _existing_pair(log, tmp_path)
    companion = tmp_path / "m.onnx.attachment.json"
    companion.unlink()
    companion.mkdir()
    before = _tree(tmp_path)
    _refused("destination_unwritable", log, path, granularity=Granularity.MODULE)
    assert _tree(tmp_path) == before
    assert companion.is_dir()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.onnx.attachment.json", "m.onnx.json"]


def test_companion_refusal_at_export_leaves_existing_files_as_they_were(log: torchlens.Trace, tmp_path: Path) -> None:
    """A refusal found in the companion (found before the model is built, raised once the artifact
    has been staged and has passed the checker) writes nothing."""
    from tlnetron.pipeline import export_ir
    from tlnetron.ir.trace import ROLE_INPUT, ROLE_OP, ROLE_OUTPUT, OpIR, TraceIR

    path, before = _existing_pair(log, tmp_path)
    # Two nodes whose names agree up to the first line break: Netron cannot tell their rows apart.
    ops = (
        OpIR(
            name="input_1",
            layer="input_1",
            pass_index=1,
            num_passes=1,
            op_type="input",
            role=ROLE_INPUT,
            shape=(2,),
            dtype="float32",
        ),
        OpIR(
            name="relu\na",
            layer="relu\na",
            pass_index=1,
            num_passes=1,
            op_type="relu",
            role=ROLE_OP,
            shape=(2,),
            dtype="float32",
            parents=("input_1",),
            ports=("arg0",),
            duration_s=1e-6,
        ),
        OpIR(
            name="relu\nb",
            layer="relu\nb",
            pass_index=1,
            num_passes=1,
            op_type="relu",
            role=ROLE_OP,
            shape=(2,),
            dtype="float32",
            parents=("relu\na",),
            ports=("arg0",),
            duration_s=1e-6,
        ),
        OpIR(
            name="output_1",
            layer="output_1",
            pass_index=1,
            num_passes=1,
            op_type="output",
            role=ROLE_OUTPUT,
            shape=(2,),
            dtype="float32",
            parents=("relu\nb",),
        ),
    )
    with pytest.raises(TlnetronError) as info:
        export_ir(
            TraceIR(ops=ops),
            path,
            granularity=Granularity.OP,
            depth=None,
            show_buffers=BufferPolicy.MEANINGFUL,
            attachment=None,
        )
    assert info.value.code == "netron_attachment_invalid"
    assert _tree(tmp_path) == before  # no temporary file, existing files untouched
    # Without the companion the same IR exports (the artifact itself was fine).
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TlnetronWarning)
        result = export_ir(
            TraceIR(ops=ops),
            path,
            granularity=Granularity.OP,
            depth=None,
            show_buffers=BufferPolicy.MEANINGFUL,
            attachment=False,
        )
    assert path.read_text(encoding="utf-8") == result.artifact_json


def test_a_stale_backup_from_a_killed_run_is_replaced_not_fatal(log: torchlens.Trace, tmp_path: Path) -> None:
    path, _ = _existing_pair(log, tmp_path)
    stale = tmp_path / f".{path.name}.{os.getpid()}.tlnetron-bak"
    stale.write_bytes(b"left behind by a killed export")
    result = _export(log, path, granularity=Granularity.MODULE)
    assert path.read_text(encoding="utf-8") == result.artifact_json
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_a_node_the_schema_refuses_is_never_written(tmp_path: Path) -> None:
    """Every node's attributes and metadata are schema-validated before anything is
    written: a pass index of 0 (the schema's passes count from 1; no reader makes one) is
    refused with ``artifact_invalid`` naming the node, and an existing pair stays as it was.
    (Names past the schema's length limit are shortened instead: tests/test_long_names.py.)"""
    from tlnetron.pipeline import export_ir
    from tlnetron.ir.trace import ROLE_INPUT, ROLE_OP, ROLE_OUTPUT, OpIR, TraceIR

    def op(name: str, role: str, parents: tuple[str, ...] = (), function: str | None = None) -> OpIR:
        bad = function == "bad"
        return OpIR(
            name=name,
            layer=name,
            pass_index=0 if bad else 1,
            num_passes=2 if bad else 1,
            op_type={ROLE_OP: "relu"}.get(role, role),
            role=role,
            shape=(2,),
            dtype="float32",
            parents=parents,
            ports=tuple(f"arg{i}" for i in range(len(parents))),
            function=function,
        )

    def ir(function: str) -> TraceIR:
        return TraceIR(
            ops=(
                op("input_1", ROLE_INPUT),
                op("relu_1_1", ROLE_OP, ("input_1",), function="torch.relu"),
                op("relu_2_2", ROLE_OP, ("relu_1_1",), function=function),
                op("output_1", ROLE_OUTPUT, ("relu_2_2",)),
            )
        )

    path = tmp_path / "m.onnx.json"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TlnetronWarning)  # a constructed IR has no capture outcome
        for granularity in (
            Granularity.OP,
            Granularity.MODULE,
        ):  # the rolled view draws a layer, with no pass of its own
            export_ir(
                ir("torch.relu"),
                path,
                granularity=granularity,
                depth=None,
                show_buffers=BufferPolicy.MEANINGFUL,
                attachment=None,
            )
            before = _tree(tmp_path)
            with pytest.raises(TlnetronError) as info:
                export_ir(
                    ir("bad"),
                    path,
                    granularity=granularity,
                    depth=None,
                    show_buffers=BufferPolicy.MEANINGFUL,
                    attachment=None,
                )
            assert info.value.code == "artifact_invalid"
            assert "node 'relu_2_2'" in str(info.value) and "attributes.pass" in str(info.value)
            assert "Remedy:" in str(info.value)
            assert _tree(tmp_path) == before

"""An artifact and its companion always come from one export, across processes and kills.

* Writers to one path take turns: four processes exporting different models to one path,
  round after round, leave a pair written by one of them every time.
* ``kill -9`` between the two renames leaves the new artifact beside the old companion and
  a journal; the next export to that place finishes the renames (the pair is whole again)
  and removes every temporary, backup and lock file the killed export left.
* Killed at random moments, an export never leaves a mixed pair undetected, and the next
  export leaves no stray file.

The exports here are of IR literals (no torch), so a process starts in well under a second.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import random
import signal
import subprocess
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import pytest

from tlnetron import TlnetronError, TlnetronWarning
from tlnetron._generated.vocab import BufferPolicy, Granularity
from tlnetron.pipeline import export_ir
from tlnetron.ir.trace import ROLE_INPUT, ROLE_OP, ROLE_OUTPUT, OpIR, TraceIR

ARTIFACT = "m.onnx.json"
COMPANION = "m.onnx.attachment.json"


def chain(length: int, *, clash: bool = False) -> TraceIR:
    """input -> ``length`` relus -> output; each length gives different bytes.

    ``clash`` names two relus alike up to a line break: the companion is then refused
    (after the lock is taken, before anything is committed).
    """
    names = [f"relu\n{i}" if clash and i < 2 else f"relu_{i}" for i in range(length)]
    ops = [
        OpIR(
            name="input_1",
            layer="input_1",
            pass_index=1,
            num_passes=1,
            op_type="input",
            role=ROLE_INPUT,
            shape=(length,),
            dtype="float32",
        )
    ]
    parent = "input_1"
    for name in names:
        ops.append(
            OpIR(
                name=name,
                layer=name,
                pass_index=1,
                num_passes=1,
                op_type="relu",
                role=ROLE_OP,
                shape=(length,),
                dtype="float32",
                parents=(parent,),
                ports=("arg0",),
                duration_s=1e-6 * length,
            )
        )
        parent = name
    ops.append(
        OpIR(
            name="output_1",
            layer="output_1",
            pass_index=1,
            num_passes=1,
            op_type="output",
            role=ROLE_OUTPUT,
            shape=(length,),
            dtype="float32",
            parents=(parent,),
        )
    )
    return TraceIR(ops=tuple(ops))


def write(folder: Path, length: int, **kwargs: Any) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TlnetronWarning)
        return export_ir(
            chain(length, clash=kwargs.pop("clash", False)),
            folder / ARTIFACT,
            granularity=Granularity.OP,
            depth=None,
            show_buffers=BufferPolicy.MEANINGFUL,
            attachment=None,
            **kwargs,
        )


def expected_pairs(tmp_path: Path, lengths: list[int]) -> dict[bytes, bytes]:
    """artifact bytes -> companion bytes of each export, written once to a folder of its own."""
    pairs = {}
    for n in lengths:
        folder = tmp_path / f"expected-{n}"
        folder.mkdir()
        result = write(folder, n)
        pairs[result.artifact_bytes] = result.companion_bytes
    return pairs


def hidden(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.startswith("."))


def check_whole(folder: Path, pairs: dict[bytes, bytes]) -> None:
    artifact = (folder / ARTIFACT).read_bytes()
    assert artifact in pairs, "the artifact is none of the exports"
    assert (folder / COMPANION).read_bytes() == pairs[artifact], "the companion belongs to another export"


# ------------------------------------------------------------------ writers take turns


def _writer(folder: str, length: int, rounds: int, start: Any, done: Any) -> None:
    for _ in range(rounds):
        start.wait()
        write(Path(folder), length)
        done.wait()


def test_concurrent_writers_to_one_path_never_mix_a_pair(tmp_path: Path) -> None:
    lengths, rounds = [2, 3, 4, 5], 60
    pairs = expected_pairs(tmp_path, lengths)
    shared = tmp_path / "shared"
    shared.mkdir()
    ctx = multiprocessing.get_context("fork")
    start, done = ctx.Barrier(len(lengths) + 1), ctx.Barrier(len(lengths) + 1)
    procs = [ctx.Process(target=_writer, args=(str(shared), n, rounds, start, done)) for n in lengths]
    for p in procs:
        p.start()
    try:
        for _ in range(rounds):
            start.wait(timeout=60)  # all four export at once
            done.wait(timeout=60)
            check_whole(shared, pairs)
            assert hidden(shared) == []
    finally:
        for p in procs:
            p.join(timeout=30)
            if p.is_alive():
                p.kill()
    assert all(p.exitcode == 0 for p in procs)


# ------------------------------------------------------------------ kill -9


_KILL_BETWEEN_RENAMES = """
import os, signal, sys, warnings
sys.path.insert(0, {tests!r})
import tlnetron.write.pair
from test_pairs import write
from pathlib import Path

class _Os:
    replaced = 0
    def replace(self, src, dst):
        os.replace(src, dst)
        _Os.replaced += 1
        if _Os.replaced == 1:  # the artifact is in place, the companion is not
            os.kill(os.getpid(), signal.SIGKILL)
    def __getattr__(self, name):
        return getattr(os, name)

tlnetron.write.pair.os = _Os()
write(Path({folder!r}), {length})
"""


def test_a_kill_between_the_renames_is_finished_by_the_next_export(tmp_path: Path) -> None:
    pairs = expected_pairs(tmp_path, [3, 4])
    folder = tmp_path / "out"
    folder.mkdir()
    write(folder, 3)
    code = _KILL_BETWEEN_RENAMES.format(tests=str(Path(__file__).parent), folder=str(folder), length=4)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=120)
    assert proc.returncode == -signal.SIGKILL, proc.stderr.decode()
    # The half-committed state the kill leaves: the new artifact beside the old companion.
    new_artifact = (folder / ARTIFACT).read_bytes()
    assert new_artifact in pairs and (folder / COMPANION).read_bytes() != pairs[new_artifact]
    assert any(n.endswith(".tlnetron-journal") for n in hidden(folder))
    assert any(n.endswith(".tlnetron-tmp") for n in hidden(folder))
    # The next export to that place is refused (its companion is invalid), after it took the
    # lock: the killed export's renames are finished all the same, and nothing stray is left.
    with pytest.raises(TlnetronError) as info:
        write(folder, 5, clash=True)
    assert info.value.code == "netron_attachment_invalid"
    check_whole(folder, pairs)
    assert (folder / ARTIFACT).read_bytes() == new_artifact  # finished, not rolled back
    assert hidden(folder) == []
    # And an export that succeeds replaces the whole pair.
    write(folder, 3)
    check_whole(folder, pairs)
    assert hidden(folder) == []


_LOOP = """
import sys
sys.path.insert(0, {tests!r})
from test_pairs import write
from pathlib import Path
print("ready", flush=True)
i = 0
while True:
    write(Path({folder!r}), (2, 3)[i % 2])
    i += 1
"""


@pytest.mark.parametrize("seed", range(3))
def test_random_kills_leave_no_undetected_mix_and_no_strays(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    pairs = expected_pairs(tmp_path, [2, 3])
    folder = tmp_path / "out"
    folder.mkdir()
    for _ in range(5):
        proc = subprocess.Popen(
            [sys.executable, "-c", _LOOP.format(tests=str(Path(__file__).parent), folder=str(folder))],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        assert proc.stdout is not None and proc.stdout.readline() == b"ready\n"
        time.sleep(rng.uniform(0.05, 0.6))
        proc.kill()
        proc.wait(timeout=30)
        for stream in (proc.stdout, proc.stderr):
            stream.close()  # type: ignore[union-attr]
        names = hidden(folder)
        if (folder / COMPANION).exists():
            artifact = (folder / ARTIFACT).read_bytes()
            whole = (folder / COMPANION).read_bytes() == pairs[artifact]
            # A mixed pair is only ever left with the journal that lets the next export finish it.
            assert whole or any(n.endswith(".tlnetron-journal") for n in names), names
    write(folder, 2)
    check_whole(folder, pairs)
    assert hidden(folder) == []


def test_a_journal_cut_short_finishes_nothing(tmp_path: Path) -> None:
    """A journal a kill cut short (or one another tool left) moves no file; strays are removed."""
    pairs = expected_pairs(tmp_path, [2])
    folder = tmp_path / "out"
    folder.mkdir()
    victim = folder / "keep.txt"
    victim.write_text("mine")
    for journal in (
        "",
        "[[",
        json.dumps([["keep.txt", "m.onnx.json"]]),
        json.dumps([["../x", "m.onnx.json"]]),
        json.dumps({"a": 1}),
    ):
        (folder / f".{ARTIFACT}.tlnetron-journal").write_text(journal)
        (folder / f".{ARTIFACT}.999999.tlnetron-tmp").write_bytes(b"stray")
        (folder / f".{COMPANION}.999999.tlnetron-bak").write_bytes(b"stray")
        write(folder, 2)
        check_whole(folder, pairs)
        assert hidden(folder) == [] and victim.read_text() == "mine"
    assert sorted(os.listdir(folder)) == sorted([COMPANION, ARTIFACT, "keep.txt"])


def test_a_write_with_no_files_commits_nothing(tmp_path: Path) -> None:
    """The memory-only export stages no file: its commit is a no-op, not an error."""
    import tlnetron.write.pair

    with tlnetron.write.pair.staged_files([]) as out:
        out.commit()
    assert os.listdir(tmp_path) == []


# ---------------------------------------------- one pair, one critical section; repair touches only its own names


def _variant_writer(folder: str, name: str, length: int, rounds: int) -> None:
    for _ in range(rounds):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", TlnetronWarning)
            export_ir(
                chain(length),
                Path(folder) / name,
                granularity=Granularity.OP,
                depth=None,
                show_buffers=BufferPolicy.MEANINGFUL,
                attachment=None,
            )


def test_case_variants_sharing_one_companion_take_turns(tmp_path: Path) -> None:
    """``a.onnx.json`` and ``a.onnx.JSON`` have one companion name: their writers lock it both."""
    ctx = multiprocessing.get_context("fork")
    procs = [
        ctx.Process(target=_variant_writer, args=(str(tmp_path), name, n, 60))
        for name, n in (("m.onnx.json", 2), ("m.onnx.JSON", 3))
    ]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=120)
    assert all(p.exitcode == 0 for p in procs)
    companion = json.loads((tmp_path / COMPANION).read_bytes())
    from tlnetron.check.pairs import artifact_export_id, companion_export_id

    ids = {artifact_export_id(json.loads((tmp_path / name).read_bytes())) for name in ("m.onnx.json", "m.onnx.JSON")}
    assert companion_export_id(companion) in ids
    assert hidden(tmp_path) == []


def test_a_planted_journal_never_renames_over_another_file(tmp_path: Path) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("mine")
    (tmp_path / ".victim.txt.1.tlnetron-tmp").write_text("planted")
    (tmp_path / f".{ARTIFACT}.tlnetron-journal").write_text(json.dumps([[".victim.txt.1.tlnetron-tmp", "victim.txt"]]))
    write(tmp_path, 2)
    assert victim.read_text() == "mine"
    assert (tmp_path / ".victim.txt.1.tlnetron-tmp").read_text() == "planted"  # not ours to remove either


def test_attachment_false_over_a_pair_removes_the_old_companion(tmp_path: Path) -> None:
    write(tmp_path, 2)
    assert (tmp_path / COMPANION).exists()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TlnetronWarning)
        export_ir(
            chain(3),
            tmp_path / ARTIFACT,
            granularity=Granularity.OP,
            depth=None,
            show_buffers=BufferPolicy.MEANINGFUL,
            attachment=False,
        )
    assert not (tmp_path / COMPANION).exists()
    assert hidden(tmp_path) == []


def test_attachment_false_leaves_a_file_that_is_no_companion(tmp_path: Path) -> None:
    (tmp_path / COMPANION).write_text('{"mine": true}')
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TlnetronWarning)
        export_ir(
            chain(3),
            tmp_path / ARTIFACT,
            granularity=Granularity.OP,
            depth=None,
            show_buffers=BufferPolicy.MEANINGFUL,
            attachment=False,
        )
    assert (tmp_path / COMPANION).read_text() == '{"mine": true}'

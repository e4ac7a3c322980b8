"""Property: every way Netron would drop a companion row is caught, in-process and by the CLI.

A valid companion (from an export of a random trace, or of a small fixed trace) gets exactly
one row broken -- kind missing / unknown / empty, target missing or naming nothing shown,
a line break in target or name, a duplicate (kind, target, name), a value Netron cannot
render (null, an object, NaN, infinity), a row type that breaks the sidebar, a model row
with a non-empty target -- and both ``tlnetron.check.validation.companion_problems`` and
``tlnetron validate ARTIFACT --attachment COMPANION`` must report
``netron_attachment_invalid`` naming that row.
"""

from __future__ import annotations

import copy
import json
import math
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import onnx
import pytest
from google.protobuf import json_format
from hypothesis import assume, given, note
from hypothesis import strategies as st

from known_bugs import export_sidestepping
from oracle import ir_literal, run_export, strict_json
from strategies import GRANULARITIES, trace_irs
from tlnetron import cli
from tlnetron._generated.vocab import BufferPolicy, CaptureStatus, Granularity, ValidationCode
from tlnetron.ir.trace import Honesty, ModuleCallIR, OpIR, TraceIR
from tlnetron.check.pairs import Shown, shown_in_model
from tlnetron.check.validation import companion_problems

CODE = ValidationCode.NETRON_ATTACHMENT_INVALID

FIXED = TraceIR(
    ops=(
        OpIR("input_1", "input_1", 1, 1, "input", "input", (2, 4), "float32", nbytes=32),
        OpIR(
            "linear_1_1",
            "linear_1_1",
            1,
            1,
            "linear",
            "op",
            (2, 4),
            "float32",
            parents=("input_1",),
            ports=("arg0",),
            module_calls=("block:1", "block.fc:1"),
            module_path="block.fc",
            duration_s=2e-5,
            flops=64,
            nbytes=32,
            num_params=20,
            params=(("weight", (4, 4)), ("bias", (4,))),
        ),
        OpIR(
            "relu_1_2",
            "relu_1_2",
            1,
            1,
            "relu",
            "op",
            (2, 4),
            "float32",
            parents=("linear_1_1",),
            ports=("arg0",),
            module_calls=("block:1",),
            module_path="block",
            duration_s=1e-6,
            flops=8,
            nbytes=32,
        ),
        OpIR(
            "add_1_3",
            "add_1_3",
            1,
            1,
            "add",
            "op",
            (2, 4),
            "float32",
            parents=("relu_1_2", "input_1"),
            ports=("arg0", "arg1"),
            duration_s=1e-6,
            flops=8,
            nbytes=32,
        ),
        OpIR(
            "output_1", "output_1", 1, 1, "output", "output", (2, 4), "float32", parents=("add_1_3",), ports=("arg0",)
        ),
    ),
    calls=(
        ModuleCallIR("block:1", "block", 1, "Block", None, 20),
        ModuleCallIR("block.fc:1", "block.fc", 1, "Linear", "block:1", 20),
    ),
    honesty=Honesty(capture_status=CaptureStatus.COMPLETE, verified=True),
)


# --- the mutations ----------------------------------------------------------------------
# Each takes the companion, the section and index of the row to break, and a context; it
# breaks that row (or adds one) and returns the index of the row Netron would drop.

Mutation = Callable[[dict[str, Any], str, int, dict[str, Any]], int]


def _set(key: str, value: Any) -> Mutation:
    def mutate(c: dict[str, Any], section: str, i: int, ctx: dict[str, Any]) -> int:
        c[section][i][key] = value
        return i

    return mutate


def _drop(key: str) -> Mutation:
    def mutate(c: dict[str, Any], section: str, i: int, ctx: dict[str, Any]) -> int:
        del c[section][i][key]
        return i

    return mutate


def _append_line(key: str, tail: str) -> Mutation:
    def mutate(c: dict[str, Any], section: str, i: int, ctx: dict[str, Any]) -> int:
        c[section][i][key] = c[section][i][key] + tail
        return i

    return mutate


def _target_graph_input(c: dict[str, Any], section: str, i: int, ctx: dict[str, Any]) -> int:
    c[section][i]["target"] = ctx["graph_input"]
    return i


def _target_unknown(c: dict[str, Any], section: str, i: int, ctx: dict[str, Any]) -> int:
    c[section][i]["target"] = ctx["unknown"]
    return i


def _duplicate(c: dict[str, Any], section: str, i: int, ctx: dict[str, Any]) -> int:
    c[section].append(copy.deepcopy(c[section][i]))
    return len(c[section]) - 1


def _model_with_target(c: dict[str, Any], section: str, i: int, ctx: dict[str, Any]) -> int:
    row = c[section][i]
    row["kind"] = "model"
    row["target"] = row["target"] or ctx["unknown"]
    return i


MUTATIONS: dict[str, Mutation] = {
    "kind_missing": _drop("kind"),
    "kind_function": _set("kind", "function"),
    "kind_Node": _set("kind", "Node"),
    "kind_edge": _set("kind", "edge"),
    "kind_empty": _set("kind", ""),
    "kind_null": _set("kind", None),
    "target_missing": _drop("target"),
    "target_newline": _append_line("target", "\nsecond line"),
    "target_carriage_return": _append_line("target", "\r"),
    "name_newline": _append_line("name", "\nsecond line"),
    "name_empty": _set("name", ""),
    "target_graph_input": _target_graph_input,
    "target_unknown": _target_unknown,
    "duplicate": _duplicate,
    "value_null": _set("value", None),
    "value_object": _set("value", {"a": 1, "b": [1, 2]}),
    "value_nested_array": _set("value", [[1, 2], 3]),
    "value_nan": _set("value", math.nan),
    "value_inf": _set("value", math.inf),
    "value_neg_inf": _set("value", -math.inf),
    "value_nan_in_array": _set("value", [1.0, math.nan]),
    "type_percentage": _set("type", "percentage"),
    "type_tensor": _set("type", "tensor"),
    "type_shape": _set("type", "shape"),
    "model_with_target": _model_with_target,
}


def _names_row(problems: list[Any], section: str, index: int) -> bool:
    where = f"{section}[{index}]"
    return any(p.code == CODE and where in p.where for p in problems)


def _context(model: onnx.ModelProto, shown: Shown, unknown: str) -> dict[str, Any]:
    graph_inputs = [v.name for v in model.graph.input if v.name not in shown.nodes]
    return {"graph_input": graph_inputs[0] if graph_inputs else unknown, "unknown": unknown}


# --- in-process, random traces ------------------------------------------------------------


@given(
    ir=trace_irs(nonfinite=False, newline_names=False, max_ops=16),
    granularity=st.sampled_from(GRANULARITIES),
    mutation=st.sampled_from(sorted(MUTATIONS)),
    section=st.sampled_from(("metadata", "metrics")),
    pick=st.integers(0, 10**6),
    unknown=st.text(min_size=1, max_size=12),
)
def test_every_dropped_row_is_reported(
    ir: TraceIR, granularity: str, mutation: str, section: str, pick: int, unknown: str
) -> None:
    note(f"ir: {ir_literal(ir)}")
    with tempfile.TemporaryDirectory() as d:
        ir, outcome = export_sidestepping(
            ir, Path(d), {"granularity": granularity, "show_buffers": BufferPolicy.ALWAYS}
        )
    assume(outcome.error is None and outcome.result is not None and outcome.result.companion_json)
    assert outcome.result is not None and outcome.result.companion_json is not None
    model = json_format.Parse(outcome.result.artifact_json, onnx.ModelProto())
    shown = shown_in_model(model)
    companion = strict_json(outcome.result.companion_json)
    assert list(companion_problems(companion, shown)) == []
    rows = companion[section]
    assume(rows)
    i = pick % len(rows)
    assume(unknown not in shown.nodes and unknown.split("\n", 1)[0] not in shown.nodes)
    ctx = _context(model, shown, unknown)
    broken = copy.deepcopy(companion)
    index = MUTATIONS[mutation](broken, section, i, ctx)
    note(f"{mutation} on {section}[{i}]: {broken[section][index]!r}")
    problems = list(companion_problems(broken, shown))
    assert _names_row(problems, section, index), [p.line() for p in problems]


# --- the command line, a fixed trace --------------------------------------------------------


@pytest.fixture(scope="module")
def fixed_export(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, dict[str, Any], onnx.ModelProto]:
    # depth=1 keeps block:1 a box (left to itself, the view opens a call holding most of so
    # small a model): its metadata rows are the node rows the mutations break.
    outcome = run_export(
        FIXED,
        tmp_path_factory.mktemp("fixed"),
        {"granularity": Granularity.MODULE, "show_buffers": BufferPolicy.MEANINGFUL, "depth": 1},
    )
    assert outcome.error is None and outcome.result is not None and outcome.result.companion_json is not None, (
        outcome.error
    )
    model = json_format.Parse(outcome.result.artifact_json, onnx.ModelProto())
    return outcome.result.artifact_json, strict_json(outcome.result.companion_json), model


def _node_row(companion: dict[str, Any], section: str) -> int:
    return next(i for i, r in enumerate(companion[section]) if r["kind"] == "node")


def _write(tmp_path: Path, artifact: str, companion: dict[str, Any]) -> tuple[Path, Path]:
    a = tmp_path / "fixed.onnx.json"
    c = tmp_path / "fixed.onnx.attachment.json"
    a.write_text(artifact, encoding="utf-8")
    c.write_text(json.dumps(companion, ensure_ascii=False, allow_nan=True), encoding="utf-8")
    return a, c


def test_cli_accepts_the_valid_pair(fixed_export: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    artifact, companion, _ = fixed_export
    a, c = _write(tmp_path, artifact, companion)
    assert cli.main(["validate", str(a), "--attachment", str(c)]) == cli.EXIT_OK
    assert capsys.readouterr().out.startswith("valid:")


@pytest.mark.parametrize("mutation", sorted(MUTATIONS))
@pytest.mark.parametrize("section", ["metadata", "metrics"])
def test_cli_reports_the_dropped_row(
    fixed_export: Any, mutation: str, section: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    artifact, companion, model = fixed_export
    shown = shown_in_model(model)
    broken = copy.deepcopy(companion)
    i = _node_row(broken, section)
    index = MUTATIONS[mutation](broken, section, i, _context(model, shown, "no such node"))
    assert _names_row(list(companion_problems(broken, shown)), section, index)
    a, c = _write(tmp_path, artifact, broken)
    assert cli.main(["validate", str(a), "--attachment", str(c)]) == cli.EXIT_INVALID
    lines = capsys.readouterr().out.splitlines()
    assert any(line.startswith(CODE) and f"{section}[{index}]" in line for line in lines), lines


def test_cli_subprocess_exit_code(fixed_export: Any, tmp_path: Path) -> None:
    """The real entry point (``python -m tlnetron.cli``): exit 1 and the code first on the line."""
    artifact, companion, model = fixed_export
    broken = copy.deepcopy(companion)
    i = _node_row(broken, "metrics")
    broken["metrics"][i]["target"] += "\nsecond line"
    a, c = _write(tmp_path, artifact, broken)
    proc = subprocess.run(
        [sys.executable, "-m", "tlnetron.cli", "validate", str(a), "--attachment", str(c)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert any(line.startswith(CODE) and f"metrics[{i}]" in line for line in proc.stdout.splitlines()), proc.stdout

"""Diffing two captures: ``tlnetron.export(subject, path, baseline=reference)``.

Spec ("Diffing two captures"): the facts come from TorchLens' own guarded differential
(``torchlens.differential.diff_report(subject, reference)`` in the installed TorchLens).
Each exported node whose ops settled into a diff row carries ``torchlens.diff.*`` rows in
its node metadata and in the companion (status, max_abs_delta, reference_label, verdict,
detail); a module-call or rolled multi-pass node carries ``row_counts`` over its ops and
the largest delta among them; a node without a settled row carries nothing (never a
zero). The model-level ``torchlens.baseline`` holds the JSON summary. A string
``baseline=`` is recorded verbatim, with no per-node facts.

Every expectation below is recomputed from TorchLens' own report and the trace (node
names: a single-pass layer is named by its layer label, otherwise ``label:pass``), never
from tlnetron's internals. Formatting follows ``tlnetron/diff.py``: a delta is
``f"{d:.6g}"``; an aggregate is ``"<status> <n>, ... (over <N> op rows inside)"`` in the
closed vocabulary order, the delta ``"<max> (largest among the ops inside)"``.

Status recipes (shared/reference/torchlens-trace-api.md §8): zero = two traces of the same
model and input; changed = a deepcopy with perturbed weights; added / removed = the model
plus an extra ``y * 2`` (arguments swapped for removed); unreachable = the subject captured
with ``structure_only=True``; unresolved = a loop run 5 times against the same loop run 4
times. ``excluded_machinery`` cannot be produced with the installed TorchLens: it needs an
engine-inserted op (layer_type ``interventionreplacement``), and neither rerun nor replay
``do()`` interventions insert one (the report shows ``changed``). So it is only checked as
a zero count in every summary.
"""

from __future__ import annotations

import copy
import json
import warnings
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import onnx
import pytest
import torch
import torchlens
import torchlens.differential
from google.protobuf import json_format
from jsonschema import Draft7Validator  # type: ignore[import-untyped]
from torch import nn

import tlnetron
from tlnetron import TlnetronError, TlnetronWarning
from tlnetron._generated.vocab import DIFF_STATUS, GRANULARITY, DiffStatus, Domain, Granularity, NodeMeta
from tlnetron.words.model import unwrapped

ROOT = Path(__file__).resolve().parent.parent
BASELINE_SCHEMA = json.loads((ROOT / "schema" / "baseline-summary.schema.json").read_text(encoding="utf-8"))
VOCAB = DIFF_STATUS  # TorchLens' closed status vocabulary, in the schema's order
P = "torchlens.diff."
STATUS, DELTA, REF, VERDICT, DETAIL, COUNTS = (
    NodeMeta.DIFF_STATUS,
    NodeMeta.DIFF_MAX_ABS_DELTA,
    NodeMeta.DIFF_REFERENCE_LABEL,
    NodeMeta.DIFF_VERDICT,
    NodeMeta.DIFF_DETAIL,
    NodeMeta.DIFF_ROW_COUNTS,
)

# ------------------------------------------------------------------ models


class Block(nn.Module):
    """Linear -> ReLU -> Linear (a three-op module call)."""

    def __init__(self, dim: int = 6) -> None:
        super().__init__()
        self.fc1 = nn.Linear(dim, 2 * dim)
        self.act = nn.ReLU()
        self.fc2 = nn.Linear(2 * dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out: torch.Tensor = self.fc2(self.act(self.fc1(x)))
        return out


class Net(nn.Module):
    """A stem, two nested blocks, a residual add at the root and a head.

    ``extra=True`` inserts ``y * 2`` after the stem (a Python flag, not a tensor branch,
    so the structure-only capture accepts it).
    """

    def __init__(self, extra: bool = False) -> None:
        super().__init__()
        self.extra = extra
        self.stem = nn.Linear(6, 6)
        self.body = nn.Sequential(Block(), Block())
        self.head = nn.Sequential(nn.Linear(6, 3), nn.Tanh())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.stem(x)
        if self.extra:
            y = y * 2
        out: torch.Tensor = self.head(self.body(y) + y)
        return out


class Loop(nn.Module):
    """One ``cell`` (Linear + Tanh) applied ``steps`` times in a Python loop."""

    def __init__(self, steps: int) -> None:
        super().__init__()
        self.steps = steps
        self.cell = nn.Sequential(nn.Linear(6, 6), nn.Tanh())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for _ in range(self.steps):
            x = self.cell(x)
        return x


class DupOut(nn.Module):
    """Returns one value twice and its input: two outputs need their own output nodes."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(6, 6)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        y = self.lin(x)
        return y, y, x


def _trace(model: nn.Module, x: torch.Tensor, **kwargs: Any) -> torchlens.Trace:
    log: torchlens.Trace = torchlens.trace(model, x, **kwargs)
    return log


def _net(extra: bool = False) -> Net:
    torch.manual_seed(0)
    return Net(extra=extra).eval()


def _perturbed(model: nn.Module, param: Callable[[Any], torch.Tensor]) -> nn.Module:
    other = copy.deepcopy(model)
    with torch.no_grad():
        param(other).add_(0.25)
    return other


@dataclass(frozen=True)
class Pair:
    subject: torchlens.Trace
    reference: torchlens.Trace
    status: str
    """The status the recipe exists to produce."""


def _build_pairs() -> dict[str, Pair]:
    torch.manual_seed(1)
    x = torch.randn(2, 6)
    net = _net()
    net_extra = Net(extra=True).eval()
    net_extra.load_state_dict(net.state_dict())
    base = _trace(net, x)
    extra = _trace(net_extra, x)
    loop5 = Loop(5).eval()
    loop4 = Loop(4).eval()
    loop4.load_state_dict(loop5.state_dict())
    loop5_log = _trace(loop5, x)
    structure_only = torchlens.options.CaptureOptions(structure_only=True)
    return {
        "zero": Pair(_trace(net, x), base, DiffStatus.ZERO),
        "changed": Pair(_trace(_perturbed(net, lambda m: m.body[1].fc1.weight), x), base, DiffStatus.CHANGED),
        "added": Pair(extra, base, DiffStatus.ADDED),
        "removed": Pair(base, extra, DiffStatus.REMOVED),
        "unreachable": Pair(_trace(net, x, capture=structure_only), base, DiffStatus.UNREACHABLE),
        "unresolved": Pair(loop5_log, _trace(loop4, x), DiffStatus.UNRESOLVED),
        # Multi-pass rolled nodes with real deltas (largest among the passes).
        "changed_loop": Pair(_trace(_perturbed(loop5, lambda m: m.cell[0].weight), x), loop5_log, DiffStatus.CHANGED),
        # Two unrelated models: TorchLens does not refuse them (see test_refusals_*).
        "unrelated": Pair(base, loop5_log, DiffStatus.REMOVED),
    }


PAIR_NAMES = ("zero", "changed", "added", "removed", "unreachable", "unresolved", "changed_loop", "unrelated")


@pytest.fixture(scope="module")
def pairs() -> dict[str, Pair]:
    return _build_pairs()


# ------------------------------------------------------------------ exports, read back


@dataclass
class Exported:
    pair: Pair
    report: torchlens.differential.DifferentialReport
    granularity: str
    model: dict[str, Any]
    companion: dict[str, Any]
    result: tlnetron.ExportResult


def _export(log: torchlens.Trace, path: Path, **kwargs: Any) -> tlnetron.ExportResult:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TlnetronWarning)
        return tlnetron.export(log, path, **kwargs)


@pytest.fixture(scope="module")
def exported(pairs: dict[str, Pair], tmp_path_factory: pytest.TempPathFactory) -> Callable[[str, str], Exported]:
    cache: dict[tuple[str, str], Exported] = {}
    out = tmp_path_factory.mktemp("diff")

    def get(name: str, granularity: str) -> Exported:
        key = (name, granularity)
        if key not in cache:
            pair = pairs[name]
            result = _export(
                pair.subject, out / f"{name}-{granularity}.onnx.json", granularity=granularity, baseline=pair.reference
            )
            assert result.artifact is not None and result.companion is not None
            model = json.loads(result.artifact.read_text(encoding="utf-8"))
            companion = json.loads(result.companion.read_text(encoding="utf-8"))
            report = torchlens.differential.diff_report(pair.subject, pair.reference)
            cache[key] = Exported(pair, report, granularity, model, companion, result)
        return cache[key]

    return get


def all_nodes(model: dict[str, Any]) -> Iterator[dict[str, Any]]:
    yield from model["graph"].get("node", [])
    for f in model.get("functions", []):
        yield from f.get("node", [])


def meta_of(node: dict[str, Any]) -> dict[str, str]:
    rows = node.get("metadataProps", [])
    out = {p["key"]: p["value"] for p in rows}
    assert len(out) == len(rows), f"node {node['name']!r} repeats a metadata key"
    return out


def diff_meta(node: dict[str, Any]) -> dict[str, str]:
    return {k: v for k, v in meta_of(node).items() if k.startswith(P)}


def model_meta(model: dict[str, Any]) -> dict[str, str]:
    return {p["key"]: p["value"] for p in model.get("metadataProps", [])}


# ------------------------------------------------------------------ expectations, independently


def node_name_of(log: torchlens.Trace) -> dict[str, str]:
    """op label -> exported node name (layer label when the layer has one pass)."""
    passes = Counter(op.layer_label for op in log.ops)
    return {op.label: (op.layer_label if passes[op.layer_label] == 1 else op.label) for op in log.ops}


def row_facts(row: Any) -> dict[str, str]:
    out = {STATUS: row.status}
    if row.max_abs_delta is not None:
        out[DELTA] = f"{row.max_abs_delta:.6g}"
    if row.reference_label:
        out[REF] = row.reference_label
    if row.verdict:
        out[VERDICT] = row.verdict
    if row.detail:
        out[DETAIL] = row.detail
    return out


def aggregate_facts(rows: list[Any]) -> dict[str, str]:
    if not rows:
        return {}
    counts = Counter(r.status for r in rows)
    text = ", ".join(f"{s} {counts[s]}" for s in VOCAB if counts[s])
    out = {COUNTS: f"{text} (over {len(rows)} op rows inside)"}
    deltas = [r.max_abs_delta for r in rows if r.max_abs_delta is not None]
    if deltas:
        out[DELTA] = f"{max(deltas):.6g} (largest among the ops inside)"
    return out


def expected_facts(e: Exported, node: dict[str, Any]) -> dict[str, str]:
    """What ``node`` must carry, from TorchLens' rows and the trace alone."""
    log = e.pair.subject
    rows_by_label: dict[str, list[Any]] = {}
    for row in e.report.rows:
        if row.subject_label:
            rows_by_label.setdefault(log.ops[row.subject_label].label, []).append(row)
    name = node["name"]
    if node["domain"] == Domain.MODULE:
        # A module call: every op run inside that call (its call stack names it).
        inside = [op.label for op in log.ops if name in tuple(str(c) for c in (op.module_call_stack or ()))]
        assert inside, f"module-call node {name!r} matches no call of the trace"
        return aggregate_facts([r for label in inside for r in rows_by_label.get(label, [])])
    if e.granularity == Granularity.ROLLED:
        ops = [op for op in log.ops if op.layer_label == name]
        assert ops, f"rolled node {name!r} is not a layer of the trace"
        rows = [r for op in ops for r in rows_by_label.get(op.label, [])]
        if len(ops) > 1:
            return aggregate_facts(rows)
    else:
        by_name = {v: k for k, v in node_name_of(log).items()}
        assert name in by_name, f"op node {name!r} is not an op of the trace"
        rows = rows_by_label.get(by_name[name], [])
    if len(rows) == 1:
        return row_facts(rows[0])
    return aggregate_facts(rows)


# ------------------------------------------------------------------ the recipes hold


def test_recipes_produce_every_status_the_installed_torchlens_can(pairs: dict[str, Pair]) -> None:
    seen: set[str] = set()
    for name in PAIR_NAMES:
        pair = pairs[name]
        report = torchlens.differential.diff_report(pair.subject, pair.reference)
        statuses = {r.status for r in report.rows}
        assert pair.status in statuses, (name, report.counts)
        assert statuses <= set(VOCAB)
        seen |= statuses
    # excluded_machinery cannot be produced (module docstring); every other status is.
    assert seen == set(VOCAB) - {DiffStatus.EXCLUDED_MACHINERY}


# ------------------------------------------------------------------ per-node facts


@pytest.mark.parametrize("granularity", GRANULARITY)
@pytest.mark.parametrize("name", PAIR_NAMES)
def test_node_facts_equal_torchlens_rows(exported: Callable[[str, str], Exported], name: str, granularity: str) -> None:
    e = exported(name, granularity)
    carrying = 0
    for node in all_nodes(e.model):
        want = expected_facts(e, node)
        got = diff_meta(node)
        # (a) a settled op carries its own row; (b) a call / rolled multi-pass node the
        # aggregate; (c) a node with no settled row carries no torchlens.diff.* key at all.
        assert got == want, f"{name}/{granularity}: node {node['name']!r}"
        carrying += bool(got)
    assert carrying, f"{name}/{granularity}: no node carries diff facts"


@pytest.mark.parametrize("granularity", GRANULARITY)
@pytest.mark.parametrize("name", PAIR_NAMES)
def test_every_drawn_subject_row_lands_on_a_node(
    exported: Callable[[str, str], Exported], name: str, granularity: str
) -> None:
    """No settled row of a drawn op is dropped (inputs / outputs are graph edges, not nodes)."""
    e = exported(name, granularity)
    log = e.pair.subject
    names = node_name_of(log)
    drawn = {n["name"] for n in all_nodes(e.model)}
    for row in e.report.rows:
        if not row.subject_label:
            continue
        op = log.ops[row.subject_label]
        if op.is_input or op.is_output:
            continue
        where = op.layer_label if granularity == Granularity.ROLLED else names[op.label]
        assert where in drawn, f"{name}/{granularity}: row of {row.subject_label} has no node"
        node = next(n for n in all_nodes(e.model) if n["name"] == where)
        assert diff_meta(node), f"{name}/{granularity}: {where} carries no diff facts"


@pytest.mark.parametrize("granularity", GRANULARITY)
@pytest.mark.parametrize("name", PAIR_NAMES)
def test_companion_repeats_the_node_facts(
    exported: Callable[[str, str], Exported], name: str, granularity: str
) -> None:
    e = exported(name, granularity)
    by_target: dict[str, dict[str, Any]] = {}
    for row in e.companion["metadata"]:
        if row["name"].startswith(P):
            assert row["kind"] == "node", row
            slot = by_target.setdefault(row["target"], {})
            assert row["name"] not in slot, f"duplicate companion row {row}"
            slot[row["name"]] = row["value"]
    assert not [r for r in e.companion["metrics"] if r["name"].startswith(P)], (
        "diff facts belong in the metadata section"
    )
    want = {n["name"]: diff_meta(n) for n in all_nodes(e.model) if diff_meta(n)}
    assert by_target == want


@pytest.mark.parametrize("granularity", GRANULARITY)
def test_module_and_rolled_aggregates_are_exercised(exported: Callable[[str, str], Exported], granularity: str) -> None:
    """Guard against a vacuous matrix: aggregates (with a real largest delta) do occur."""
    if granularity == Granularity.OP:
        e = exported("changed", granularity)
        assert all(COUNTS not in diff_meta(n) for n in all_nodes(e.model))
        return
    e = exported("changed" if granularity == Granularity.MODULE else "changed_loop", granularity)
    aggregated = [diff_meta(n) for n in all_nodes(e.model) if COUNTS in diff_meta(n)]
    assert aggregated
    assert any(DELTA in m and not m[DELTA].startswith("0 ") for m in aggregated)
    assert all(STATUS not in m for m in aggregated), "an aggregate node has no single status"


@pytest.mark.parametrize("granularity", GRANULARITY)
@pytest.mark.parametrize("name", PAIR_NAMES)
def test_artifact_passes_the_checker(exported: Callable[[str, str], Exported], name: str, granularity: str) -> None:
    e = exported(name, granularity)
    proto = json_format.Parse(e.result.artifact_json, onnx.ModelProto())
    onnx.checker.check_model(proto, full_check=True)


# ------------------------------------------------------------------ the model-level summary


@pytest.mark.parametrize("granularity", GRANULARITY)
@pytest.mark.parametrize("name", PAIR_NAMES)
def test_baseline_summary(exported: Callable[[str, str], Exported], name: str, granularity: str) -> None:
    e = exported(name, granularity)
    meta = model_meta(e.model)
    assert meta["torchlens.baseline_kind"] == "trace"
    summary = json.loads(meta["torchlens.baseline"])
    errors = [
        f"{'/'.join(map(str, x.absolute_path))}: {x.message}"
        for x in Draft7Validator(BASELINE_SCHEMA).iter_errors(summary)
    ]
    assert errors == []
    assert summary["row_counts"] == {s: int(e.report.counts.get(s, 0)) for s in VOCAB}
    assert summary["row_counts"] == {s: len(e.report.rows_with_status(s)) for s in VOCAB}
    removed = [str(r.reference_label) for r in e.report.rows if r.status == DiffStatus.REMOVED]
    assert sorted(summary["removed_labels"]) == sorted(removed)
    direction = summary["direction"]
    assert set(direction) == {"subject", "reference"}
    assert direction["subject"] and direction["reference"] and direction["subject"] != direction["reference"]


@pytest.mark.parametrize("granularity", GRANULARITY)
@pytest.mark.parametrize("name", PAIR_NAMES)
def test_the_diff_is_said_in_words(exported: Callable[[str, str], Exported], name: str, granularity: str) -> None:
    """Netron cuts row names to ~16 characters (``torchlens.diff.ma…``): the descriptions,
    shown at full width, say that a diff happened and what each node's facts are."""
    e = exported(name, granularity)
    summary = json.loads(model_meta(e.model)["torchlens.baseline"])
    description = unwrapped(e.model["docString"])
    rows = sum(summary["row_counts"].values())
    assert f"Compared with {summary['direction']['reference']}" in description
    assert f"{rows:,} diff row" in description
    for status, n in summary["row_counts"].items():
        assert (f"{n:,} {status}" in description) is (n > 0), status
    assert "need not add up" in description  # why rows and nodes differ
    said = 0
    for node in all_nodes(e.model):
        facts = diff_meta(node)
        doc = node.get("docString", "")
        assert ("Diff against the baseline" in doc) is bool(facts), node["name"]
        if facts:
            said += 1
            status = facts.get(STATUS)
            if status is not None:
                assert f"Diff against the baseline: {status}" in doc
            else:
                assert f"over the ops inside: {facts[COUNTS]}" in doc
            if DELTA in facts:
                assert f"largest absolute difference {facts[DELTA]}" in doc
    assert said >= 1


# ------------------------------------------------------------------ a string baseline


@pytest.mark.parametrize("granularity", GRANULARITY)
def test_string_baseline_is_recorded_verbatim(pairs: dict[str, Pair], tmp_path: Path, granularity: str) -> None:
    result = _export(
        pairs["changed"].subject, tmp_path / "m.onnx.json", granularity=granularity, baseline="run-2026-11-29"
    )
    model = json.loads(result.artifact_json)
    meta = model_meta(model)
    assert meta["torchlens.baseline"] == "run-2026-11-29"
    assert meta["torchlens.baseline_kind"] == "identifier"
    assert "identifier 'run-2026-11-29' (no per-node comparison)" in unwrapped(model["docString"])
    assert [n["name"] for n in all_nodes(model) if diff_meta(n)] == []
    assert result.companion_json is not None
    companion = json.loads(result.companion_json)
    assert [r for r in (*companion["metadata"], *companion["metrics"]) if r["name"].startswith(P)] == []


# ------------------------------------------------------------------ refusals


def _refused(log: torchlens.Trace, tmp_path: Path, baseline: Any) -> TlnetronError:
    with pytest.raises(TlnetronError) as info:
        _export(log, tmp_path / "m.onnx.json", baseline=baseline)
    assert list(tmp_path.iterdir()) == [], "a refusal wrote something"
    return info.value


def test_refuses_the_subject_as_its_own_baseline(pairs: dict[str, Pair], tmp_path: Path) -> None:
    log = pairs["zero"].subject
    assert _refused(log, tmp_path, log).code == "invalid_baseline"


@pytest.mark.parametrize(
    "baseline", [5, {"rows": []}, {}, ["run"], b"run-1"], ids=["int", "dict", "empty-dict", "list", "bytes"]
)
def test_refuses_a_baseline_that_is_neither_trace_nor_string(
    pairs: dict[str, Pair], tmp_path: Path, baseline: Any
) -> None:
    assert _refused(pairs["zero"].subject, tmp_path, baseline).code == "invalid_baseline"


def test_refuses_an_empty_string_baseline(pairs: dict[str, Pair], tmp_path: Path) -> None:
    assert _refused(pairs["zero"].subject, tmp_path, "").code == "invalid_baseline"


def test_refusals_unrelated_models_are_not_refused_by_torchlens(pairs: dict[str, Pair]) -> None:
    """Looking for a real pair TorchLens refuses: two unrelated models are diffed (rows of
    added / removed / unreachable), not refused. The only refusals in 2.36 are the same
    object on both sides (tlnetron says invalid_baseline first) and
    ``site_key_unavailable`` for a capture predating structural site keys, which the
    installed TorchLens cannot produce. Hence the monkeypatched refusal below."""
    pair = pairs["unrelated"]
    report = torchlens.differential.diff_report(pair.subject, pair.reference)
    assert report.rows
    with pytest.raises(Exception) as info:
        torchlens.differential.diff_report(pair.subject, pair.subject)
    assert "SAME capture" in str(info.value)


def test_refuses_a_pair_torchlens_refuses(
    pairs: dict[str, Pair], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # No real pair of traces is refused by the installed TorchLens (see the test above), so
    # its differential is made to raise the refusal it documents for keyless captures.
    from torchlens.errors import InvalidArgumentError

    def refuse(subject: Any, reference: Any) -> Any:
        raise InvalidArgumentError(
            "capture predates structural site keys", code="site_key_unavailable", remedy="re-capture"
        )

    monkeypatch.setattr(torchlens.differential, "diff_report", refuse)
    pair = pairs["changed"]
    err = _refused(pair.subject, tmp_path, pair.reference)
    assert err.code == "baseline_refused"
    assert "site keys" in str(err)


# ------------------------------------------------------------------ output pseudo-nodes


@pytest.mark.parametrize("granularity", GRANULARITY)
def test_output_pseudo_nodes_carry_their_rows(tmp_path: Path, granularity: str) -> None:
    torch.manual_seed(0)
    model = DupOut().eval()
    x = torch.randn(2, 6)
    subject, reference = _trace(model, x), _trace(model, x)
    result = _export(subject, tmp_path / "m.onnx.json", granularity=granularity, baseline=reference)
    report = torchlens.differential.diff_report(subject, reference)
    rows = {subject.ops[r.subject_label].layer_label: r for r in report.rows if r.subject_label}
    outputs = [n for n in all_nodes(json.loads(result.artifact_json)) if n["opType"] == "output"]
    assert outputs, "the model needs output pseudo-nodes"
    for node in outputs:
        assert diff_meta(node) == row_facts(rows[node["name"]]), node["name"]

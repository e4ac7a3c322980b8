"""words_*: every worded fact comes from the generated metric table (no torch, no views).

Expected texts are written out from the spec's wording; the last tests change the table
itself and see the change everywhere a fact shows, which is what makes a new metric "a
schema entry plus a reader line".
"""

from __future__ import annotations

import pytest

from tlnetron.words import diff as words_diff
from tlnetron.words import facts as words_facts
from tlnetron.words.node import word_node
from tlnetron._generated.vocab import METRICS, PASSES_ROW, CompanionRow, InclusiveWording, MetaKey, NodeMeta
from tlnetron.ir.facts import DiffFacts, Facts
from tlnetron.ir.trace import DiffRow, TensorStats
from tlnetron.ir.drawing import PNode

OP = Facts(duration_s=2.5e-6, flops=1_234_567, nbytes=3072, op_count=1)
PASSES = Facts(duration_s=3e-3, flops=900, nbytes=None, op_count=3, passes=3)
CALL = Facts(duration_s=0.5, flops=2_000_000_000, nbytes=1 << 20, op_count=1234, inclusive=True, unknown_flops=2)
TOTALS = Facts(duration_s=2.0, flops=8_000_000_000, nbytes=None, op_count=5000)


def test_an_ops_own_facts() -> None:
    assert words_facts.fact_rows(OP) == [
        (NodeMeta.OBSERVED_DURATION, "2.5 µs observed wall time"),
        (NodeMeta.ESTIMATED_FLOPS, "1,234,567 FLOPs (1.23 MFLOPs) (estimate)"),
        (NodeMeta.CAPTURED_BYTES, "3,072 B (3 KiB) captured output tensor"),
    ]
    assert words_facts.companion_metric_rows(OP) == [
        (CompanionRow.OBSERVED_US, 2.5),
        (CompanionRow.ESTIMATED_FLOPS, 1_234_567),
        (CompanionRow.CAPTURED_BYTES, 3072),
    ]
    assert words_facts.share_rows(OP, TOTALS) == []  # shares are for module calls only


def test_a_rolled_layers_passes() -> None:
    assert words_facts.fact_rows(PASSES) == [
        (NodeMeta.OBSERVED_DURATION, "3 ms observed over 3 passes (1 ms per pass)"),
        (NodeMeta.ESTIMATED_FLOPS, "900 FLOPs estimated, summed over 3 passes"),
    ]
    assert words_facts.companion_metric_rows(PASSES) == [
        (CompanionRow.ALL_PASS_US, 3000.0),
        (CompanionRow.PER_PASS_US, 1000.0),
        (CompanionRow.ALL_PASS_FLOPS, 900),
        (PASSES_ROW, 3),
    ]


def test_a_module_calls_inclusive_totals() -> None:
    assert words_facts.fact_rows(CALL) == [
        (NodeMeta.INCLUSIVE_TIME, "500 ms observed, inclusive of every op inside"),
        (
            NodeMeta.INCLUSIVE_FLOPS,
            "2,000,000,000 FLOPs (2 GFLOPs) estimated, inclusive; 2 ops inside have no FLOP rule",
        ),
        (NodeMeta.INCLUSIVE_BYTES, "1,048,576 B (1 MiB) of captured tensors, inclusive"),
        (NodeMeta.INCLUSIVE_OPS, "1,234 ops, inclusive"),
    ]
    assert words_facts.share_rows(CALL, TOTALS) == [
        (CompanionRow.SHARE_OF_TIME, "25.00 %"),
        (CompanionRow.SHARE_OF_FLOPS, "25.00 %"),
    ]
    assert words_facts.function_doc_line(CALL) == (
        "Inclusive of every op inside: 500 ms observed; 2,000,000,000 FLOPs (2 GFLOPs) estimated; "
        "1,048,576 B (1 MiB) captured; 1234 ops."
    )
    assert words_facts.function_doc_line(Facts(inclusive=True)) is None
    # A call with no op inside says nothing of its op count (absent, never 0).
    assert words_facts.fact_rows(Facts(op_count=0, inclusive=True)) == []


def test_model_totals() -> None:
    assert words_facts.total_meta(TOTALS) == [
        (MetaKey.OBSERVED_DURATION_TOTAL, "2 s (observed op wall times, summed)"),
        (MetaKey.ESTIMATED_FLOPS_TOTAL, "8,000,000,000 FLOPs (8 GFLOPs) (estimate, summed over ops with a FLOP rule)"),
    ]
    assert words_facts.total_rows(TOTALS) == [
        (CompanionRow.SUM_OBSERVED_US, 2_000_000.0),
        (CompanionRow.SUM_FLOPS_EST, 8_000_000_000),
    ]


def test_a_nodes_rows_are_its_facts_and_own_rows_sorted_then_its_diff() -> None:
    node = PNode(
        "relu_1_1", "relu", "ai.torchlens.lossy", "op", ("x",), ("relu_1_1",),
        metadata=((NodeMeta.INPUT_NAMES, "['input']"),), facts=OP,
        diff=DiffFacts(rows=(DiffRow("changed", "relu_1_1", "relu_1_1", 0.25, None, None),), inside=False),
    )  # fmt: skip
    said = word_node(node)
    assert said.metadata == (
        (NodeMeta.CAPTURED_BYTES, "3,072 B (3 KiB) captured output tensor"),
        (NodeMeta.ESTIMATED_FLOPS, "1,234,567 FLOPs (1.23 MFLOPs) (estimate)"),
        (NodeMeta.INPUT_NAMES, "['input']"),
        (NodeMeta.OBSERVED_DURATION, "2.5 µs observed wall time"),
        (NodeMeta.DIFF_STATUS, "changed"),
        (NodeMeta.DIFF_MAX_ABS_DELTA, "0.25"),
        (NodeMeta.DIFF_REFERENCE_LABEL, "relu_1_1"),
    )
    assert (
        said.doc == "\nDiff against the baseline: changed (the baseline's relu_1_1); largest absolute difference 0.25."
    )
    # worded once: the companion's diff and metric rows are the same words
    assert said.diff == said.metadata[-3:] and said.metrics == tuple(words_facts.companion_metric_rows(OP))


def test_diff_facts_of_the_ops_inside_a_box() -> None:
    rows = (
        DiffRow("changed", "a", "a", 1e-7, "within tolerance", None),
        DiffRow("zero", "b", "b", None, None, None),
        DiffRow("changed", "c", "c", 0.5, None, "shape [2] vs [3]"),
    )
    inside = DiffFacts(rows=rows, inside=True)
    assert words_diff.diff_rows(inside) == (
        (NodeMeta.DIFF_ROW_COUNTS, "zero 1, changed 2 (over 3 op rows inside)"),
        (NodeMeta.DIFF_MAX_ABS_DELTA, "0.5 (largest among the ops inside)"),
    )
    assert words_diff.diff_sentence(dict(words_diff.diff_rows(inside))) == (
        "Diff against the baseline, over the ops inside: zero 1, changed 2 (over 3 op rows inside); "
        "largest absolute difference 0.5 (largest among the ops inside)."
    )
    one = DiffFacts(rows=(rows[0],), inside=False)
    assert words_diff.diff_rows(one) == (
        (NodeMeta.DIFF_STATUS, "changed"),
        (NodeMeta.DIFF_MAX_ABS_DELTA, "1e-07"),
        (NodeMeta.DIFF_REFERENCE_LABEL, "a"),
        (NodeMeta.DIFF_VERDICT, "within tolerance"),
    )


def test_activation_statistics_rows() -> None:
    stats = TensorStats(numel=10, nan_count=1, zero_count=4, min=-0.1, max=3, mean=0.30000001192092896, std=None)
    assert words_facts.stats_rows(stats) == [
        (CompanionRow.MIN, -0.1),
        (CompanionRow.MAX, 3),
        (CompanionRow.MEAN, 0.3),
        (CompanionRow.NAN_COUNT, 1),
        (CompanionRow.INF_COUNT, 0),
        (CompanionRow.ZERO_FRACTION, 0.4),
    ]


def test_the_wording_is_the_tables(monkeypatch: pytest.MonkeyPatch) -> None:
    """Rewording a metric in the table rewords it on nodes, in function docs and companion rows."""
    duration = METRICS[0]
    assert duration.fact == "duration_s"
    assert isinstance(duration.inclusive, InclusiveWording)
    reworded = duration._replace(
        op=duration.op._replace(text="took {value}") if duration.op else None,
        inclusive=duration.inclusive._replace(function_doc="{value} of wall time", rows=("Σ inside µs",)),
    )
    table = tuple((reworded if m is duration else m, *rest) for m, *rest in words_facts._TABLE)
    monkeypatch.setattr(words_facts, "_TABLE", table)
    monkeypatch.setattr(words_facts, "_SPECS", words_facts.compile_table(table))
    assert words_facts.fact_rows(Facts(duration_s=1e-3))[0] == (NodeMeta.OBSERVED_DURATION, "took 1 ms")
    assert (
        words_facts.function_doc_line(Facts(duration_s=1e-3, inclusive=True))
        == "Inclusive of every op inside: 1 ms of wall time."
    )
    assert words_facts.companion_metric_rows(Facts(duration_s=1e-3, inclusive=True)) == [("Σ inside µs", 1000.0)]


def test_a_new_metric_needs_only_a_table_row(monkeypatch: pytest.MonkeyPatch) -> None:
    """A metric the table gains shows wherever its scope says, with no code of its own
    (here an op count worded on single ops too, borrowing existing row names)."""
    ops = next(m for m in METRICS if m.fact == "op_count")
    assert ops.op is None
    op_scope = METRICS[0].op._replace(text="{value} op(s) ran", rows=(CompanionRow.EXPORTED_NODES,))  # type: ignore[union-attr]
    table = (*words_facts._TABLE[:-1], (ops._replace(op=op_scope), *words_facts._TABLE[-1][1:]))
    monkeypatch.setattr(words_facts, "_TABLE", table)
    monkeypatch.setattr(words_facts, "_SPECS", words_facts.compile_table(table))
    assert (NodeMeta.OBSERVED_DURATION, "1 op(s) ran") in words_facts.fact_rows(Facts(op_count=1))
    assert words_facts.companion_metric_rows(Facts(op_count=1)) == [(CompanionRow.EXPORTED_NODES, 1)]
    node = PNode("n", "op", "ai.torchlens.lossy", "op", (), ("n",), facts=Facts(op_count=1))
    assert word_node(node).metadata == ((NodeMeta.OBSERVED_DURATION, "1 op(s) ran"),)

"""Every worded fact, from one table: views hand over typed :class:`~tlnetron.facts.Facts`
(an op's own, a rolled layer's passes summed, a module call's inclusive totals) and this
module words them wherever they show: node metadata rows, function descriptions,
companion metric rows, and the model's totals (metadata and companion).

The wording is :data:`~tlnetron._generated.vocab.METRICS`, generated from the
``x-tlnetron-metrics`` table of ``schema/vocabularies.schema.json``: per metric, the unit
formatter, and per scope (op, passes, inclusive, total) the row key, the sentence and the
companion rows. Adding a metric is a row of that table (codegen gives ``Facts`` its field,
which :mod:`tlnetron.facts` takes and sums), its field on ``OpIR`` and the reader's line; no
wording code.
"""

from __future__ import annotations

import string
from collections.abc import Callable, Iterable
from typing import Any

from ._generated.vocab import (
    NODE_TEXT_MAX_LENGTH,
    DIFF_STATUS,
    METRICS,
    PASSES_ROW,
    BaselineKind,
    CompanionRow,
    InclusiveWording,
    MetaKey,
    Metric,
    NodeAttr,
    NodeMeta,
    NodeWording,
)
from .facts import DiffFacts, Facts
from .ir import DiffRow, ModuleCallIR, OpIR, TensorStats
from .runs import RunIR
from .perf import export_memo
from .projection import DepthChoice, Opening, PNode, Projection, shape_text

__all__ = [
    "DISCLAIMER",
    "HEADER_CHARS",
    "UNTYPED_PASSES",
    "bytes_text",
    "call_node_doc",
    "companion_metric_rows",
    "count_text",
    "depth_reason",
    "diff_rows",
    "diff_sentence",
    "duration_text",
    "duration_us",
    "fact_rows",
    "flops_text",
    "function_doc",
    "function_doc_line",
    "graph_doc",
    "hidden_text",
    "model_description",
    "node_doc",
    "one_line",
    "op_doc",
    "params_text",
    "node_rows",
    "run_doc",
    "run_header",
    "run_node_doc",
    "run_span",
    "shortened",
    "full_texts",
    "share_rows",
    "stats_rows",
    "total_meta",
    "recurrence_text",
    "total_rows",
    "variants_text",
]

def one_line(text: str) -> str:
    """Text for a single-line field: line breaks shown as ``\\n`` instead of breaking rows,
    and :func:`shortened` past the schema's limit."""
    if "\n" in text or "\r" in text:
        text = text.replace("\r\n", "\\n").replace("\n", "\\n").replace("\r", "\\r")
    return shortened(text) if len(text) > NODE_TEXT_MAX_LENGTH else text


def shortened(text: str, limit: int = NODE_TEXT_MAX_LENGTH) -> str:
    """``text`` cut in the middle to ``limit`` characters, saying how much was left out and
    where the whole of it is (the node's description, see :func:`full_texts`)."""
    if len(text) <= limit:
        return text
    marker = f" …[{len(text):,} characters in all; the whole text is in the description]… "
    keep = limit - len(marker)
    return text[: keep - keep // 3] + marker + text[len(text) - keep // 3 :]


def full_texts(fields: Iterable[tuple[str, str | None]]) -> str:
    """Description lines giving the whole of each field too long for its attribute, or ""."""
    return "".join(f"\n{name} (whole): {text}" for name, text in fields if text and len(text) > NODE_TEXT_MAX_LENGTH)


def params_text(params: tuple[tuple[str, tuple[int, ...]], ...]) -> str | None:
    """An op's parameters, ``weight 768×768, bias 768`` (None: it has none)."""
    if not params:
        return None
    return ", ".join(f"{one_line(n)} {'×'.join(str(d) for d in s) if s else 'scalar'}" for n, s in params)


def op_doc(op: OpIR, passes: int | None, params: str | None) -> str:
    """An op node's description (``passes``: a rolled layer's node), with the whole of every
    field too long for its attribute."""
    name = op.name
    if passes is None:
        doc = f"TorchLens label: {name} (log[{name!r}] finds it)"
    else:
        doc = f"TorchLens layer: {name}, {passes} pass(es) (log[{name!r}] finds it)"
    if op.location:
        doc = f"called at: {op.location}\n{doc}"
    if op.function:
        doc = f"torch function: {op.function}\n{doc}"
    if op.shape is not None:
        doc = f"{doc}\noutput: {op.dtype or 'unknown dtype'} {shape_text(op.shape)}"
    if max(len(op.module_path or ""), len(op.layer), len(op.buffer_address or ""), len(params or "")) > NODE_TEXT_MAX_LENGTH:
        doc += full_texts(((NodeAttr.MODULE_PATH, op.module_path), (NodeAttr.LAYER, op.layer),
                           (NodeAttr.BUFFER_ADDRESS, op.buffer_address), (NodeAttr.PARAMS, params)))  # fmt: skip
    return doc


DISCLAIMER = (
    "A picture of a TorchLens trace, not a runnable model: ops keep their captured TorchLens "
    "names in the custom domain ai.torchlens.lossy, module calls are ai.torchlens.module "
    "functions (runs of repeated calls ai.torchlens.run ones, structure nodes of "
    "ai.torchlens.structure only gather returned tensors), and shapes are what the traced run observed."
)


def _group(n: int) -> str:
    return f"{n:,}"


def duration_us(seconds: float) -> float:
    """Seconds -> microseconds, rounded to a nanosecond (stable text and JSON)."""
    return round(seconds * 1e6, 3)


def duration_text(seconds: float) -> str:
    """``569 µs``, ``1.25 ms``, ``2.03 s``, ``340 ns``."""
    if seconds >= 1.0:
        return f"{seconds:.3g} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.3g} ms"
    if seconds >= 1e-6:
        return f"{seconds * 1e6:.3g} µs"
    return f"{seconds * 1e9:.3g} ns"


@export_memo
def flops_text(flops: int) -> str:
    """``1,234,567 FLOPs (4.2 MFLOPs)``."""
    text = f"{_group(flops)} FLOPs"
    for scale, unit in ((1e12, "TFLOPs"), (1e9, "GFLOPs"), (1e6, "MFLOPs"), (1e3, "kFLOPs")):
        if flops >= scale:
            return f"{text} ({flops / scale:.3g} {unit})"
    return text


@export_memo
def bytes_text(nbytes: int) -> str:
    """``3,072 B (3 KiB)``."""
    text = f"{_group(nbytes)} B"
    for scale, unit in ((1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")):
        if nbytes >= scale:
            return f"{text} ({nbytes / scale:.3g} {unit})"
    return text


def count_text(n: int) -> str:
    return _group(n)


_FORMAT: dict[str, Callable[[Any], str]] = {
    "duration": duration_text,
    "flops": flops_text,
    "bytes": bytes_text,
    "count": count_text,
}
"""A metric's ``format`` -> the function wording one value with its unit."""

_COMPANION_VALUE: dict[str, Callable[[Any], Any]] = {
    "microseconds": duration_us,
    "count": lambda value: value,
}
"""A metric's ``companion_value`` -> the number a companion row holds."""


def _compile(metric: Metric) -> tuple[str, Callable[[Any], str], Callable[[Any], Any]]:
    return metric.fact, _FORMAT[metric.format], _COMPANION_VALUE[metric.companion_value]


_TABLE = tuple((m, *_compile(m)) for m in METRICS)
"""Each metric with its fact's attribute name, its formatter and its companion value."""


def _scope(facts: Facts) -> str:
    if facts.inclusive:
        return "inclusive"
    return "passes" if facts.passes > 1 else "op"


def _stated(value: Any, is_count: bool) -> bool:
    """Whether a fact is worded: an unknown one is absent, and so is a count of 0 (no op inside)."""
    return value is not None and not (is_count and value == 0)


def _renderer(template: str, fmt: Callable[[Any], str]) -> Callable[[Any, Facts], str]:
    """``template`` compiled once: ``render(value, facts)`` is its text for one fact."""
    fields = {name for _, name, _, _ in string.Formatter().parse(template) if name}
    head, _, tail = template.partition("{value}")
    if fields == {"value"} and "{" not in head + tail and "}" not in head + tail:
        return lambda value, facts: head + fmt(value) + tail  # the common case, as fast as an f-string

    def render(value: Any, facts: Facts) -> str:
        words: dict[str, Any] = {"value": fmt(value), "raw": value}
        if "passes" in fields or "per_pass" in fields:
            words["passes"] = facts.passes
            words["per_pass"] = fmt(value / facts.passes)
        if "unknown_flops_note" in fields:
            n = facts.unknown_flops
            words["unknown_flops_note"] = f"; {n} ops inside have no FLOP rule" if n else ""
        if "calls_note" in fields:
            words["calls_note"] = f" (summed over {facts.calls} calls)" if facts.calls > 1 else ""
        return template.format(**words)

    return render


_Spec = tuple[str, bool, str, Callable[[Any, Facts], str], tuple[str, ...], Callable[[Any], Any]]
"""One metric in one scope, compiled: (fact attribute, a zero is absent, node metadata key,
its renderer, companion rows, the companion's number)."""


def compile_table(table: Iterable[tuple[Metric, str, Callable[[Any], str], Callable[[Any], Any]]]) -> dict[str, tuple[_Spec, ...]]:
    """The node-level wording of each scope (``op``, ``passes``, ``inclusive``), compiled from
    the metric table once, in the table's order."""
    specs: dict[str, list[_Spec]] = {"op": [], "passes": [], "inclusive": []}
    for metric, attr, fmt, number in table:
        for scope_name, out in specs.items():
            scope: NodeWording | InclusiveWording | None = getattr(metric, scope_name)
            if scope is not None:
                out.append((attr, metric.format == "count", scope.node_meta, _renderer(scope.text, fmt), scope.rows, number))
    return {name: tuple(out) for name, out in specs.items()}


_SPECS = compile_table(_TABLE)
_TOTAL_KEYS = tuple(m.total.model_meta for m in METRICS if m.total is not None)
"""The model metadata keys stating totals, in the table's order."""


def fact_rows(facts: Facts) -> list[tuple[str, str]]:
    """The node metadata rows stating ``facts`` (an absent fact gives no row; a count of 0,
    no op inside, says nothing either)."""
    rows: list[tuple[str, str]] = []
    for attr, skip_zero, key, render, _, _ in _SPECS[_scope(facts)]:
        value = getattr(facts, attr)
        if not _stated(value, skip_zero):
            continue
        rows.append((key, render(value, facts)))
    return rows


def node_rows(node: PNode) -> tuple[tuple[str, str], ...]:
    """Every metadata row of ``node`` as written: its facts and own rows sorted, then its diff rows."""
    facts = fact_rows(node.facts)
    rows: Iterable[tuple[str, str]] = sorted([*facts, *node.metadata]) if facts else node.metadata
    return (*rows, *diff_rows(node.diff)) if node.diff is not None else tuple(rows)


def node_doc(node: PNode) -> str:
    """``node``'s description as written: its own, then its diff facts in one sentence."""
    return node.doc if node.diff is None else f"{node.doc}\n{diff_sentence(node.diff)}"


def companion_metric_rows(facts: Facts) -> list[tuple[str, Any]]:
    """``(row name, number)`` for each fact of a node, in the companion's order."""
    scope_name = _scope(facts)
    out: list[tuple[str, Any]] = []
    for attr, skip_zero, _, _, rows, number in _SPECS[scope_name]:
        value = getattr(facts, attr)
        if not _stated(value, skip_zero):
            continue
        out.append((rows[0], number(value)))
        for name in rows[1:]:  # the per-pass row: the value over one pass
            out.append((name, number(value / facts.passes)))
    if scope_name == "passes":
        out.append((PASSES_ROW, facts.passes))
    return out


def share_rows(facts: Facts, totals: Facts) -> list[tuple[str, str]]:
    """A module call's share of the model's time and FLOPs, as companion metadata rows."""
    out: list[tuple[str, str]] = []
    if not facts.inclusive:
        return out
    for metric, attr, _, _ in _TABLE:
        scope = metric.inclusive
        if scope is None or scope.share_row is None:
            continue
        value, whole = getattr(facts, attr), getattr(totals, attr)
        if value is not None and whole:
            out.append((scope.share_row, f"{100.0 * value / whole:.2f} %"))
    return out


def function_doc_line(facts: Facts) -> str | None:
    """The sentence of a module function's description stating its inclusive facts."""
    parts: list[str] = []
    for metric, attr, fmt, _ in _TABLE:
        scope = metric.inclusive
        value = getattr(facts, attr)
        if scope is None or scope.function_doc is None or not _stated(value, metric.format == "count"):
            continue
        parts.append(scope.function_doc.format(value=fmt(value), raw=value))
    inside = f"inside the {facts.calls} calls" if facts.calls > 1 else "inside"
    return f"Inclusive of every op {inside}: " + "; ".join(parts) + "." if parts else None


def depth_reason(choice: DepthChoice) -> str | None:
    """Why the automatic module view grouped the root deeper than depth 1 (None: it did not)."""
    if not choice.grouped:
        return None
    parts = []
    if choice.wrappers:
        parts.append("descended through single-call wrapper " + ", then ".join(f"`{a}`" for a in choice.wrappers))
    if choice.steps:
        parts.append("opened the blocks holding most of the model: " + "; then ".join(_opening(s) for s in choice.steps))
    return (
        f"Grouped down to module depth {choice.reached}: {'; '.join(parts)}. "
        "Pass depth=1 to see the top-level modules as boxes."
    )


def _opening(step: Opening) -> str:
    drawn = ", ".join(f"`{d}`" for d in step.drawn)
    drawn += f" and {step.ops_drawn} op(s)" if step.ops_drawn else ""
    what = ", ".join(
        f"the run `{name}` ({n} of {step.total} ops)" if is_run else f"`{name}` ({n} of {step.total} ops)"
        for name, n, is_run in step.blocks
    )
    return f"{what}, where the root drew {step.boxes} box(es) of substance ({drawn})"


def hidden_text(hidden_buffers: int, hidden_ops: int, side_ops: int, where: str) -> str:
    """What a body leaves undrawn, in words: buffers and counter ops the buffer policy hid,
    side computations the module view leaves out ("" when nothing)."""
    lines = []
    if hidden_buffers or hidden_ops:
        lines.append(f"Hidden by the buffer policy {where}: {hidden_buffers} buffer(s), {hidden_ops} counter-update op(s).")
    if side_ops:
        lines.append(
            f"Not drawn {where}: {side_ops} side computation op(s) whose results reach no model output "
            '(such as attention-mask checks); granularity="op" draws them.'
        )
    return " ".join(lines)


def function_doc(call: ModuleCallIR, facts: Facts, hidden: str, run: RunIR | None = None, groups: int = 0) -> str:
    """A module function's description: what the call is, its inclusive facts, its
    parameters and what it leaves undrawn (:func:`hidden_text`); ``run`` when its whole
    body is one run of calls."""
    lines = [f"**{call.class_name}** — `{call.address}`, call {call.call_index} (TorchLens module call `{call.label}`)."]
    if run is not None:
        lines[0] += f" Its body is a run of {len(run.calls)} {run.class_name} calls, {run_span(run)}{_skips(run)}."
    facts_line = function_doc_line(facts)
    if facts_line:
        lines.append(facts_line)
    if call.num_params:
        lines.append(f"Parameters (including submodules): {call.num_params:,}.")
    if groups and run is not None:
        lines.append(_grouped(groups, run))
    if hidden:
        lines.append(hidden)
    return "\n\n".join(lines)


def _grouped(groups: int, run: RunIR) -> str:
    return f"Opened on {groups} groups of consecutive calls: one chain of {len(run.calls)} boxes would run many screens tall."


HEADER_CHARS = 21
"""Characters of a box header Netron shows whole (longer ones lose their middle)."""

def call_node_doc(call: ModuleCallIR, run: RunIR | None) -> str:
    """The description of a module call's box; ``run`` when its whole body is one run."""
    doc = f"Module call {call.label}: {call.class_name} at `{call.address}`, call {call.call_index}."
    if run is not None:
        doc += f" Its body is a run of {len(run.calls)} {run.class_name} calls ({run_span(run)})."
    return doc + "\nDrill in with the ƒ button at the right of the box header."


def run_header(run: RunIR) -> str:
    """What the box of a run says (its op type, the name of its function): ``GPT2Block ×24``,
    or for a group of a run's calls the indices it holds, ``GPT2Block 10–19``."""
    if run.group_of is not None:
        header = f"{run.class_name} {run.first}–{run.last}"
        # Netron cuts a header past HEADER_CHARS in the middle: keep the range readable.
        return header if len(header) <= HEADER_CHARS else f"{run.address.rsplit('.', 1)[-1]} {run.first}–{run.last}"
    return f"{run.class_name} ×{len(run.calls)}"


def run_span(run: RunIR) -> str:
    """``model.layers.0`` .. ``model.layers.31``, each taking the previous call's output."""
    return (
        f"`{run.address}.{run.first}` .. `{run.address}.{run.last}`, one after another, "
        "each taking the previous call's output"
    )


def _skips(run: RunIR) -> str:
    if not run.skips:
        return ""
    return f" ({run.skips} value(s) skip ahead from one call to a later one, such as a bias the first call computes for all)"


def run_node_doc(run: RunIR) -> str:
    """The description of a run's box (or of a group of its calls)."""
    if run.group_of is not None:
        return (
            f"Calls {run.first}–{run.last} of the run `{run.group_of}`: {len(run.calls)} {run.class_name} calls, "
            f"{run_span(run)}.\nDrill in with the ƒ button at the right of the box header to see them."
        )
    return (
        f"Run of {len(run.calls)} calls: {run.class_name} at {run_span(run)}{_skips(run)}. "
        f"`{run.address}` itself is never called (a container such as a ModuleList): this box is a run of calls, "
        "not a call.\nDrill in with the ƒ button at the right of the box header to see the calls."
    )


def run_doc(run: RunIR, facts: Facts, hidden: str, notes: str = "", groups: int = 0) -> str:
    """A run's function description: the calls it holds, their inclusive facts, how it opens."""
    what = f"calls {run.first}–{run.last} of the run `{run.group_of}`" if run.group_of else "a run of calls, not a call"
    lines = [
        f"**{run.class_name} ×{len(run.calls)}** — {what}: {run_span(run)}{_skips(run)} "
        f"(TorchLens module calls `{run.calls[0]}` .. `{run.calls[-1]}`)."
    ]
    facts_line = function_doc_line(facts)
    if facts_line:
        lines.append(facts_line)
    if run.num_params:
        lines.append(f"Parameters (all calls, including submodules): {run.num_params:,}.")
    if groups:
        lines.append(_grouped(groups, run))
    lines.extend(t for t in (hidden, notes) if t)
    return "\n\n".join(lines)


def total_meta(totals: Facts) -> list[tuple[str, str]]:
    """The model metadata rows stating the model's totals (key, sentence)."""
    out: list[tuple[str, str]] = []
    for metric, attr, fmt, _ in _TABLE:
        scope = metric.total
        value = getattr(totals, attr)
        if scope is None or value is None:
            continue
        out.append((scope.model_meta, scope.text.format(value=fmt(value), raw=value)))
    return out


def total_rows(totals: Facts) -> list[tuple[str, Any]]:
    """The companion's model rows stating the model's totals (name, number)."""
    out: list[tuple[str, Any]] = []
    for metric, attr, _, number in _TABLE:
        scope = metric.total
        value = getattr(totals, attr)
        if scope is None or value is None:
            continue
        out.extend((name, number(value)) for name in scope.rows)
    return out


def _sig(value: float) -> float:
    """A float statistic to 7 significant digits (float32's precision; the sidebar shows
    JavaScript's shortest form, so 0.1 reads 0.1, not 0.10000000149011612)."""
    return float(f"{value:.7g}")


def stats_rows(stats: TensorStats) -> list[tuple[str, Any]]:
    """A captured tensor's value rows, in sidebar order; a statistic that is absent (see
    :class:`~tlnetron.ir.TensorStats`) gives no row, so every value is a finite number."""
    out: list[tuple[str, Any]] = []
    for name, value in (
        (CompanionRow.MIN, stats.min),
        (CompanionRow.MAX, stats.max),
        (CompanionRow.MEAN, stats.mean),
        (CompanionRow.STD, stats.std),
    ):
        if value is not None:
            out.append((name, _sig(value) if isinstance(value, float) else value))
    out.append((CompanionRow.NAN_COUNT, stats.nan_count))
    out.append((CompanionRow.INF_COUNT, stats.inf_count))
    if stats.numel:
        out.append((CompanionRow.ZERO_FRACTION, _sig(stats.zero_count / stats.numel)))
    return out


def _delta_text(delta: float) -> str:
    return f"{delta:.6g}"


def diff_rows(diff: DiffFacts) -> tuple[tuple[str, str], ...]:
    """A node's diff facts as its ``torchlens.diff.*`` metadata rows (and companion rows)."""
    if not diff.inside:
        return _row_rows(diff.rows[0])
    counts: dict[str, int] = {}
    for r in diff.rows:
        counts[r.status] = counts.get(r.status, 0) + 1
    text = ", ".join(f"{s} {counts[s]}" for s in DIFF_STATUS if counts.get(s))
    out = [(NodeMeta.DIFF_ROW_COUNTS, f"{text} (over {len(diff.rows)} op rows inside)")]
    deltas = [r.max_abs_delta for r in diff.rows if r.max_abs_delta is not None]
    if deltas:
        out.append((NodeMeta.DIFF_MAX_ABS_DELTA, _delta_text(max(deltas)) + " (largest among the ops inside)"))
    return tuple(out)


def _row_rows(row: DiffRow) -> tuple[tuple[str, str], ...]:
    out = [(NodeMeta.DIFF_STATUS, row.status)]
    if row.max_abs_delta is not None:
        out.append((NodeMeta.DIFF_MAX_ABS_DELTA, _delta_text(row.max_abs_delta)))
    if row.reference:
        out.append((NodeMeta.DIFF_REFERENCE_LABEL, one_line(row.reference)))
    if row.verdict:
        out.append((NodeMeta.DIFF_VERDICT, one_line(row.verdict)))
    if row.detail:
        out.append((NodeMeta.DIFF_DETAIL, row.detail[:2000]))
    return tuple(out)


def diff_sentence(diff: DiffFacts) -> str:
    """A node's diff facts as one sentence of its description, which Netron shows at full
    width (the metadata rows' names are cut to ``torchlens.diff.ma…`` in the sidebar)."""
    f = dict(diff_rows(diff))
    if NodeMeta.DIFF_ROW_COUNTS in f:
        text = f"Diff against the baseline, over the ops inside: {f[NodeMeta.DIFF_ROW_COUNTS]}"
    else:
        text = f"Diff against the baseline: {f[NodeMeta.DIFF_STATUS]}"
        if NodeMeta.DIFF_REFERENCE_LABEL in f:
            text += f" (the baseline's {f[NodeMeta.DIFF_REFERENCE_LABEL]})"
    if NodeMeta.DIFF_MAX_ABS_DELTA in f:
        text += f"; largest absolute difference {f[NodeMeta.DIFF_MAX_ABS_DELTA]}"
    if NodeMeta.DIFF_VERDICT in f:
        text += f"; verdict: {f[NodeMeta.DIFF_VERDICT]}"
    return text + "."


def variants_text(values: list[str]) -> str:
    """``passes 1-3: a; pass 4: b`` (consecutive passes with the same value grouped)."""
    parts: list[str] = []
    start = 0
    for i in range(1, len(values) + 1):
        if i == len(values) or values[i] != values[start]:
            span = f"pass {start + 1}" if i - start == 1 else f"passes {start + 1}-{i}"
            parts.append(f"{span}: {values[start]}")
            start = i
    return "; ".join(parts)


def _passes_text(passes: list[int]) -> str:
    if not passes:
        return ""
    out: list[str] = []
    start = prev = passes[0]
    for p in [*passes[1:], None]:
        if p is not None and p == prev + 1:
            prev = p
            continue
        out.append(str(start) if start == prev else f"{start}-{prev}")
        if p is not None:
            start = prev = p
    return ("pass " if len(passes) == 1 else "passes ") + ", ".join(out)


UNTYPED_PASSES = "passes disagree on shape or dtype (see shape_variants / dtype_variants)"
"""A rolled layer's ``untyped_output`` when its passes disagree."""


def recurrence_text(feedback: dict[str, list[int]]) -> str:
    """A rolled layer's ``recurrence``: each source feeding back, and in which passes."""
    return "; ".join(
        f"{src} feeds back ({_passes_text(sorted(set(ps)))})" for src, ps in feedback.items()
    ) + " (not drawn: a drawn feedback edge would be a cycle)"


def _plural(n: int, one: str, many: str | None = None) -> str:
    return f"{n:,} {one if n == 1 else (many or one + 's')}"


def graph_doc(projection: Projection) -> str:
    """The root graph's description: the disclaimer, the view, why this depth, what it leaves out."""
    doc = f"{DISCLAIMER}\nView: {projection.granularity}" + (f" at module depth {projection.depth}" if projection.depth else "") + "."
    if projection.depth_reason:
        doc += f"\n{projection.depth_reason}"
    if projection.graph.doc:
        doc += f"\n{projection.graph.doc}"
    return doc


def model_description(meta: dict[str, Any], model_class: str) -> str:
    """The model's description in words (Netron shows it at full width under Model
    Properties, where the metadata rows' names are cut to ``torchlens.captur…``).

    Every sentence is read from ``meta``, the rows tools read: nothing is said twice.
    """
    lines = [str(meta[MetaKey.DISCLAIMER])]
    view = f"{meta[MetaKey.GRANULARITY]} view"
    if MetaKey.DEPTH in meta:
        view += f" at module depth {meta[MetaKey.DEPTH]}"
    lines.append(f"What you see: {model_class or 'the model'}, {view}. {meta.get(MetaKey.DEPTH_REASON, '')}".rstrip())
    outcome = f"Capture: {meta[MetaKey.CAPTURE_OUTCOME]}, {meta[MetaKey.CAPTURE_VERIFIED].replace('_', ' ')}"
    if MetaKey.CAPTURE_OUTCOME_REASON in meta:
        outcome += f" ({meta[MetaKey.CAPTURE_OUTCOME_REASON]})"
    if meta.get(MetaKey.STRUCTURE_ONLY):
        outcome += "; structure only (no tensor values were kept)"
    lines.append(outcome + ".")
    drawn = (
        f"Drawn: {_plural(meta[MetaKey.NODE_COUNT], 'node')} and {_plural(meta[MetaKey.EDGE_COUNT], 'edge')} in the root graph, "
        f"{_plural(meta[MetaKey.FUNCTION_COUNT], 'module function')} behind the drill-down, from {_plural(meta[MetaKey.TRACE_OP_COUNT], 'traced op')}"
    )
    if meta.get(MetaKey.RUN_COUNT):
        drawn += f" ({_plural(meta[MetaKey.RUN_COUNT], 'run')} of repeated calls drawn as one box each)"
    left = []
    if meta[MetaKey.HIDDEN_BUFFER_COUNT] or meta[MetaKey.HIDDEN_OP_COUNT]:
        left.append(f"{_plural(meta[MetaKey.HIDDEN_BUFFER_COUNT], 'buffer')} and {_plural(meta[MetaKey.HIDDEN_OP_COUNT], 'counter op')} "
                    f"hidden by show_buffers={meta[MetaKey.SHOW_BUFFERS]!r}")
    if meta.get(MetaKey.SIDE_OP_COUNT):
        left.append(f"{_plural(meta[MetaKey.SIDE_OP_COUNT], 'side computation')} feeding no output not drawn")
    if meta.get(MetaKey.INLINED_CALL_COUNT):
        left.append(f"{_plural(meta[MetaKey.INLINED_CALL_COUNT], 'module call')} drawn inline")
    lines.append(drawn + (f"; {'; '.join(left)}." if left else "."))
    totals = [str(meta[k]) for k in _TOTAL_KEYS if k in meta]
    if totals:
        lines.append("Totals: " + "; ".join(totals) + ".")
    if MetaKey.BASELINE in meta:
        lines.append(_baseline_words(meta[MetaKey.BASELINE_KIND], meta[MetaKey.BASELINE]))
    if meta.get(MetaKey.INTERVENTIONS):
        lines.append(f"Edited trace: {_plural(len(meta[MetaKey.INTERVENTIONS]), 'intervention')} (torchlens.interventions lists them).")
    if meta.get(MetaKey.WARNINGS):
        lines.append("Warnings: " + ", ".join(meta[MetaKey.WARNINGS]) + ".")
    return "\n".join(lines)


def _baseline_words(kind: str, value: Any) -> str:
    if kind != BaselineKind.TRACE or not isinstance(value, dict):
        return f"Baseline: recorded as the identifier {value!r} (no per-node comparison)."
    counts = value.get("row_counts", {})
    rows = sum(counts.values())
    spread = ", ".join(f"{n:,} {status}" for status, n in counts.items() if n) or "none"
    direction = value.get("direction", {})
    return (
        f"Compared with {direction.get('reference', 'a baseline capture')} by TorchLens' guarded differential: "
        f"{_plural(rows, 'diff row')} ({spread}). Rows count ops of both captures, and removed or excluded ops "
        "have no node here, so the nodes carrying torchlens.diff facts need not add up to the rows; a module box "
        "sums the rows of the ops inside it."
    )

"""Words: the descriptions and box headers of nodes and functions (ops, module calls, runs, rolled layers)."""

from __future__ import annotations

from .._generated.vocab import (
    NODE_TEXT_MAX_LENGTH,
    NodeAttr,
)
from ..ir.drawing import DepthChoice, Opening, RunIR, shape_text
from ..ir.facts import Facts
from ..ir.trace import ModuleCallIR, OpIR
from .facts import function_doc_line
from .text import full_texts

__all__ = [
    "HEADER_CHARS",
    "UNTYPED_PASSES",
    "call_node_doc",
    "depth_reason",
    "empty_value_doc",
    "function_doc",
    "hidden_text",
    "op_doc",
    "recurrence_text",
    "run_doc",
    "run_header",
    "run_node_doc",
    "run_span",
    "variants_text",
]


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
    if (
        max(len(op.module_path or ""), len(op.layer), len(op.buffer_address or ""), len(params or ""))
        > NODE_TEXT_MAX_LENGTH
    ):
        texts = (
            (NodeAttr.MODULE_PATH, op.module_path),
            (NodeAttr.LAYER, op.layer),
            (NodeAttr.BUFFER_ADDRESS, op.buffer_address),
            (NodeAttr.PARAMS, params),
        )
        doc += full_texts(texts)
    return doc


def empty_value_doc(shape: tuple[int | None, ...] | None) -> str:
    """Why an edge of an empty tensor is labelled ``?``: Netron prints a dimension of 0 as ``?``."""
    if not shape or 0 not in shape:
        return ""
    dims = ", ".join("?" if d is None else str(d) for d in shape) + ("," if len(shape) == 1 else "")
    return f"an empty tensor, shape ({dims}): Netron prints a dimension of size 0 as ?"


def depth_reason(choice: DepthChoice) -> str | None:
    """Why the automatic module view grouped the root deeper than depth 1 (None: it did not)."""
    if not choice.grouped:
        return None
    parts = []
    if choice.wrappers:
        parts.append("descended through single-call wrapper " + ", then ".join(f"`{a}`" for a in choice.wrappers))
    if choice.steps:
        parts.append(
            "opened the blocks holding most of the model: " + "; then ".join(_opening(s) for s in choice.steps)
        )
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
        lines.append(
            f"Hidden by the buffer policy {where}: {hidden_buffers} buffer(s), {hidden_ops} counter-update op(s)."
        )
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
    lines = [
        f"**{call.class_name}** — `{call.address}`, call {call.call_index} (TorchLens module call `{call.label}`)."
    ]
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
    return (
        f"Opened on {groups} groups of consecutive calls: one chain of {len(run.calls)} boxes would run many "
        "screens tall."
    )


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
    return (
        f" ({run.skips} value(s) skip ahead from one call to a later one, such as a bias the first call computes "
        "for all)"
    )


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
    what = "a run of calls, not a call"
    if run.group_of:
        what = f"calls {run.first}–{run.last} of the run `{run.group_of}`"
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
    return (
        "; ".join(f"{src} feeds back ({_passes_text(sorted(set(ps)))})" for src, ps in feedback.items())
        + " (not drawn: a drawn feedback edge would be a cycle)"
    )

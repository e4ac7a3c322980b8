"""Stage 2, the module view (``granularity="module"``, the default).

Each kept module call becomes a FunctionProto in ``ai.torchlens.module`` (name = class name,
overload = the call label, so repeated calls stay distinct), called by one node in its
parent's body. By default the root starts at module depth 1 and, while it draws fewer than
five boxes of substance, the calls holding a third or more of the ops (a wrapper, a backbone
beside its task head, an encoder and its decoder) are opened into it, as long as that draws
no fewer boxes and stays within the legibility budget; an explicit ``depth=N`` groups at
that depth exactly. Opened calls dissolve into the root, the rest nest behind Netron's
drill-down. Single-op calls are inlined. Side computations (ops none of whose results reach
a model output, such as an attention-mask check ending in a scalar) are not drawn; each
call that held some says so. A call's inputs are the values produced outside it and
consumed inside (in order of first use); its outputs are the values produced inside and used outside (in production order).
Everything is one pass over the ops in execution order, so the cost is linear in
ops x nesting depth.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from ._generated.vocab import Domain, Granularity, NodeAttr, NodeRole
from .buffers import BufferResult, apply_buffer_policy
from .facts import Facts, op_facts, sum_facts
from .ir import ROLE_INPUT, ROLE_OP, ROLE_OUTPUT, ModuleCallIR, OpIR, TraceIR
from .nodes import (
    LEGIBILITY_BUDGET,
    one_line,
    op_node,
    op_value,
    root_ranks,
)
from .options import ExportOptions
from .presentation import function_doc, hidden_text, run_doc, run_node_doc, run_span
from .progress import every_share
from .projection import PFunction, PGraph, PNode, Projection, PValue
from .runs import Runs, RunIR, find_runs
from .structures import Carrier, field_key, field_name, root_graph, structure_node

__all__ = ["MIN_MODULE_BOXES", "MIN_ROOT_BOXES", "TRIVIAL_OP_TYPES", "project_module", "side_computations"]

TRIVIAL_OP_TYPES = frozenset(
    {"getitem", "getattr", "view", "reshape", "contiguous", "to", "type", "identity", "clone", "detach", "flatten", "squeeze", "unsqueeze"}
)
"""Ops that do not make a root graph a diagram on their own (issue: wrapped models)."""

MIN_ROOT_BOXES = 5
"""Boxes of substance (module calls and non-trivial ops) below which the automatic depth
looks one level deeper: fewer do not read as an architecture diagram."""

MIN_MODULE_BOXES = 2
"""Boxes to drill into (module calls, runs) below which the automatic depth looks deeper."""

HEADER_CHARS = 21
"""Characters of a box header Netron shows whole (longer ones lose their middle)."""

MAX_FUNCTIONS = 10_000
"""onnx.checker refuses a model with more local functions than this."""


def _cap_functions(kept_calls: set[str], depth: dict[str, int]) -> int:
    """Inline whole depth levels, deepest first, until the calls fit the checker's limit.

    Returns how many calls were inlined (the drawing stays uniform per level).
    """
    inlined = 0
    for level in sorted({depth[c] for c in kept_calls}, reverse=True):
        if len(kept_calls) <= MAX_FUNCTIONS:
            break
        gone = {c for c in kept_calls if depth[c] == level}
        kept_calls -= gone
        inlined += len(gone)
    return inlined


@dataclass
class _Body:
    call: ModuleCallIR | RunIR | None
    items: list[OpIR | ModuleCallIR | RunIR] = field(default_factory=list)
    inputs: dict[str, None] = field(default_factory=dict)
    outputs: dict[str, None] = field(default_factory=dict)
    returned: dict[str, list[OpIR]] = field(default_factory=dict)
    """Values that leave this body for the model's return value -> those output pseudo-ops."""
    facts: list[Facts] = field(default_factory=list)
    unknown_flops: int = 0
    hidden_buffers: int = 0
    hidden_ops: int = 0
    side_ops: int = 0
    carriers: dict[str, Carrier] = field(default_factory=dict)
    """Returned field key -> the one value this body hands up for it."""
    exported: list[str] = field(default_factory=list)
    """Formal outputs besides ``outputs``: carriers of returned fields."""
    structures: list[PNode] = field(default_factory=list)

    @property
    def label(self) -> str | None:
        return None if self.call is None else self.call.label


def side_computations(ops: tuple[OpIR, ...]) -> frozenset[str]:
    """Ops none of whose results reach a model output or a buffer (read on the trace's ops
    before the buffer policy, so a value handed on through a hidden buffer still counts).

    Attention-mask checks (``sum`` / ``eq`` / ``all`` ending in a scalar that Python tests)
    are the common case: real work, but no part of the data flow a diagram shows.
    """
    live: set[str] = set()
    for op in reversed(ops):
        if op.role != ROLE_OP or op.name in live:
            live.update(op.parents)
            live.add(op.name)
    return frozenset(op.name for op in ops if op.role == ROLE_OP and op.name not in live)


def _depths(calls: tuple[ModuleCallIR, ...]) -> dict[str, int]:
    by_label = {c.label: c for c in calls}
    depth: dict[str, int] = {}
    for c in calls:
        chain = []
        cur: ModuleCallIR | None = c
        while cur is not None and cur.label not in depth:
            chain.append(cur)
            cur = by_label.get(cur.parent) if cur.parent else None
        base = depth[cur.label] if cur is not None else 0
        for node in reversed(chain):
            base += 1
            depth[node.label] = base
    return depth


@dataclass(frozen=True, slots=True)
class _RootAt:
    """What the root graph would draw with a given set of module calls kept as boxes."""

    calls: tuple[str, ...]  # module calls, runs and groups drawn as boxes, in order of first op
    substantive_ops: int  # ops drawn as boxes that are not trivial views
    ranks: int  # boxes along the longest path, inputs and outputs included
    runs: tuple[tuple[str, int], ...] = ()  # run boxes at the root and the ops they hold

    @property
    def boxes(self) -> int:
        return len(self.calls) + self.substantive_ops

    def sparse(self) -> bool:
        """Too few boxes, or too few to drill into, to read as an architecture diagram."""
        return self.boxes < MIN_ROOT_BOXES or len(self.calls) < MIN_MODULE_BOXES


def _root_at(
    ops: tuple[OpIR, ...], boxed: set[str], by_label: dict[str, ModuleCallIR], taken: set[str], opened: frozenset[str]
) -> _RootAt:
    runs = find_runs(ops, boxed, by_label, taken=set(taken), opened=opened)
    box_of: dict[str, str] = {}  # a call at the root -> the run or group box that holds it
    for run in runs.boxes.values():
        if run.parent is None:
            box_of.update((c, run.label) for c in run.calls)
    held: dict[str, int] = {}
    calls: dict[str, None] = {}
    substantive = 0
    item_of: dict[str, str] = {}
    rank: dict[str, int] = {}
    longest = 0
    for op in ops:
        if op.role == ROLE_INPUT:
            item_of[op.name] = op.name
            rank[op.name] = 1
            continue
        top = None
        if op.role != ROLE_OUTPUT:
            top = next((c for c in op.module_calls if c in boxed), None)
            if top is None:
                substantive += op.role == ROLE_OP and op.op_type not in TRIVIAL_OP_TYPES
            else:
                top = box_of.get(top, top)
                calls[top] = None
                if top in runs.boxes:
                    held[top] = held.get(top, 0) + 1
        item = top or op.name
        item_of[op.name] = item
        r = rank.get(item, 1)
        for parent in op.parents:
            source = item_of.get(parent)
            if source is not None and source != item and rank[source] + 1 > r:
                r = rank[source] + 1
        rank[item] = r
        longest = max(longest, r)
    run_boxes = tuple((label, n) for label, n in held.items() if runs.boxes[label].group_of is None)
    return _RootAt(tuple(calls), substantive, longest, run_boxes)


def _open_main_blocks(
    ops: tuple[OpIR, ...],
    boxable: set[str],
    counts: dict[str, int],
    depth: dict[str, int],
    by_label: dict[str, ModuleCallIR],
    taken: set[str],
) -> tuple[set[str], frozenset[str], int, str | None]:
    """The calls the automatic module view opens, the runs it draws open at the root, the
    depth it reaches, and why.

    While the root draws fewer than :data:`MIN_ROOT_BOXES` boxes of substance or fewer than
    :data:`MIN_MODULE_BOXES` boxes to drill into, the calls holding at least a third of the
    ops each (a wrapper, the backbone beside a task head, an encoder and a decoder) are
    opened together, as long as that does not draw fewer boxes and stays within the
    legibility budget. When the block holding most of the model is a run, it is drawn open
    at the root instead: its groups of calls, or its calls when it is short.
    """
    total = sum(1 for op in ops if op.role not in (ROLE_INPUT, ROLE_OUTPUT))
    opened: set[str] = set()
    opened_runs: frozenset[str] = frozenset()
    here = _root_at(ops, boxable, by_label, taken, opened_runs)
    wrappers: list[str] = []
    steps: list[str] = []
    while here.sparse() and here.calls:
        big = [c for c in here.calls if c in by_label and counts[c] * 3 >= total]
        big_runs = [label for label, n in here.runs if n * 3 >= total] if not big else []
        if not big and not big_runs:
            break  # no block dominates: the root already shows the architecture
        deeper = _root_at(ops, boxable - opened - set(big), by_label, taken, opened_runs | set(big_runs))
        if deeper.boxes < here.boxes or deeper.ranks > LEGIBILITY_BUDGET:
            break  # opening them would draw less, or a rope
        if len(here.calls) == 1 and not here.substantive_ops and big:
            wrappers.append(by_label[big[0]].address)
        else:
            drawn = ", ".join(f"`{by_label[c].address if c in by_label else c}`" for c in here.calls)
            drawn += f" and {here.substantive_ops} op(s)" if here.substantive_ops else ""
            sizes = dict(here.runs)
            what = ", ".join(
                f"`{by_label[c].address}` ({counts[c]} of {total} ops)" if c in by_label else f"the run `{c}` ({sizes[c]} of {total} ops)"
                for c in (big or big_runs)
            )
            steps.append(f"{what}, where the root drew {here.boxes} box(es) of substance ({drawn})")
        opened.update(big)
        opened_runs = opened_runs | set(big_runs)
        here = deeper
    reached = 1 + max((depth[c] for c in opened), default=0)
    if not opened and not opened_runs:
        return opened, opened_runs, reached, None
    parts = []
    if wrappers:
        parts.append("descended through single-call wrapper " + ", then ".join(f"`{a}`" for a in wrappers))
    if steps:
        parts.append("opened the blocks holding most of the model: " + "; then ".join(steps))
    why = f"Grouped down to module depth {reached}: {'; '.join(parts)}. Pass depth=1 to see the top-level modules as boxes."
    return opened, opened_runs, reached, why


def _traverse(
    ops: tuple[OpIR, ...],
    kept_calls: set[str],
    runs: Runs,
    by_label: dict[str, ModuleCallIR],
    hidden_by_call: tuple[tuple[str, int, int], ...],
    facts_of: dict[str, Facts],
) -> tuple[dict[str | None, _Body], dict[str, int], list[OpIR], list[OpIR]]:
    """One pass in execution order: place every op and kept call (and run) in its body and
    record which values cross body boundaries (inputs and outputs, and the values that leave
    only for the model's return value)."""
    chains: dict[tuple[str, ...], tuple[str, ...]] = {}
    placed = runs.placed

    def chain_of(op: OpIR) -> tuple[str, ...]:
        stack = op.module_calls
        got = chains.get(stack)
        if got is None:
            out: list[str] = []
            for c in stack:
                if c in kept_calls:
                    out.extend(placed.get(c, ()))
                    out.append(c)
            got = chains[stack] = tuple(out)
        return got

    owners: dict[str, ModuleCallIR | RunIR] = {**by_label, **runs.boxes}
    bodies: dict[str | None, _Body] = {None: _Body(None)}
    home: dict[str, tuple[str, ...]] = {}
    position: dict[str, int] = {}
    inputs: list[OpIR] = []
    outputs: list[OpIR] = []
    for pos, op in enumerate(ops):
        position[op.name] = pos
        if op.role == ROLE_INPUT:
            inputs.append(op)
            home[op.name] = ()
            continue
        chain = () if op.role == ROLE_OUTPUT else chain_of(op)
        for i, c in enumerate(chain):
            if c not in bodies:
                bodies[c] = _Body(owners[c])
                bodies[chain[i - 1] if i else None].items.append(owners[c])
        # Values crossing body boundaries become inputs / outputs; a value the model returns
        # (and TorchLens says where) leaves its bodies for that field.
        returns = op.role == ROLE_OUTPUT and op.returned_as is not None
        for parent in op.parents:
            pchain = home.get(parent, ())
            common = 0
            for outer, inner in zip(pchain, chain):
                if outer != inner:
                    break
                common += 1
            for c in pchain[common:]:
                if returns:
                    bodies[c].returned.setdefault(parent, []).append(op)
                else:
                    bodies[c].outputs[parent] = None
            for c in chain[common:]:
                bodies[c].inputs.setdefault(parent, None)
            if returns and not pchain:
                bodies[None].returned.setdefault(parent, []).append(op)
        if op.role == ROLE_OUTPUT:
            outputs.append(op)
            continue
        home[op.name] = chain
        bodies[chain[-1] if chain else None].items.append(op)
        if op.role == ROLE_OP:
            facts = facts_of[op.name]
            for c in chain:
                body = bodies[c]
                body.facts.append(facts)
                if op.flops is None:
                    body.unknown_flops += 1
    for hidden_in, n_buf, n_ops in hidden_by_call:
        cur: str | None = hidden_in or None
        while cur is not None and cur not in bodies:
            cur = by_label[cur].parent if cur in by_label else None
        owner = bodies[cur]
        owner.hidden_buffers += n_buf
        owner.hidden_ops += n_ops
    return bodies, position, inputs, outputs


def _gather_returned(bodies: dict[str | None, _Body], position: dict[str, int], values: dict[str, PValue]) -> dict[str, list[Carrier]]:
    """Innermost bodies first: each hands up one carrier per returned field, gathering what
    its ops and inner boxes return for that field in a structure node when there are several.
    Returns the root's carriers per field."""
    root: dict[str, list[Carrier]] = {}
    for label, b in reversed(bodies.items()):
        found: dict[str, list[Carrier]] = {}
        for item in b.items:
            if isinstance(item, OpIR):
                for out in b.returned.get(item.name, ()):
                    key = field_key(out.returned_as) or ""
                    held = found.setdefault(key, [])
                    if held and held[-1].value == item.name and not held[-1].structure:
                        held[-1] = Carrier(item.name, (*held[-1].leaves, out))
                    else:
                        held.append(Carrier(item.name, (out,)))
            else:
                for key, carrier in bodies[item.label].carriers.items():
                    found.setdefault(key, []).append(carrier)
        if label is None:
            root = found
            continue
        tensors: list[str] = []
        for key, held in found.items():
            if len(held) == 1:
                b.carriers[key] = held[0]
                if held[0].structure:
                    b.exported.append(held[0].value)
                elif held[0].value not in b.outputs:
                    tensors.append(held[0].value)
                continue
            name = f"{label}/{field_name(key)}"
            node, value = structure_node(name, field_name(key), held, f"leaving `{b.call.address if b.call else ''}`")
            values[name] = value
            b.structures.append(node)
            b.carriers[key] = Carrier(name, tuple(leaf for c in held for leaf in c.leaves), True)
            b.exported.append(name)
        b.exported[:0] = sorted(set(tensors), key=lambda n: position[n])
    return root


def project_module(ir: TraceIR, options: ExportOptions, progress: Callable[[int, int], None] | None = None) -> Projection:
    """Project ``ir`` as nested module calls grouped at ``options.depth`` (None: automatic);
    ``progress(bodies, of)`` is called as the function bodies are built."""
    show_buffers, depth_arg = options.show_buffers, options.depth
    kept: BufferResult = apply_buffer_policy(ir.ops, show_buffers)
    side = side_computations(ir.ops) & {op.name for op in kept.ops}
    ops = tuple(op for op in kept.ops if op.name not in side) if side else kept.ops
    by_label = {c.label: c for c in ir.calls}
    depth = _depths(ir.calls)
    counts: dict[str, int] = {}
    for op in ops:
        if op.role not in (ROLE_INPUT, ROLE_OUTPUT):
            for c in op.module_calls:
                counts[c] = counts.get(c, 0) + 1
    boxable = {c for c in by_label if counts.get(c, 0) >= 2}
    taken = {op.name for op in ir.ops} | set(by_label)
    opened_runs: frozenset[str] = frozenset()
    if depth_arg is None:
        opened, opened_runs, d, reason = _open_main_blocks(ops, boxable, counts, depth, by_label, taken)
        kept_calls = boxable - opened
    else:
        d, reason = depth_arg, None
        kept_calls = {c for c in boxable if depth.get(c, 0) >= d}
    inlined = _cap_functions(kept_calls, depth)
    facts_of = {op.name: op_facts(op) for op in ops if op.role == ROLE_OP}
    while True:
        runs = find_runs(ops, kept_calls, by_label, taken=set(taken), opened=opened_runs)
        bodies, position, inputs, outputs = _traverse(ops, kept_calls, runs, by_label, kept.hidden_by_call, facts_of)
        # A call that takes nothing from outside and gives nothing back (e.g. one holding only
        # a buffer counter chain) would be a node with no edges, which the checker rejects:
        # dissolve it into its parent and place the ops again.
        idle = {
            label
            for label, b in bodies.items()
            if label is not None and label in by_label and not b.inputs and not b.outputs and not b.returned
        }
        if not idle:
            break
        kept_calls -= idle
    for op in kept.ops if side else ():
        if op.name in side:  # said on the innermost drawn call that held it
            bodies[next((c for c in reversed(op.module_calls) if c in bodies), None)].side_ops += 1

    values: dict[str, PValue] = {op.name: op_value(op) for op in ops if op.role != ROLE_OUTPUT}
    root_carriers = _gather_returned(bodies, position, values)

    def ordered_outputs(b: _Body) -> tuple[str, ...]:
        return (*sorted(b.outputs, key=lambda n: position[n]), *b.exported)

    functions: list[PFunction] = []
    call_nodes: dict[str, PNode] = {}
    for label, b in bodies.items():
        if label is None or b.call is None:
            continue
        run = b.call if isinstance(b.call, RunIR) else runs.container.get(label)
        calls = len(run.calls) if run is not None else 1
        facts = sum_facts(b.facts, inclusive=True, unknown_flops=b.unknown_flops, calls=calls)
        hidden = _hidden_text(b, "inside this run" if isinstance(b.call, RunIR) else "inside this call")
        if isinstance(b.call, RunIR):
            call_nodes[label] = run_node(b.call, tuple(b.inputs), ordered_outputs(b), facts, hidden)
        else:
            call_nodes[label] = _call_node(b.call, tuple(b.inputs), ordered_outputs(b), facts, hidden, run)

    def body_nodes(b: _Body) -> tuple[list[PNode], list[PValue]]:
        nodes: list[PNode] = []
        vals: list[PValue] = []
        for item in b.items:
            if isinstance(item, OpIR):
                value = values[item.name]
                nodes.append(
                    op_node(item, item.parents, item.ports, typed=value.type is not None, facts=facts_of.get(item.name))
                )
                vals.append(value)
            else:
                node = call_nodes[item.label]
                nodes.append(node)
                vals.extend(values[o] for o in node.outputs)
        for node in b.structures:
            nodes.append(node)
            vals.append(values[node.name])
        return nodes, vals

    for label, b in every_share(bodies.items(), len(bodies), progress):
        if label is None or b.call is None:
            continue
        nodes, vals = body_nodes(b)
        outs = ordered_outputs(b)
        out_set = set(outs)
        node = call_nodes[label]
        notes = " ".join(runs.notes.get(label, ()))
        hidden = _hidden_text(b, "inside this run" if isinstance(b.call, RunIR) else "inside this call")
        if isinstance(b.call, RunIR):
            groups = sum(1 for r in runs.boxes.values() if r.group_of == label)
            doc = run_doc(b.call, node.facts, hidden, notes, groups)
        else:
            groups = sum(1 for r in runs.boxes.values() if r.group_of == label)
            doc = function_doc(b.call, node.facts, " ".join(t for t in (hidden, notes) if t), runs.container.get(label), groups)
        body = PGraph(
            name=node.op_type,
            nodes=tuple(nodes),
            inputs=tuple(values[i] for i in b.inputs),
            outputs=tuple(values[o] for o in outs),
            values=tuple(v for v in vals if v.name not in out_set),
            doc=doc,
        )
        functions.append(PFunction(name=node.op_type, domain=node.domain, body=body, overload=label))

    root = bodies[None]
    nodes, vals = body_nodes(root)
    root_doc = " ".join(t for t in (_hidden_text(root, "at the root"), *runs.notes.get(None, ())) if t)
    graph = root_graph(
        ir.model_class,
        nodes,
        {v.name: v for v in vals},
        inputs,
        outputs,
        {op.name: values[op.name] for op in inputs},
        doc=root_doc,
        carriers=root_carriers,
        taken=taken | set(values) | set(runs.boxes),
    )
    # Model totals count every op, side computations included (they ran).
    leaf_facts = [*facts_of.values(), *(op_facts(op) for op in kept.ops if op.name in side)]
    return Projection(
        granularity=Granularity.MODULE,
        graph=graph,
        functions=tuple(functions),
        depth=d,
        depth_reason=reason,
        inlined_calls=inlined,
        show_buffers=show_buffers,
        hidden_buffers=kept.hidden_buffers,
        hidden_ops=kept.hidden_ops,
        side_ops=len(side),
        root_ranks=root_ranks(graph),
        totals=sum_facts(leaf_facts, inclusive=False),
        run_count=runs.count(),
    )


def _hidden_text(b: _Body, where: str) -> str:
    return hidden_text(b.hidden_buffers, b.hidden_ops, b.side_ops, where)


def _call_node(
    call: ModuleCallIR, inputs: tuple[str, ...], outputs: tuple[str, ...], facts: Facts, hidden: str, run: RunIR | None
) -> PNode:
    attrs: list[tuple[str, str | int]] = [
        (NodeAttr.CLASS_NAME, one_line(call.class_name)),
        (NodeAttr.MODULE_PATH, one_line(call.address)),
        (NodeAttr.CALL_INDEX, call.call_index),
    ]
    if call.num_params > 0:
        attrs.append((NodeAttr.NUM_PARAMS, call.num_params))
    if hidden:
        attrs.append((NodeAttr.HIDDEN, hidden))
    op_type = call.class_name
    doc = f"Module call {call.label}: {call.class_name} at `{call.address}`, call {call.call_index}."
    if run is not None:  # its whole body is one run: the box says what it repeats
        op_type = run_header(run)
        attrs += run_attributes(run)
        doc += f" Its body is a run of {len(run.calls)} {run.class_name} calls ({run_span(run)})."
    doc += "\nDrill in with the ƒ button at the right of the box header."
    return PNode(
        name=call.label,
        op_type=op_type,
        domain=Domain.MODULE,
        role=NodeRole.MODULE_CALL,
        inputs=inputs,
        outputs=outputs,
        attributes=tuple(sorted(attrs)),
        doc=doc,
        facts=facts,
        overload=call.label,
    )


def run_header(run: RunIR) -> str:
    """What the box of a run says (its op type, the name of its function): ``GPT2Block ×24``,
    or for a group of a run's calls the indices it holds, ``GPT2Block 10–19``."""
    if run.group_of is not None:
        header = f"{run.class_name} {run.first}–{run.last}"
        # Netron cuts a header past HEADER_CHARS in the middle: keep the range readable.
        return header if len(header) <= HEADER_CHARS else f"{run.address.rsplit('.', 1)[-1]} {run.first}–{run.last}"
    return f"{run.class_name} ×{len(run.calls)}"


def run_attributes(run: RunIR) -> list[tuple[str, str | int]]:
    return [
        (NodeAttr.RUN_CALLS, len(run.calls)),
        (NodeAttr.RUN_FIRST, one_line(run.calls[0])),
        (NodeAttr.RUN_LAST, one_line(run.calls[-1])),
    ]


def run_node(run: RunIR, inputs: tuple[str, ...], outputs: tuple[str, ...], facts: Facts, hidden: str) -> PNode:
    """The box of a run (or of a group of its calls): it calls the run's function."""
    attrs: list[tuple[str, str | int]] = [
        (NodeAttr.CLASS_NAME, one_line(run.class_name)),
        (NodeAttr.MODULE_PATH, one_line(run.address)),
        *run_attributes(run),
    ]
    if run.num_params > 0:
        attrs.append((NodeAttr.NUM_PARAMS, run.num_params))
    if hidden:
        attrs.append((NodeAttr.HIDDEN, hidden))
    return PNode(
        name=run.label,
        op_type=run_header(run),
        domain=Domain.RUN,
        role=NodeRole.MODULE_RUN,
        inputs=inputs,
        outputs=outputs,
        attributes=tuple(sorted(attrs)),
        doc=run_node_doc(run),
        facts=facts,
        overload=run.label,
    )

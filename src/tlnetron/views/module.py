"""The module view (``granularity="module"``, the default).

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
consumed inside (in order of first use); its outputs are the values produced inside and used
outside (in production order). Everything is one pass over the ops in execution order, so the cost is linear in
ops x nesting depth.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from .._generated.vocab import Granularity
from ..ir.drawing import PFunction, PGraph, PNode, Projection, PValue, RunIR, Runs
from ..ir.facts import Facts, op_facts, sum_facts
from ..ir.trace import ROLE_INPUT, ROLE_OP, ROLE_OUTPUT, ModuleCallIR, OpIR, TraceIR
from ..options import ExportOptions
from ..progress import every_share
from ..read.buffers import BufferResult, apply_buffer_policy
from ..words.docs import depth_reason, function_doc, hidden_text, run_doc
from .module_depth import open_main_blocks
from .nodes import call_node, op_node, op_value, root_ranks, run_node
from .runs import find_runs
from .structures import Carrier, field_key, field_name, root_graph, structure_node

__all__ = ["project_module", "side_computations"]

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


def _gather_returned(
    bodies: dict[str | None, _Body], position: dict[str, int], values: dict[str, PValue]
) -> dict[str, list[Carrier]]:
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


@dataclass(frozen=True, slots=True)
class _Choice:
    """What the module view draws: the ops (buffer policy applied, side computations out), the
    calls kept as boxes and the depth it reached."""

    kept: BufferResult
    side: frozenset[str]
    ops: tuple[OpIR, ...]
    by_label: dict[str, ModuleCallIR]
    taken: set[str]
    kept_calls: set[str]
    opened_runs: frozenset[str]
    depth: int | None
    reason: str | None
    inlined: int


def _choose(ir: TraceIR, options: ExportOptions) -> _Choice:
    kept: BufferResult = apply_buffer_policy(ir.ops, options.show_buffers)
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
    if options.depth is None:
        choice = open_main_blocks(ops, boxable, counts, depth, by_label, taken)
        kept_calls, opened_runs, d, reason = (
            boxable - choice.opened,
            choice.opened_runs,
            choice.reached,
            depth_reason(choice),
        )
    else:
        d, reason = options.depth, None
        kept_calls = {c for c in boxable if depth.get(c, 0) >= d}
    inlined = _cap_functions(kept_calls, depth)
    return _Choice(kept, side, ops, by_label, taken, kept_calls, opened_runs, d, reason, inlined)


def _place(
    c: _Choice, facts_of: dict[str, Facts]
) -> tuple[Runs, dict[str | None, _Body], dict[str, int], list[OpIR], list[OpIR]]:
    """Place every op and kept call in its body (see :func:`_traverse`), dissolving idle calls."""
    kept_calls = set(c.kept_calls)
    while True:
        runs = find_runs(c.ops, kept_calls, c.by_label, taken=set(c.taken), opened=c.opened_runs)
        bodies, position, inputs, outputs = _traverse(
            c.ops, kept_calls, runs, c.by_label, c.kept.hidden_by_call, facts_of
        )
        # A call that takes nothing from outside and gives nothing back (e.g. one holding only
        # a buffer counter chain) would be a node with no edges, which the checker rejects:
        # dissolve it into its parent and place the ops again.
        idle = {
            label
            for label, b in bodies.items()
            if label is not None and label in c.by_label and not b.inputs and not b.outputs and not b.returned
        }
        if not idle:
            break
        kept_calls -= idle
    for op in c.kept.ops if c.side else ():
        if op.name in c.side:  # said on the innermost drawn call that held it
            bodies[next((m for m in reversed(op.module_calls) if m in bodies), None)].side_ops += 1
    return runs, bodies, position, inputs, outputs


def _ordered_outputs(b: _Body, position: dict[str, int]) -> tuple[str, ...]:
    return (*sorted(b.outputs, key=lambda n: position[n]), *b.exported)


def _where(b: _Body) -> str:
    return "inside this run" if isinstance(b.call, RunIR) else "inside this call"


def _call_nodes(bodies: dict[str | None, _Body], runs: Runs, position: dict[str, int]) -> dict[str, PNode]:
    """The box of every kept call and run, with its inclusive facts."""
    call_nodes: dict[str, PNode] = {}
    for label, b in bodies.items():
        if label is None or b.call is None:
            continue
        run = b.call if isinstance(b.call, RunIR) else runs.container.get(label)
        calls = len(run.calls) if run is not None else 1
        facts = sum_facts(b.facts, inclusive=True, unknown_flops=b.unknown_flops, calls=calls)
        hidden = _hidden_text(b, _where(b))
        outputs = _ordered_outputs(b, position)
        if isinstance(b.call, RunIR):
            call_nodes[label] = run_node(b.call, tuple(b.inputs), outputs, facts, hidden)
        else:
            call_nodes[label] = call_node(b.call, tuple(b.inputs), outputs, facts, hidden, run)
    return call_nodes


def _body_nodes(
    b: _Body, values: dict[str, PValue], facts_of: dict[str, Facts], call_nodes: dict[str, PNode]
) -> tuple[list[PNode], list[PValue]]:
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


def _function(
    label: str,
    b: _Body,
    runs: Runs,
    node: PNode,
    nodes: list[PNode],
    vals: list[PValue],
    values: dict[str, PValue],
    outs: tuple[str, ...],
) -> PFunction:
    """The FunctionProto a call's (or run's) box calls: its body and its description."""
    notes = " ".join(runs.notes.get(label, ()))
    hidden = _hidden_text(b, _where(b))
    groups = sum(1 for r in runs.boxes.values() if r.group_of == label)
    if isinstance(b.call, RunIR):
        doc = run_doc(b.call, node.facts, hidden, notes, groups)
    else:
        assert b.call is not None
        doc = function_doc(
            b.call, node.facts, " ".join(t for t in (hidden, notes) if t), runs.container.get(label), groups
        )
    out_set = set(outs)
    body = PGraph(
        name=node.op_type,
        nodes=tuple(nodes),
        inputs=tuple(values[i] for i in b.inputs),
        outputs=tuple(values[o] for o in outs),
        values=tuple(v for v in vals if v.name not in out_set),
        doc=doc,
    )
    return PFunction(name=node.op_type, domain=node.domain, body=body, overload=label)


def project_module(
    ir: TraceIR, options: ExportOptions, progress: Callable[[int, int], None] | None = None
) -> Projection:
    """Project ``ir`` as nested module calls grouped at ``options.depth`` (None: automatic);
    ``progress(bodies, of)`` is called as the function bodies are built."""
    c = _choose(ir, options)
    ops = c.ops
    facts_of = {op.name: op_facts(op) for op in ops if op.role == ROLE_OP}
    runs, bodies, position, inputs, outputs = _place(c, facts_of)
    values: dict[str, PValue] = {op.name: op_value(op) for op in ops if op.role != ROLE_OUTPUT}
    root_carriers = _gather_returned(bodies, position, values)
    call_nodes = _call_nodes(bodies, runs, position)
    functions: list[PFunction] = []
    for label, b in every_share(bodies.items(), len(bodies), progress):
        if label is None or b.call is None:
            continue
        nodes, vals = _body_nodes(b, values, facts_of, call_nodes)
        functions.append(
            _function(label, b, runs, call_nodes[label], nodes, vals, values, _ordered_outputs(b, position))
        )

    root = bodies[None]
    nodes, vals = _body_nodes(root, values, facts_of, call_nodes)
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
        taken=c.taken | set(values) | set(runs.boxes),
    )
    # Model totals count every op, side computations included (they ran).
    leaf_facts = [*facts_of.values(), *(op_facts(op) for op in c.kept.ops if op.name in c.side)]
    return Projection(
        granularity=Granularity.MODULE,
        graph=graph,
        functions=tuple(functions),
        depth=c.depth,
        depth_reason=c.reason,
        inlined_calls=c.inlined,
        show_buffers=options.show_buffers,
        hidden_buffers=c.kept.hidden_buffers,
        hidden_ops=c.kept.hidden_ops,
        side_ops=len(c.side),
        root_ranks=root_ranks(graph),
        totals=sum_facts(leaf_facts, inclusive=False),
        run_count=runs.count(),
    )


def _hidden_text(b: _Body, where: str) -> str:
    return hidden_text(b.hidden_buffers, b.hidden_ops, b.side_ops, where)

"""The trace reader: the only module that reads a torchlens ``Trace``.

Reads a finished ``torchlens`` ``Trace`` through its public attributes (never through
``torchlens.export`` internals) into tlnetron's own IR (:mod:`tlnetron.ir.trace`). Pinned to the
torchlens range in ``pyproject.toml``; every attribute used here is listed in
``shared/reference/torchlens-trace-api.md``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import fields, replace
from pathlib import Path
from typing import Any

from .._generated.vocab import BufferPolicy, ErrorCode
from ..errors import TlnetronError
from ..ir.trace import (
    ROLE_BUFFER,
    ROLE_INPUT,
    ROLE_OP,
    ROLE_OUTPUT,
    Honesty,
    ModuleCallIR,
    OpIR,
    TraceIR,
)
from ..progress import every_share
from .buffers import hides_buffer
from .files import saved_trace
from .stats import Gather, finite_float, one_thread, tensor_stats
from .values import Dtypes, Locations, count_of, dist_version, shape_of
from .wiring import wire

__all__ = [
    "describe", "is_trace", "load_saved_trace", "node_name_map", "read_trace", "tensor_stats", "trace_classes",
]  # fmt: skip


def trace_classes() -> tuple[type, ...]:
    """The torchlens classes accepted as a trace."""
    import torchlens

    return (torchlens.Trace,)


def is_trace(obj: object) -> bool:
    """True when ``obj`` is a torchlens ``Trace``."""
    try:
        return isinstance(obj, trace_classes())
    except Exception:  # torchlens missing or broken: nothing is a trace
        return False


def _buffer_access(op: Any, parents: tuple[str, ...]) -> str | None:
    kind = getattr(op, "buffer_write_kind", None)
    if kind is None:
        return "read" if not parents else "write"
    return f"write ({kind})" if kind in ("inplace", "fused") else "write"


def read_trace(
    log: Any,
    *,
    show_buffers: str = BufferPolicy.ALWAYS,
    module_calls: bool = True,
    brief_repeats: bool = False,
    progress: Callable[[int, int], None] | None = None,
    activation_stats: bool = True,
    background_stats: bool = False,
) -> TraceIR:
    """Read a finished ``Trace`` into tlnetron's IR.

    Args:
        log: a ``torchlens.Trace``.
        show_buffers: the buffer policy the IR will be exported with. Buffer pseudo-ops
            the policy hides by themselves (:func:`tlnetron.read.buffers.hides_buffer`) are read
            only as far as the policy needs them (name, parents, address, and their module
            calls for the module view): their argument slots (``ports``, empty), shape,
            dtype, bytes and access kind are never shown, and reading them cost a third of
            reading a BatchNorm-heavy trace. The default reads everything.
        module_calls: read the module calls (``TraceIR.calls``); only the module view uses
            them, so the op and rolled views skip them (and hidden buffers' call stacks).
        brief_repeats: read the repeated passes of compute ops (pass 2 onwards) briefly:
            only what a rolled layer compares or sums across its passes (shape, dtype,
            wiring, time, FLOPs, bytes). Their module calls and source location are left
            out; the rolled view takes those from the layer's first pass.
        progress: called as ``progress(done, total)`` about every 2% of the ops.
        activation_stats: read statistics of every saved output tensor (``op.out``) into
            ``OpIR.stats`` (:func:`tensor_stats`); ops with nothing saved (None, not a
            tensor, not chosen by the trace's ``save=``, a structure-only trace, an
            ``audit`` load) have none. An op that only rearranges one parent's elements (a
            view, a transpose, a same-dtype cast) takes its parent's, unread.
        background_stats: read the tensors' statistics on a native thread that runs on
            while the caller goes on: their ``OpIR.stats`` stay None and
            ``TraceIR.late_stats`` gives them (``TraceIR.op_stats`` gives every op's).

    Whatever the options, what a compute op *is* (type, function, parameters, multi-output
    slot, module address) is read once per layer, from its first pass: TorchLens keeps
    those per Layer, the same for every pass.

    Returns:
        The :class:`~tlnetron.ir.trace.TraceIR`.

    Raises:
        TlnetronError: ``not_a_trace`` when ``log`` is not a Trace; ``trace_unreadable``
            when the trace lacks what the exporter needs.
    """
    if not is_trace(log):
        raise TlnetronError(
            ErrorCode.NOT_A_TRACE,
            f"expected a torchlens Trace, got {type(log).__name__}.",
            where="trace",
            remedy="pass the object returned by torchlens.trace(model, x), "
            "or a trace loaded with torchlens.load(path).",
        )
    try:
        with one_thread(activation_stats):
            return _read(log, show_buffers, module_calls, brief_repeats, progress, activation_stats, background_stats)
    except TlnetronError:
        raise
    except Exception as exc:  # a trace torchlens could not complete, or an API drift
        raise TlnetronError(
            ErrorCode.TRACE_UNREADABLE,
            f"could not read the trace ({type(exc).__name__}: {exc}).",
            where="trace",
            remedy="trace the model again with the supported torchlens version (see tlnetron's pyproject.toml) "
            "and retry.",
        ) from exc


_PSEUDO_ROLES = {"input": ROLE_INPUT, "output": ROLE_OUTPUT, "buffer": ROLE_BUFFER}
_PSEUDO_FLAGS = {ROLE_INPUT: "is_input", ROLE_OUTPUT: "is_output", ROLE_BUFFER: "is_buffer"}


def _labels(log: Any, raw_ops: list[Any]) -> tuple[list[str], list[str], list[int]]:
    """Every op's label, layer label and pass index, in execution order.

    ``log.op_labels`` lists the labels without an attribute read per op; a label is its
    layer label plus ``:<pass>``. Ops whose label does not have that form are read from
    the op itself (``layer_label``, ``pass_index``).
    """
    labels = log.op_labels
    if type(labels) is not list or len(labels) != len(raw_ops):
        labels = [op.label for op in raw_ops]
    labels = [label if type(label) is str else str(label) for label in labels]
    layers: list[str] = []
    pass_of: list[int] = []
    for op, label in zip(raw_ops, labels):
        layer, sep, tail = label.rpartition(":")
        if sep and tail.isdigit():
            layers.append(layer)
            pass_of.append(int(tail))
        else:
            layers.append(str(op.layer_label))
            pass_of.append(int(op.pass_index or 1))
    return labels, layers, pass_of


def _node_names(labels: list[str], layers: list[str], passes: Counter[str]) -> dict[str, str]:
    """Every reference form of an op (full ``x:N`` label; bare layer label of a single-pass
    layer) -> its node name: the layer label for a single-pass layer, else the full label."""
    name_of: dict[str, str] = {}
    for label, layer in zip(labels, layers):
        if passes[layer] == 1:
            name_of[label] = name_of[layer] = layer
        else:
            name_of[label] = label
    return name_of


def _read(
    log: Any,
    show_buffers: str,
    module_calls: bool,
    brief_repeats: bool,
    progress: Callable[[int, int], None] | None = None,
    activation_stats: bool = False,
    background_stats: bool = False,
) -> TraceIR:
    raw_ops = list(log.ops)
    # The saved outputs are gathered as each op is read (what the single pass does not
    # read is measured there); a trace with nothing saved skips them altogether.
    gather = Gather() if activation_stats and not getattr(log, "structure_only", False) else None
    ops = _read_ops(log, raw_ops, show_buffers, module_calls, brief_repeats, progress, gather)
    late = gather.start(background_stats) if gather is not None else None
    if late is not None and not background_stats:
        for at, stats in late().items():
            ops[at] = replace(ops[at], stats=stats)
        late = None
    return TraceIR(
        ops=tuple(ops),
        calls=_read_calls(log) if module_calls else (),
        model_class=str(log.modules["self"].class_name or "Model"),
        honesty=_read_honesty(log),
        torchlens_version=dist_version("torchlens"),
        torch_version=dist_version("torch"),
        late_stats=late,
    )


# What a compute op *is*: type, function, parameter count, parameters, multi-output slot,
# module address. TorchLens keeps it per Layer, the same for every pass: read once per layer.
_LayerFacts = tuple[str, str | None, int, Any, int | None, str | None]
_UNREAD: _LayerFacts = ("", None, 0, (), None, None)


def _read_ops(
    log: Any,
    raw_ops: list[Any],
    show_buffers: str,
    module_calls: bool,
    brief_repeats: bool,
    progress: Callable[[int, int], None] | None,
    gather: Gather | None,
) -> list[OpIR]:
    # This loop runs once per op and is most of an export's reading time: each TorchLens
    # attribute is read at most once and only where the op's role needs it, values seen
    # before (dtypes, source frames) are converted once, and OpIR is built
    # positionally (the field order is checked at import, see _OPIR_FIELDS).
    labels, layers, pass_of = _labels(log, raw_ops)
    passes = Counter(layers)
    name_of = _node_names(labels, layers, passes)
    known_name = name_of.get

    def node_of(ref: str) -> str:
        """The node name of a parent reference (a label TorchLens may spell another way)."""
        return known_name(ref) or name_of[str(log.ops[ref].label)]

    location = Locations()
    dtype_of = Dtypes()
    # a parent reference's place in the trace, by the node name it resolves to (one per op)
    at_of = {name_of[label]: at for at, label in enumerate(labels)} if gather is not None else {}

    def place(ref: str) -> int | None:
        name = known_name(ref)
        return at_of.get(name) if name is not None else None

    late_at: set[int] = set()  # the ops whose statistics the gatherer states later
    ops: list[OpIR] = []
    append = ops.append
    layer_facts: dict[str, _LayerFacts] = {}
    for op, label, layer, pass_index in every_share(zip(raw_ops, labels, layers, pass_of), len(raw_ops), progress):
        known = layer_facts.get(layer) if pass_index > 1 else None
        op_type, function, n_params, params, mo_index, layer_address = known or _UNREAD
        role = ROLE_OP
        if known is None:
            op_type, role = _kind(op)
        # A repeat read briefly (rolled view) skips its module calls and source as well.
        brief = brief_repeats and known is not None
        is_buffer = role == ROLE_BUFFER
        hidden = False
        buffer_address = None
        if is_buffer:
            buffer_address = getattr(op, "address", None)
            buffer_address = str(buffer_address) if buffer_address else None
            hidden = hides_buffer(show_buffers, buffer_address)
        raw_parents = op.parents
        parents_raw = tuple(map(str, raw_parents)) if raw_parents else ()
        parents, ports = _parents(op, parents_raw, hidden, node_of)
        # Module calls place ops in the module view (and count hidden buffers per call there).
        raw_calls = None if brief or (hidden and not module_calls) else op.module_call_stack
        calls = tuple(map(str, raw_calls)) if raw_calls else ()
        address = buffer_address if is_buffer else _address(op, calls, known is not None, layer_address)
        # What each role carries; anything it does not is None (shown nowhere).
        shape = dtype = module_path = duration = flops = nbytes = None
        buffer_access = where = None
        # A buffer the policy hides is read only as far as the policy needs it.
        if not hidden:
            shape = shape_of(op.shape)
            dtype = dtype_of(op.dtype)
            if role != ROLE_OUTPUT:
                nbytes = count_of(op.activation_memory)
            if not is_buffer and address and calls:
                module_path = address
            if is_buffer:
                buffer_access = _buffer_access(op, parents_raw)
            elif role == ROLE_OP:
                if known is None:
                    facts = layer_facts[layer] = _layer_facts(op, op_type, address)
                    function, n_params, params, mo_index = facts[1], facts[2], facts[3], facts[4]
                if not brief:
                    where = location(op.code_context)
                duration = finite_float(op.func_duration)
                flops = count_of(op.flops_forward)
        # An output pseudo-op's tensor is its producer's, whose value the views draw (under the
        # field's name): its own statistics would target nothing, and op.out is a slow read.
        # An op whose output was not saved (a trace's save= selection) has none to state.
        stats = None
        if gather is not None and not hidden and role != ROLE_OUTPUT and getattr(op, "has_saved_activation", True):
            at = len(ops)
            source = _rearranged_from(op_type, parents_raw, shape, dtype, place, ops, late_at)
            if source is None:
                stats = gather.add(at, getattr(op, "out", None))
                if stats is None and gather.queued(at):
                    late_at.add(at)
            elif ops[source].stats is not None:
                stats = ops[source].stats
            else:
                gather.same(at, source)
                late_at.add(at)
        returned_as = _returned_as(op) if role == ROLE_OUTPUT else None
        append(OpIR(
            name_of[label], layer, pass_index, passes[layer], op_type, role, shape, dtype, parents, ports, function,
            calls, module_path, duration, flops, nbytes, n_params, params, mo_index, buffer_address, buffer_access,
            where, stats, returned_as,
        ))  # fmt: skip
    return ops


# Ops whose output holds exactly the elements of their one tensor argument, rearranged:
# statistics (extremes, moments, counts) do not depend on the order of the elements. The
# casts among them are taken only where the dtype stays (then they change nothing).
_REARRANGING = frozenset(
    {
        "view", "reshape", "transpose", "permute", "contiguous", "unsqueeze", "squeeze", "flatten", "unflatten",
        "ravel", "t", "movedim", "swapaxes", "swapdims", "clone", "detach", "identity", "to", "float", "double",
        "half", "long", "int",
    }
)  # fmt: skip


def _rearranged_from(
    op_type: str,
    parents_raw: tuple[str, ...],
    shape: tuple[Any, ...] | None,
    dtype: str | None,
    place: Callable[[str], int | None],
    ops: list[OpIR],
    late_at: set[int],
) -> int | None:
    """The op whose saved elements this op's output holds, rearranged (a view, a transpose,
    a contiguous copy of one parent of the same dtype and element count), when that op has
    statistics: this one takes them instead of reading its own tensor again. None otherwise."""
    if op_type not in _REARRANGING or len(parents_raw) != 1 or shape is None or dtype is None:
        return None
    source = place(parents_raw[0])
    if source is None or source >= len(ops):
        return None
    parent = ops[source]
    if parent.dtype != dtype or parent.shape is None or (parent.stats is None and source not in late_at):
        return None
    n = _numel(shape)
    return source if n is not None and _numel(parent.shape) == n else None


def _numel(shape: tuple[Any, ...]) -> int | None:
    n = 1
    for d in shape:
        if type(d) is not int:
            return None
        n *= d
    return n


def _parents(
    op: Any, parents_raw: tuple[str, ...], hidden: bool, node_of: Callable[[str], str]
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """An op's parents' node names and the argument slot each fills (none for a hidden
    buffer: only its wiring counts)."""
    if not parents_raw:
        return (), ()
    if hidden:
        return tuple([node_of(ref) for ref in parents_raw]), ()
    return wire(node_of, parents_raw, op.parent_arg_positions)


def _kind(op: Any) -> tuple[str, str]:
    """An op's type and role. TorchLens' pseudo-ops carry their role as their type (input /
    output / buffer); the flag confirms it. Every other type is a compute op (one read)."""
    op_type = str(op.type)
    role = _PSEUDO_ROLES.get(op_type, ROLE_OP)
    if role != ROLE_OP and not getattr(op, _PSEUDO_FLAGS[role]):
        role = ROLE_OP
    return op_type, role


def _address(op: Any, calls: tuple[str, ...], repeat: bool, layer_address: str | None) -> str | None:
    """The module a compute or pseudo-op ran in: its innermost call's (a repeat's layer's)."""
    if repeat and (layer_address or not calls):
        return layer_address if calls else None
    if not calls:
        return None
    # A call label is "<address>:<call index>", and TorchLens' op.address is that address
    # (a test holds it to this): one attribute read less.
    address, sep, _ = calls[-1].rpartition(":")
    if sep:
        return address or None
    raw = getattr(op, "address", None)
    return str(raw) if raw else None


def _layer_facts(op: Any, op_type: str, address: str | None) -> _LayerFacts:
    """What a compute op's layer is, read from its first pass."""
    n_params = int(op.num_params or 0)
    params: Any = ()
    if n_params:
        params = tuple(
            (str(n), tuple(int(d) for d in s)) for n, s in zip(list(op.param_names or ()), list(op.param_shapes or ()))
        )
    index = op.multi_output_index
    mo_index = int(index) if index is not None and getattr(op, "in_multi_output", False) else None
    return (op_type, str(op.func_qualname or op.func_name), n_params, params, mo_index, address)


# OpIR is built positionally in _read (keywords cost more per op): these fields' order is
# pinned; a field added after them (a new metric's) is passed by keyword.
_OPIR_FIELDS = (
    "name", "layer", "pass_index", "num_passes", "op_type", "role", "shape", "dtype", "parents", "ports",
    "function", "module_calls", "module_path", "duration_s", "flops", "nbytes", "num_params", "params",
    "multi_output_index", "buffer_address", "buffer_access", "location", "stats", "returned_as",
)  # fmt: skip
if (
    tuple(f.name for f in fields(OpIR))[: len(_OPIR_FIELDS)] != _OPIR_FIELDS
):  # pragma: no cover - guards an edit of ir.py
    raise RuntimeError(
        "tlnetron.ir.trace.OpIR's fields changed: update reader._OPIR_FIELDS and _read's OpIR(...) calls"
    )


def _returned_as(op: Any) -> str | None:
    """Where an output pseudo-op's tensor sits in the model's return value (``io_role``)."""
    role = getattr(op, "io_role", None)
    return role if isinstance(role, str) and (role == "output" or role.startswith("output.")) else None


def _read_calls(log: Any) -> tuple[ModuleCallIR, ...]:
    modules = log.modules
    classes: dict[str, str] = {}
    params: dict[str, int] = {}
    out: list[ModuleCallIR] = []
    for call in log.module_calls:
        address = str(call.address)
        if address == "self":
            continue
        if address not in classes:
            module = modules[address]
            classes[address] = str(module.class_name or "Module")
            params[address] = int(module.num_params or 0)
        parent = call.call_parent_label
        parent = None if (parent is None or str(parent).startswith("self:")) else str(parent)
        out.append(
            ModuleCallIR(
                label=str(call.call_label),
                address=address,
                call_index=int(call.call_index),
                class_name=classes[address],
                parent=parent,
                num_params=params[address],
            )
        )
    return tuple(out)


def _read_honesty(log: Any) -> Honesty:
    outcome = getattr(log, "outcome", None)
    status = getattr(getattr(outcome, "status", None), "value", None) or "unknown"
    reason = getattr(outcome, "reason", None)
    state = getattr(log, "state", None)
    state_text = getattr(state, "value", None) if state is not None else None
    interventions = []
    for row in getattr(log, "intervention_audit", None) or ():
        if isinstance(row, dict):
            sites = row.get("sites")
            n_sites = len(sites) if isinstance(sites, (list, tuple)) else int(sites or 0)
            interventions.append(
                (
                    str(row.get("kind", "")),
                    str(row.get("edit", "")),
                    str(row.get("selection_repr", "")),
                    n_sites,
                )
            )
    return Honesty(
        capture_status=str(status),
        reason=str(reason) if reason else None,
        verified=getattr(log, "capture_verified", None),
        structure_only=bool(getattr(log, "structure_only", False)),
        state=str(state_text).lower() if state_text else None,
        interventions=tuple(interventions),
        trace_op_count=int(getattr(log, "num_ops", 0) or 0),
    )


def load_saved_trace(path: str | Path) -> Any:
    """Load a trace saved with ``torchlens.save`` (this UNPICKLES: load only files you trust).

    Raises:
        TlnetronError: ``trace_unreadable`` when the path is not a TorchLens save.
    """
    p = saved_trace(path)
    import torchlens

    try:
        log = torchlens.load(str(p))
    except Exception as exc:
        raise TlnetronError(
            ErrorCode.TRACE_UNREADABLE,
            f"torchlens could not load {str(p)!r} ({type(exc).__name__}: {exc}).",
            where=str(p),
            remedy="re-save the trace with the installed torchlens version.",
        ) from exc
    if not is_trace(log):
        raise TlnetronError(
            ErrorCode.TRACE_UNREADABLE,
            f"{str(p)!r} did not load as a Trace (got {type(log).__name__}).",
            where=str(p),
            remedy="pass a folder written by torchlens.save(log, ...).",
        )
    return log


def node_name_map(log: Any) -> dict[str, str]:
    """Every reference form of an op -> its node name (as :func:`read_trace` names nodes)."""
    labels, layers, _ = _labels(log, list(log.ops))
    return _node_names(labels, layers, Counter(layers))


def describe(log: Any) -> str:
    """A trace in a few words, for the baseline summary's direction."""
    try:
        return f"{log.modules['self'].class_name} trace, {int(log.num_ops)} ops"
    except Exception:
        return "trace"

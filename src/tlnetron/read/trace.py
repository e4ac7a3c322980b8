"""The trace reader: the ONLY module that touches torchlens.

Reads a finished ``torchlens`` ``Trace`` through its public attributes (never through
``torchlens.export`` internals) into tlnetron's own IR (:mod:`tlnetron.ir.trace`). Pinned to the
torchlens range in ``pyproject.toml``; every attribute used here is listed in
``shared/reference/torchlens-trace-api.md``.
"""

from __future__ import annotations

import functools
import sys
from collections import Counter
from collections.abc import Callable
from dataclasses import fields
from pathlib import Path
from typing import Any

from .._generated.vocab import BufferPolicy, ErrorCode
from ..errors import Opt, Placeholder, TlnetronError
from ..ir.trace import (
    ROLE_BUFFER,
    ROLE_INPUT,
    ROLE_OP,
    ROLE_OUTPUT,
    DiffIR,
    DiffRow,
    Dim,
    Honesty,
    ModuleCallIR,
    OpIR,
    TraceIR,
)
from ..progress import every_share
from .buffers import hides_buffer
from .stats import finite_float, one_thread, tensor_stats

__all__ = [
    "is_trace", "load_saved_trace", "read_diff", "read_trace", "saved_trace", "self_baseline_refusal", "tensor_stats",
    "trace_classes",
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


def _dtype_name(dtype: Any) -> str | None:
    if dtype is None:
        return None
    text = str(dtype)
    return text[6:] if text.startswith("torch.") else text


def _shape(shape: Any) -> tuple[Dim, ...] | None:
    if shape is None:
        return None
    if type(shape) is tuple:
        for d in shape:
            if type(d) is not int:
                break
        else:
            return shape  # the common case: already a tuple of plain ints
    try:
        dims = tuple(shape)
    except TypeError:
        return None
    out: list[Dim] = []
    for d in dims:
        if isinstance(d, bool):
            return None
        if isinstance(d, int):
            out.append(int(d))
        elif isinstance(d, str):
            out.append(d)
        else:
            try:
                out.append(int(d))
            except (TypeError, ValueError):
                return None
    return tuple(out)


def _count(value: Any) -> int | None:
    """An int count (FLOPs may arrive as float-valued Flops); None when unknown."""
    if isinstance(value, int) and 0 <= value < 2**53:  # Flops / Bytes are int subclasses
        return int(value)  # exactly what rounding its float gives
    f = finite_float(value)
    if f is None or f < 0:
        return None
    return int(round(f))


def _position_key(pos: Any) -> tuple[Any, ...]:
    return pos if isinstance(pos, tuple) else (pos,)


def _port_names(arg_positions: Any, parents_raw: tuple[str, ...]) -> dict[str, list[str]]:
    """Map each raw parent reference to the argument slots it fills, in order."""
    slots: dict[str, list[str]] = {}
    if not isinstance(arg_positions, dict):
        return slots
    args = arg_positions.get("args") or {}
    if args:
        positions = list(args)
        if len(positions) > 1:
            positions.sort(key=_position_key)
        for pos in positions:
            ref = args[pos]
            if type(pos) is int:
                name = f"arg{pos}"
            elif isinstance(pos, tuple):
                name = f"arg{pos[0]}" + "".join(f"[{p}]" for p in pos[1:])
            else:
                name = f"arg{pos}"
            slots.setdefault(str(ref), []).append(name)
    kwargs = arg_positions.get("kwargs") or {}
    for key, ref in kwargs.items():
        if isinstance(key, tuple):
            name = str(key[0]) + "".join(f"[{p}]" for p in key[1:])
        else:
            name = str(key)
        slots.setdefault(str(ref), []).append(name)
    return slots


class _Locations:
    """``_location`` for one read, memoised per frame object (TorchLens shares them)."""

    __slots__ = ("_frames",)

    def __init__(self) -> None:
        # id -> (frame, is torch's own frame, worded location); the frame is kept so its id
        # cannot be reused while this read runs.
        self._frames: dict[int, tuple[Any, bool, str | None]] = {}

    def _frame(self, frame: Any) -> tuple[Any, bool, str | None]:
        known = self._frames.get(id(frame))
        if known is None:
            where = getattr(frame, "file", None)
            is_torch = "/torch/" in str(where or "")
            text = None
            if where:
                func = getattr(frame, "func_qualname", None) or getattr(frame, "func_name", "?")
                text = f"{str(where).rsplit('/', 1)[-1]}:{getattr(frame, 'line_number', '?')} in {func}"
            known = self._frames[id(frame)] = (frame, is_torch, text)
        return known

    def __call__(self, code_context: Any) -> str | None:
        """The innermost model frame (the caller of trace() is last; torch frames skipped)."""
        if not code_context:
            return None
        if isinstance(code_context, list) and len(code_context) > 1:
            # Usually the innermost candidate is already a model frame.
            innermost = code_context[-2]
            known = self._frames.get(id(innermost)) or self._frame(innermost)
            if not known[1]:
                return known[2]
        frames = list(code_context)
        candidates = frames[:-1] or frames
        known_frames = self._frames
        for f in reversed(candidates):
            known = known_frames.get(id(f)) or self._frame(f)
            if not known[1]:
                return known[2]
        return self._frame(candidates[-1])[2]


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
            tensor, a structure-only trace, an ``audit`` load) have none.

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
            return _read(log, show_buffers, module_calls, brief_repeats, progress, activation_stats)
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
) -> TraceIR:
    # This loop runs once per op and is most of an export's reading time: each TorchLens
    # attribute is read at most once and only where the op's role needs it, values seen
    # before (dtypes, source frames) are converted once, and OpIR is built
    # positionally (the field order is checked at import, see _OPIR_FIELDS).
    raw_ops = list(log.ops)
    # Statistics of the saved outputs are computed as each op is read, so progress keeps
    # ticking through them; a trace with nothing saved skips them altogether.
    stats_of = tensor_stats if activation_stats and not getattr(log, "structure_only", False) else None
    labels, layers, pass_of = _labels(log, raw_ops)
    passes = Counter(layers)
    name_of = _node_names(labels, layers, passes)
    location = _Locations()
    dtype_names: dict[Any, str | None] = {}
    role_of = _PSEUDO_ROLES.get
    ops: list[OpIR] = []
    append = ops.append
    # What a compute op *is* (type, function, parameters, multi-output slot, module
    # address) TorchLens keeps per Layer, the same for every pass: read once per layer.
    layer_facts: dict[str, tuple[str, str | None, int, Any, int | None, str | None]] = {}
    for op, label, layer, pass_index in every_share(zip(raw_ops, labels, layers, pass_of), len(raw_ops), progress):
        name = name_of[label]
        known = layer_facts.get(layer) if pass_index > 1 else None
        if known is not None:
            op_type, function, n_params, params, mo_index, layer_address = known
            role = ROLE_OP
        else:
            op_type = str(op.type)
            # TorchLens' pseudo-ops carry their role as their type (input / output / buffer);
            # the flag confirms it. Every other type is a compute op (one attribute read).
            role = role_of(op_type, ROLE_OP)
            if role != ROLE_OP and not getattr(op, _PSEUDO_FLAGS[role]):
                role = ROLE_OP
            function = mo_index = layer_address = None
            n_params = 0
            params = ()
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
        parents: tuple[str, ...] = ()
        ports: tuple[str, ...] = ()
        parents_raw: tuple[str, ...] = ()
        if raw_parents:
            parents_raw = tuple(map(str, raw_parents))
            if hidden:  # only the wiring counts for a hidden buffer, not its argument slots
                parents = tuple([name_of.get(ref) or name_of[str(log.ops[ref].label)] for ref in parents_raw])
            else:
                parents, ports = _wire(log, name_of, parents_raw, op.parent_arg_positions)
        # Module calls place ops in the module view (and count hidden buffers per call there).
        raw_calls = None if brief or (hidden and not module_calls) else op.module_call_stack
        calls = tuple(map(str, raw_calls)) if raw_calls else ()
        if is_buffer:
            address = buffer_address
        elif known is not None and (layer_address or not calls):
            address = layer_address if calls else None
        elif calls:
            # The innermost call's module: a call label is "<address>:<call index>", and
            # TorchLens' op.address is that address (a test holds it to this), one read less.
            address, sep, _ = calls[-1].rpartition(":")
            if not sep:
                address = getattr(op, "address", None)
                address = str(address) if address else None
            address = address or None
        else:
            address = None
        # What each role carries; anything it does not is None (shown nowhere).
        shape = dtype = module_path = duration = flops = nbytes = None
        buffer_access = where = None
        # A buffer the policy hides is read only as far as the policy needs it.
        if not hidden:
            shape = _shape(op.shape)
            dtype_raw = op.dtype
            try:
                dtype = dtype_names[dtype_raw]
            except KeyError:
                dtype = dtype_names[dtype_raw] = _dtype_name(dtype_raw)
            except TypeError:
                dtype = _dtype_name(dtype_raw)
            if role != ROLE_OUTPUT:
                nbytes = _count(op.activation_memory)
            if not is_buffer and address and calls:
                module_path = address
            if is_buffer:
                buffer_access = _buffer_access(op, parents_raw)
            elif role == ROLE_OP:
                if known is None:
                    n_params = int(op.num_params or 0)
                    if n_params:
                        params = tuple(
                            (str(n), tuple(int(d) for d in s))
                            for n, s in zip(list(op.param_names or ()), list(op.param_shapes or ()))
                        )
                    function = str(op.func_qualname or op.func_name)
                    index = op.multi_output_index
                    if index is not None and getattr(op, "in_multi_output", False):
                        mo_index = int(index)
                    layer_facts[layer] = (op_type, function, n_params, params, mo_index, address)
                if not brief:
                    where = location(op.code_context)
                duration = finite_float(op.func_duration)
                flops = _count(op.flops_forward)
        append(
            OpIR(
                name,
                layer,
                pass_index,
                passes[layer],
                op_type,
                role,
                shape,
                dtype,
                parents,
                ports,
                function,
                calls,
                module_path,
                duration,
                flops,
                nbytes,
                n_params,
                params,
                mo_index,
                buffer_address,
                buffer_access,
                where,
                stats_of(getattr(op, "out", None)) if stats_of is not None and not hidden else None,
                _returned_as(op) if role == ROLE_OUTPUT else None,
            )
        )
    return TraceIR(
        ops=tuple(ops),
        calls=_read_calls(log) if module_calls else (),
        model_class=str(log.modules["self"].class_name or "Model"),
        honesty=_read_honesty(log),
        torchlens_version=_version("torchlens"),
        torch_version=_version("torch"),
    )


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


_ARG_PORTS = tuple(f"arg{i}" for i in range(64))


def _wire(
    log: Any, name_of: dict[str, str], parents_raw: tuple[str, ...], arg_positions: Any
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Parent node names in argument order, and the argument slot each one fills."""
    if len(parents_raw) == 1 and type(arg_positions) is dict and not arg_positions.get("kwargs"):
        # The most common op: one tensor argument, in one positional slot.
        args = arg_positions.get("args")
        if args and len(args) == 1:
            ((pos, ref),) = args.items()
            only = parents_raw[0]
            if type(pos) is int and 0 <= pos < 64 and (ref if type(ref) is str else str(ref)) == only:
                return (name_of.get(only) or name_of[str(log.ops[only].label)],), (_ARG_PORTS[pos],)
    unique = len(parents_raw) == 1 or len(set(parents_raw)) == len(parents_raw)
    if unique and type(arg_positions) is dict and not arg_positions.get("kwargs"):
        # The common case: positional tensors only, no parent twice. Each parent fills its
        # lowest position (as _port_names orders them).
        lowest: dict[str, int] = {}
        for pos, ref in (arg_positions.get("args") or {}).items():
            if type(pos) is not int:
                break
            ref = ref if type(ref) is str else str(ref)
            known = lowest.get(ref)
            if known is None or pos < known:
                lowest[ref] = pos
        else:
            names: list[str] = []
            ports: list[str] = []
            for i, ref in enumerate(parents_raw):
                names.append(name_of.get(ref) or name_of[str(log.ops[ref].label)])
                pos = lowest.get(ref)
                ports.append(f"in{i}" if pos is None else _ARG_PORTS[pos] if pos < 64 else f"arg{pos}")
            return tuple(names), tuple(ports)
    slots = _port_names(arg_positions, parents_raw)
    if unique:
        names_of = [name_of.get(ref) or name_of[str(log.ops[ref].label)] for ref in parents_raw]
        slot_of = [slots.get(ref) for ref in parents_raw]
        return tuple(names_of), tuple(s[0] if s else f"in{i}" for i, s in enumerate(slot_of))
    parents: list[str] = []
    port_list: list[str] = []
    used: Counter[str] = Counter()
    for ref in parents_raw:
        parents.append(name_of.get(ref) or name_of[str(log.ops[ref].label)])
        slot_names = slots.get(ref, ())
        k = used[ref]
        used[ref] += 1
        port_list.append(slot_names[k] if k < len(slot_names) else f"in{len(port_list)}")
    return tuple(parents), tuple(port_list)


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


@functools.lru_cache(maxsize=None)
def _version(dist: str) -> str:
    """The version of ``dist`` as imported: its module's ``__version__`` (the code that made
    the trace), else the installed distribution's metadata, else ``"unknown"``.

    The module attribute comes first because it is free, while the first metadata lookup of
    a process scans every ``sys.path`` entry (paid by each CLI export).
    """
    module = sys.modules.get(dist)
    text = getattr(module, "__version__", None)
    if text:
        return str(text)
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(dist)
    except PackageNotFoundError:
        return "unknown"


def saved_trace(path: str | Path) -> Path:
    """The folder of a trace saved with ``torchlens.save``, checked without loading it.

    Raises:
        TlnetronError: ``trace_unreadable`` when the path is not a TorchLens save.
    """
    p = Path(path)
    if not p.exists():
        raise TlnetronError(
            ErrorCode.TRACE_UNREADABLE,
            f"{str(p)!r} does not exist.",
            where=str(p),
            remedy="check the path, or save the trace first with torchlens.save(log, 'run.tlspec').",
        )
    if not p.is_dir() or not (p / "manifest.json").is_file():
        raise TlnetronError(
            ErrorCode.TRACE_UNREADABLE,
            f"{str(p)!r} is not a TorchLens save (a folder with manifest.json written by torchlens.save).",
            where=str(p),
            remedy="save the trace with torchlens.save(log, 'run.tlspec') and pass that folder.",
        )
    return p


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


def _node_name_map(log: Any) -> dict[str, str]:
    labels, layers, _ = _labels(log, list(log.ops))
    return _node_names(labels, layers, Counter(layers))


def self_baseline_refusal(what: str) -> TlnetronError:
    """The refusal of a baseline that is the exported capture itself (``what`` it is).

    Raised by :func:`read_diff` for the same Trace object, and by the command line for the
    same saved trace, before it is loaded twice.
    """
    return TlnetronError(
        ErrorCode.INVALID_BASELINE,
        f"the baseline is {what}: the diff of a capture with itself is vacuous.",
        where="baseline",
        remedy=(
            "pass the reference run's trace (",
            Opt("baseline", Placeholder("ref_log")),
            ", from a second torchlens.trace call), or a run identifier (",
            Opt("baseline", "run-id"),
            ").",
        ),
    )


def read_diff(subject: Any, reference: Any) -> DiffIR:
    """Run TorchLens' own guarded differential and read its settled rows into the IR.

    Uses ``torchlens.report.diff`` where the installed TorchLens has it, else
    ``torchlens.differential.diff_report`` (2.36). tlnetron never pairs ops itself.

    Raises:
        TlnetronError: ``invalid_baseline`` when the baseline is the subject itself or not a
            Trace; ``baseline_refused`` when TorchLens refuses the pair.
    """
    if reference is subject:
        raise self_baseline_refusal("the same Trace object as the one being exported")
    if not is_trace(reference):
        raise TlnetronError(
            ErrorCode.INVALID_BASELINE,
            f"baseline must be a torchlens Trace or a string, got {type(reference).__name__}.",
            where="baseline",
            remedy=(
                "pass ",
                Opt("baseline", Placeholder("ref_log")),
                " (a Trace) or ",
                Opt("baseline", "run-id"),
                " (recorded verbatim).",
            ),
        )
    import torchlens

    report_mod = getattr(torchlens, "report", None)
    differ = getattr(report_mod, "diff", None)
    source = "torchlens.report.diff"
    if not callable(differ):
        from torchlens import differential

        differ = differential.diff_report
        source = "torchlens.differential.diff_report"
    try:
        report = differ(subject, reference)
    except Exception as exc:
        raise TlnetronError(
            ErrorCode.BASELINE_REFUSED,
            f"TorchLens refused to compare the two captures "
            f"({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}).",
            where="baseline",
            remedy=(
                "compare two captures of the same model family (see TorchLens' differential docs), "
                "or record a run identifier: ",
                Opt("baseline", "run-id"),
                ".",
            ),
        ) from exc
    try:
        names = _node_name_map(subject)
        rows = []
        for row in report.rows:
            label = row.subject_label
            delta = finite_float(row.max_abs_delta)
            rows.append(
                DiffRow(
                    status=str(row.status),
                    subject=names.get(str(label), str(label)) if label else None,
                    reference=str(row.reference_label) if row.reference_label else None,
                    max_abs_delta=delta,
                    verdict=str(row.verdict) if row.verdict else None,
                    detail=str(row.detail) if row.detail else None,
                )
            )
        counts = tuple(sorted((str(k), int(v)) for k, v in dict(report.counts).items()))
    except Exception as exc:
        raise TlnetronError(
            ErrorCode.TRACE_UNREADABLE,
            f"could not read TorchLens' diff report ({type(exc).__name__}: {exc}).",
            where="baseline",
            remedy="use the torchlens version tlnetron supports (see pyproject.toml).",
        ) from exc
    return DiffIR(
        rows=tuple(rows),
        counts=counts,
        source=source,
        subject_name=_describe(subject),
        reference_name=_describe(reference),
    )


def _describe(log: Any) -> str:
    try:
        return f"{log.modules['self'].class_name} trace, {int(log.num_ops)} ops"
    except Exception:
        return "trace"

"""tlnetron's own intermediate representation of a trace (stage 1 output).

The trace reader (:mod:`tlnetron.read.trace`) is the only code that touches torchlens; it turns a
``Trace`` into these frozen objects. Everything downstream (projections, the ONNX builder,
the companion) sees only this IR, so it can be unit-tested and fuzzed without tracing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field

from .._generated.vocab import NodeRole
from .._records import record

__all__ = [
    "DiffRow",
    "DiffIR",
    "Honesty",
    "ModuleCallIR",
    "OpIR",
    "TensorStats",
    "TraceIR",
    "ROLE_BUFFER",
    "ROLE_INPUT",
    "ROLE_OP",
    "ROLE_OUTPUT",
]

# An op's role in the IR: the node roles it keeps as it becomes a node.
ROLE_OP = NodeRole.OP
ROLE_INPUT = NodeRole.INPUT
ROLE_OUTPUT = NodeRole.OUTPUT
ROLE_BUFFER = NodeRole.BUFFER

Dim = int | str
"""A dimension: an int, or a string when it is not one number (e.g. ``'1..4'`` in a rolled layer)."""


@record
class TensorStats:
    """Statistics of one captured output tensor (read by :mod:`tlnetron.read.trace`).

    Counts are over every element. ``min``, ``max``, ``mean`` and ``std`` (population,
    correction 0) are over the *finite* elements only, so they are finite numbers or None:
    None when no element is finite (or the tensor is empty), for complex tensors (no
    order; only the counts are kept), and ``std`` for bool (``mean`` is then the fraction
    of True). Integer tensors keep an exact int ``min`` / ``max``.
    """

    numel: int
    nan_count: int = 0
    inf_count: int = 0
    zero_count: int = 0
    min: float | int | None = None
    max: float | int | None = None
    mean: float | None = None
    std: float | None = None

    @property
    def finite(self) -> bool:
        """True when no element is NaN or Inf."""
        return not (self.nan_count or self.inf_count)


@record
class OpIR:
    """One executed op (one pass), or an input / output / buffer pseudo-op.

    ``name`` is the node name: the verbatim TorchLens label, the layer label for a
    single-pass layer (``log["conv2d_1_1"]``) and the pass-qualified label otherwise
    (``log["linear_1_1:2"]``). ``parents`` are node names, in argument order, repeated
    when an argument repeats; ``ports`` names each parent's argument slot.
    """

    name: str
    layer: str
    pass_index: int
    num_passes: int
    op_type: str
    role: str
    shape: tuple[Dim, ...] | None
    dtype: str | None
    parents: tuple[str, ...] = ()
    ports: tuple[str, ...] = ()
    function: str | None = None
    module_calls: tuple[str, ...] = ()
    module_path: str | None = None
    duration_s: float | None = None
    flops: int | None = None
    nbytes: int | None = None
    num_params: int = 0
    params: tuple[tuple[str, tuple[int, ...]], ...] = ()
    multi_output_index: int | None = None
    buffer_address: str | None = None
    buffer_access: str | None = None
    location: str | None = None
    stats: TensorStats | None = None
    """Statistics of the captured output tensor; None when nothing was captured (or read)."""
    returned_as: str | None = None
    """An output pseudo-op: where its tensor sits in what the model returned, as TorchLens'
    ``io_role`` says it (``output``, ``output.logits``, ``output.cache.layers.0.keys``,
    ``output.0``); None when not known."""


@record
class ModuleCallIR:
    """One call of an ``nn.Module``: ``label`` is TorchLens' ``'<address>:<call>'``."""

    label: str
    address: str
    call_index: int
    class_name: str
    parent: str | None
    num_params: int = 0


@dataclass(frozen=True, slots=True)
class Honesty:
    """What TorchLens says about how far the capture can be trusted."""

    capture_status: str = "unknown"
    reason: str | None = None
    verified: bool | None = None
    structure_only: bool = False
    state: str | None = None
    interventions: tuple[tuple[str, str, str, int], ...] = ()
    trace_op_count: int = 0


@dataclass(frozen=True, slots=True)
class DiffRow:
    """One settled row of TorchLens' guarded differential, keyed by the subject op."""

    status: str
    subject: str | None
    reference: str | None
    max_abs_delta: float | None
    verdict: str | None
    detail: str | None


@dataclass(frozen=True, slots=True)
class DiffIR:
    """The differential between the subject trace and a baseline trace."""

    rows: tuple[DiffRow, ...]
    counts: tuple[tuple[str, int], ...]
    source: str
    subject_name: str
    reference_name: str


@dataclass(frozen=True, slots=True)
class TraceIR:
    """A whole trace: ops in execution order, module calls in call order, honesty facts."""

    ops: tuple[OpIR, ...]
    calls: tuple[ModuleCallIR, ...] = ()
    model_class: str = "Model"
    honesty: Honesty = field(default_factory=Honesty)
    torchlens_version: str = ""
    torch_version: str = ""
    late_stats: Callable[[], Mapping[int, TensorStats]] | None = None
    """Statistics still being read beside the export, by op index (their ``OpIR.stats`` are
    None); calling it waits for them. None when every op's ``stats`` is final."""

    def op_stats(self) -> Iterator[tuple[OpIR, TensorStats]]:
        """Each op that has statistics, with them, in execution order."""
        late = self.late_stats() if self.late_stats is not None else {}
        for at, op in enumerate(self.ops):
            stats = op.stats if op.stats is not None else late.get(at)
            if stats is not None:
                yield op, stats

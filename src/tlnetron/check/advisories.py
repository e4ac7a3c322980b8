"""The export's advisories: coded warnings about the view (recorded in the artifact's
``torchlens.warnings``) and about this machine (given, never recorded), each worded once."""

from __future__ import annotations

from pathlib import Path

from .._generated.vocab import CaptureStatus, Granularity, WarningCode
from ..build import _onnx as onnx  # onnx without its __init__ (numpy, ml_dtypes)
from ..errors import Opt, Text
from ..ir.drawing import ELEM_TYPES, Projection
from ..ir.trace import TraceIR
from ..views.nodes import LEGIBILITY_BUDGET
from .onnx_check import QUADRATIC_CHECK_FROM_FUNCTIONS, checker_is_quadratic

__all__ = ["Advisory", "checker_advisory", "view_advisories"]

Advisory = tuple[str, Text]
"""A warning code and its message."""

_SHADOWED = {"model.json", "manifest.json", "metadata.json", "serialized_exported_program.json"}
"""File names Netron offers to other formats' readers before its ONNX JSON reader."""


def _legibility_remedy(projection: Projection) -> tuple[str | Opt, ...]:
    if projection.granularity != Granularity.MODULE:
        return (
            "use the module view (",
            Opt("granularity", "module"),
            ", the default) to fold modules into drill-down boxes",
        )
    if (projection.depth or 1) > 1:
        return (
            "pass a lower ",
            Opt("depth"),
            f" (this view groups at depth {projection.depth}) to fold more into boxes",
        )
    return ("trace a sub-module on its own; at depth 1 the top-level modules already fold what they can",)


def view_advisories(projection: Projection, ir: TraceIR, path: Path | None) -> list[Advisory]:
    """What the artifact's reader should know about this view of this trace, in order."""
    out: list[Advisory] = []
    if projection.root_ranks > LEGIBILITY_BUDGET:
        out.append(
            (
                WarningCode.LEGIBILITY_BUDGET_EXCEEDED,
                (
                    f"the root graph is {projection.root_ranks} boxes deep, past the ~{LEGIBILITY_BUDGET}-rank "
                    "budget Netron "
                    "draws legibly (it will render as a tall rope). Remedy: ",
                    *_legibility_remedy(projection),
                    ".",
                ),
            )
        )
    if projection.inlined_calls:
        out.append(
            (
                WarningCode.FUNCTION_LIMIT_INLINED,
                (
                    f"{projection.inlined_calls} module calls are drawn inline (the deepest levels first): the "
                    "ONNX checker "
                    "allows at most 10,000 functions. Remedy: export a sub-module's trace, or pass a larger ",
                    Opt("depth"),
                    " so fewer calls nest.",
                ),
            )
        )
    untyped = sorted({op.dtype for op in ir.ops if op.dtype is not None and op.dtype not in ELEM_TYPES})
    if untyped:
        out.append(
            (
                WarningCode.DTYPE_NOT_REPRESENTABLE,
                (
                    f"dtypes with no ONNX element type ({', '.join(untyped)}): their edges carry no shape; "
                    "each producer says why in its untyped_output attribute."
                ),
            )
        )
    if ir.honesty.capture_status != CaptureStatus.COMPLETE:
        out.append(
            (
                WarningCode.CAPTURE_INCOMPLETE,
                (
                    f"the capture outcome is {ir.honesty.capture_status!r}: the artifact draws only what was captured "
                    "(torchlens.capture_outcome says so)."
                ),
            )
        )
    if path is not None and (path.name.lower() in _SHADOWED or path.name.lower().endswith(".metadata.json")):
        out.append(
            (
                WarningCode.NETRON_FILENAME_SHADOWED,
                (
                    f"Netron offers a file named {path.name!r} to other formats' readers first (Netron 9.3.3 "
                    "still opens "
                    f"tlnetron's as ONNX; other versions may not). Remedy: name it {path.stem}.onnx.json."
                ),
            )
        )
    return out


def checker_advisory(n_functions: int, check_seconds: float, split: bool = False) -> Advisory | None:
    """About this machine's onnx, not the artifact: its full check is quadratic in functions
    (unless the check ran split, ``onnx_check.check_onnx``: then it was linear)."""
    if split or n_functions < QUADRATIC_CHECK_FROM_FUNCTIONS or not checker_is_quadratic():
        return None
    return (
        WarningCode.ONNX_CHECKER_QUADRATIC,
        (
            f"onnx {onnx.__version__}'s full check grows with the square of the number of module functions; "
            f"this view has {n_functions:,}, and onnx.checker took {check_seconds:.1f} s of the export. "
            "Remedy: pip install 'onnx==1.22.0' (the same checks, in time linear in the functions), "
            "or fewer module boxes: a larger ",
            Opt("depth"),
            ", or a sub-module's trace.",
        ),
    )

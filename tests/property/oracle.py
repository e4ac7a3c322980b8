"""The oracle of the property tests: what every export must satisfy, checked independently.

:func:`run_export` runs ``export_ir`` with warnings captured; :func:`check_outcome` asserts
the export either

(a) succeeded -- the artifact strict-parses into ``onnx.ModelProto``, equals what
    ``MessageToDict`` gives for it, passes ``onnx.checker.check_model(full_check=True)``,
    uses only camelCase keys and numeric elemTypes (Netron's ProtoReader JSON path), its
    model metadata and every tlnetron node's properties validate with **jsonschema**
    against the checked-in ``schema/*.json`` (not tlnetron's generated validators), every
    module call resolves to exactly one function, every companion row resolves to
    something Netron shows, no (kind, target, name) repeats in a section, every number is
    finite, both files carry the same export id, which is the sha256 of the two files with
    the id zeroed (recomputed here), ``tlnetron.check.validation`` and ``tlnetron validate`` find
    no problem, and what the artifact states agrees with the trace (:mod:`semantics`:
    types, facts); or

(b) refused with a :class:`~tlnetron.TlnetronError` whose code is in the ``error_code``
    vocabulary, and wrote nothing.

Vocabularies come from ``schema/vocabularies.schema.json``; nothing here retypes them.
"""

from __future__ import annotations

import ast
import contextlib
import hashlib
import io
import re
import json
import math
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import onnx
from google.protobuf import json_format
from jsonschema import Draft7Validator
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT7

from tlnetron import TlnetronError, TlnetronWarning, cli
from tlnetron._generated.vocab import CompanionRow
from tlnetron.api import ExportResult
from tlnetron.pipeline import export_ir
from tlnetron.ir.trace import TraceIR
from tlnetron.check.pairs import pair_mismatch, shown_in_model
from tlnetron.check.validation import artifact_problems, companion_problems, parse_artifact

from semantics import DOMAIN_LOSSY, DOMAIN_MODULE, bodies, check_facts, check_no_nonfinite_text, check_types

__all__ = [
    "ARTIFACT_NAME",
    "COMPANION_KINDS",
    "ERROR_CODES",
    "Outcome",
    "SCHEMAS",
    "VALIDATORS",
    "WARNING_CODES",
    "check_outcome",
    "check_success",
    "companion_name",
    "files_of",
    "ir_literal",
    "run_export",
    "run_public_export",
    "strict_json",
    "vocabulary",
]

ROOT = Path(__file__).resolve().parents[2]
SCHEMA_DIR = ROOT / "schema"
ARTIFACT_NAME = "model.onnx.json"
COMPANION_NAME = "model.onnx.attachment.json"


def companion_name(artifact_name: str) -> str:
    """``<stem>.attachment.json``: where the companion of ``artifact_name`` is written."""
    return f"{Path(artifact_name).stem}.attachment.json"


SCHEMAS: dict[str, dict[str, Any]] = {
    p.name.removesuffix(".schema.json"): json.loads(p.read_text(encoding="utf-8"))
    for p in sorted(SCHEMA_DIR.glob("*.schema.json"))
}
_REGISTRY: Registry = Registry().with_resources(
    (s["$id"], Resource.from_contents(s, default_specification=DRAFT7)) for s in SCHEMAS.values()
)
VALIDATORS = {
    name: Draft7Validator(SCHEMAS[name], registry=_REGISTRY)
    for name in ("model-metadata", "node-properties", "companion", "baseline-summary")
}


def vocabulary(name: str) -> tuple[str, ...]:
    """Members of a closed vocabulary in schema order (``enum``, or ``oneOf`` of ``const``s)."""
    definition = SCHEMAS["vocabularies"]["definitions"][name]
    if "enum" in definition:
        return tuple(definition["enum"])
    return tuple(b["const"] for b in definition["oneOf"])


def _vocabulary(name: str) -> frozenset[str]:
    return frozenset(vocabulary(name))


ERROR_CODES = _vocabulary("error_code")
WARNING_CODES = _vocabulary("warning_code")
COMPANION_KINDS = _vocabulary("companion_kind")
NODE_ROLES = _vocabulary("node_role")
_JSON_KEYS = frozenset(
    k for k, v in SCHEMAS["model-metadata"]["properties"].items() if v.get("x-tlnetron-encoding") == "json"
)
# File names Netron hands to another format's reader first (reader contract, section 1).
_SHADOWED = {"model.json", "manifest.json", "metadata.json", "serialized_exported_program.json"}


def ir_literal(ir: TraceIR) -> str:
    """A Python literal of ``ir`` (``from tlnetron.ir.trace import *``).

    NaN and infinity are written as ``math.nan`` / ``math.inf``.
    """
    return repr(ir)


def _reject_constant(token: str) -> Any:
    raise ValueError(f"{token} is not JSON")


def strict_json(text: str) -> Any:
    """``json.loads`` that refuses NaN / Infinity (they are not JSON)."""
    return json.loads(text, parse_constant=_reject_constant)


@dataclass
class Outcome:
    result: ExportResult | None
    error: TlnetronError | None
    warnings: list[warnings.WarningMessage]
    directory: Path
    options: dict[str, Any]
    name: str = ARTIFACT_NAME

    @property
    def artifact(self) -> Path:
        return self.directory / self.name

    @property
    def companion(self) -> Path:
        return self.directory / companion_name(self.name)


def run_export(ir: TraceIR, directory: Path, options: dict[str, Any]) -> Outcome:
    """``export_ir(ir, ...)`` into ``directory``; only :class:`TlnetronError` is caught."""
    return _run(export_ir, ir, directory, options)


def run_public_export(trace: Any, directory: Path, options: dict[str, Any]) -> Outcome:
    """``tlnetron.export(trace, ...)`` into ``directory``; only :class:`TlnetronError` is caught."""
    from tlnetron import export

    return _run(export, trace, directory, options)


def _run(fn: Any, subject: Any, directory: Path, options: dict[str, Any]) -> Outcome:
    """Run ``fn(subject, directory / name, **options)``; ``options["name"]`` is the file name."""
    directory.mkdir(parents=True, exist_ok=True)
    opts = {"depth": None, "attachment": None, **options}
    name = opts.pop("name", ARTIFACT_NAME)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            result = fn(subject, directory / name, **opts)
        except TlnetronError as exc:
            return Outcome(None, exc, list(caught), directory, opts, name)
    return Outcome(result, None, list(caught), directory, opts, name)


def files_of(directory: Path) -> dict[str, bytes]:
    """Every file in ``directory`` by name (for determinism checks)."""
    return _files(directory)


def _files(directory: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(directory.iterdir())}


def check_outcome(ir: TraceIR | None, outcome: Outcome) -> None:
    """Assert (a) a fully valid success or (b) a documented refusal that wrote nothing."""
    for w in outcome.warnings:
        assert issubclass(w.category, TlnetronWarning), f"unexpected warning {w.category.__name__}: {w.message}"
        assert isinstance(w.message, TlnetronWarning) and w.message.code in WARNING_CODES, str(w.message)
    if outcome.error is not None:
        exc = outcome.error
        assert exc.code in ERROR_CODES, f"undocumented error code {exc.code!r}"
        assert str(exc).startswith(f"[{exc.code}]")
        leftovers = _files(outcome.directory)
        assert not leftovers, f"a refusal ({exc.code}) wrote {sorted(leftovers)}"
        return
    assert outcome.result is not None
    check_success(ir, outcome)


def check_success(ir: TraceIR | None, outcome: Outcome) -> None:
    result = outcome.result
    assert result is not None
    opts = outcome.options
    files = _files(outcome.directory)
    expect_companion = opts["attachment"] is not False
    artifact_name, cname = outcome.name, companion_name(outcome.name)
    assert sorted(files) == sorted([artifact_name] + ([cname] if expect_companion else [])), sorted(files)
    text = files[artifact_name].decode("utf-8")
    assert text == result.artifact_json
    assert result.artifact == outcome.artifact

    # --- the artifact: strict JSON, camelCase keys only, strict protobuf parse ---------
    data = strict_json(text)
    for key in _keys(data):
        assert "_" not in key, f"snake_case key {key!r}: Netron's ProtoReader JSON path refuses it"
    for value in _values_of(data, "elemType"):
        # A tensor's elemType is a number; a sequence's (a structure) is the tensor type inside.
        assert isinstance(value, int) or (isinstance(value, dict) and set(value) == {"tensorType"}), (
            f"elemType {value!r} must be numeric for Netron"
        )
    model = json_format.Parse(text, onnx.ModelProto())
    assert json_format.MessageToDict(model) == data, "the artifact is not MessageToDict of its own proto"
    onnx.checker.check_model(model, full_check=True)
    assert model.ir_version == 10
    for field_text in (model.producer_name, model.producer_version):
        assert field_text.isascii() and field_text.isprintable(), f"Netron fails on producer {field_text!r}"

    # --- model metadata, validated with jsonschema -------------------------------------
    keys = [p.key for p in model.metadata_props]
    assert len(keys) == len(set(keys)), f"repeated metadata keys {keys}"
    decoded = {p.key: (strict_json(p.value) if p.key in _JSON_KEYS else p.value) for p in model.metadata_props}
    errors = sorted(VALIDATORS["model-metadata"].iter_errors(decoded), key=lambda e: list(e.path))
    assert not errors, f"model metadata: {errors[0].message} at {list(errors[0].path)}"
    assert decoded["torchlens.granularity"] == opts["granularity"]
    assert decoded["torchlens.show_buffers"] == opts["show_buffers"]
    assert decoded["torchlens.node_count"] == len(model.graph.node) == result.node_count
    assert decoded["torchlens.function_count"] == len(model.functions) == result.function_count
    assert set(result.warnings) <= WARNING_CODES
    emitted = {w.message.code for w in outcome.warnings if isinstance(w.message, TlnetronWarning)}
    assert emitted <= set(result.warnings)
    shadowed = artifact_name.lower() in _SHADOWED or artifact_name.lower().endswith(".metadata.json")
    assert ("netron_filename_shadowed" in emitted) == shadowed, f"{artifact_name!r}: {sorted(emitted)}"
    assert decoded.get("torchlens.warnings", []) == sorted(set(result.warnings))
    if ir is not None:
        assert decoded["torchlens.capture_outcome"] == ir.honesty.capture_status
        # Literal words from the spec, not tlnetron's constants: the oracle checks them independently.
        assert ("capture_incomplete" in emitted) == (ir.honesty.capture_status != "complete")
    if opts["granularity"] == "module" and opts.get("depth") is not None:  # the spec's word for the module view
        assert decoded["torchlens.depth"] == opts["depth"]
    _check_export_id(decoded, result, files[artifact_name], files[cname] if expect_companion else None)

    check_no_nonfinite_text(model)

    # --- every tlnetron node's properties, validated with jsonschema -------------------
    # --- and every module call drills down: it resolves to exactly one function ---------
    functions_by_key: dict[tuple[str, str, str], int] = {}
    for f in model.functions:
        assert f.domain, f"function {f.name!r}: Netron never matches a function in the default domain"
        fkey = (f.domain, f.name, f.overload)
        functions_by_key[fkey] = functions_by_key.get(fkey, 0) + 1
    assert all(n == 1 for n in functions_by_key.values()), (
        f"functions share (domain, name, overload): {functions_by_key}"
    )
    shown_nodes: set[str] = set()
    for where, body in bodies(model):
        for node in body.node:
            shown_nodes.add(node.name.split("\n", 1)[0])
            assert node.name, f"{where}: an unnamed node (Netron cannot target it)"
            assert all(node.input) and all(node.output), f"{where} node {node.name!r}: an empty value name"
            if node.domain == DOMAIN_MODULE:
                call_key = (node.domain, node.op_type, node.overload)
                assert call_key in functions_by_key, f"{where} node {node.name!r}: no function {call_key} to drill into"
            if node.domain not in (DOMAIN_LOSSY, DOMAIN_MODULE):
                continue
            _check_node(where, node)

    # --- edge types agree with the trace -----------------------------------------------
    if ir is not None:
        check_types(ir, model, opts)

    # --- tlnetron's own validation agrees ----------------------------------------------
    parsed, problems = parse_artifact(text)
    assert parsed is not None and not problems, [p.line() for p in problems]
    problems = list(artifact_problems(parsed))
    assert not problems, [p.line() for p in problems]

    # --- the companion -----------------------------------------------------------------
    if not expect_companion:
        assert result.companion is None and result.companion_json is None
        return
    assert result.companion == outcome.companion
    ctext = files[cname].decode("utf-8")
    assert ctext == result.companion_json
    companion = strict_json(ctext)
    errors = list(VALIDATORS["companion"].iter_errors(companion))
    assert not errors, f"companion: {errors[0].message} at {list(errors[0].path)}"
    assert companion["signature"] == "netron:attachment"  # Netron's own word (reader contract), checked independently
    assert {"kind": "model", "target": "", "name": CompanionRow.COMPANION_OF, "value": artifact_name} in companion[
        "metadata"
    ]
    functions = {f.name for f in model.functions}
    shown_values = shown_in_model(parsed).values
    for section in ("metadata", "metrics"):
        seen: set[tuple[str, str, str]] = set()
        for i, row in enumerate(companion[section]):
            kind, target, name = row["kind"], row["target"], row["name"]
            assert kind in COMPANION_KINDS
            # Kinds spelled as Netron's reader contract spells them: what each must target is the oracle's own rule.
            if kind == "model":
                assert target == "", f"{section}[{i}]: a model row must target ''"
            elif kind == "node":
                assert target in shown_nodes, f"{section}[{i}] targets {target!r}: no node has that name"
            elif kind == "graph":
                assert target in functions | {""}, f"{section}[{i}] targets {target!r}"
            elif kind == "value":
                assert target in shown_values, f"{section}[{i}] targets {target!r}: no drawn value has that name"
            else:
                raise AssertionError(f"{section}[{i}]: tlnetron writes no {kind} rows")
            row_key = (kind, target, name)
            assert row_key not in seen, f"{section}[{i}] repeats {row_key}"
            seen.add(row_key)
            _assert_finite(row["value"], f"{section}[{i}]")
    problems = list(companion_problems(companion, shown_in_model(parsed)))
    assert not problems, [p.line() for p in problems]
    assert pair_mismatch(parsed, companion) is None and pair_mismatch(files[artifact_name], companion) is None
    if ir is not None:
        check_facts(ir, model, companion, opts)

    # --- the command line agrees -----------------------------------------------------------
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        code = cli.main(["validate", str(outcome.artifact), "--attachment", str(outcome.companion)])
    assert code == cli.EXIT_OK, out.getvalue()


def _check_export_id(decoded: dict[str, Any], result: ExportResult, artifact: bytes, companion: bytes | None) -> None:
    """Both files carry the export's id, and it is the first 32 hex digits of the sha256 of
    the artifact's bytes and then the companion's, each with the id zeroed."""
    export_id = decoded[CompanionRow.TORCHLENS_EXPORT_ID]  # the same name in both files
    assert re.fullmatch("[0-9a-f]{32}", export_id) and export_id == result.export_id, (export_id, result.export_id)
    zeroed = [artifact.replace(export_id.encode(), b"0" * 32)]
    assert artifact.count(export_id.encode()) == 1
    if companion is not None:
        rows = [
            r
            for r in strict_json(companion.decode("utf-8"))["metadata"]
            if r["name"] == CompanionRow.TORCHLENS_EXPORT_ID
        ]
        assert rows == [
            {"kind": "model", "target": "", "name": CompanionRow.TORCHLENS_EXPORT_ID, "value": export_id}
        ], rows
        assert companion.count(export_id.encode()) == 1
        zeroed.append(companion.replace(export_id.encode(), b"0" * 32))
    assert hashlib.sha256(b"".join(zeroed)).hexdigest()[:32] == export_id, "the id is not the files' digest"


def _keys(data: Any) -> Iterator[str]:
    if isinstance(data, dict):
        for k, v in data.items():
            yield k
            yield from _keys(v)
    elif isinstance(data, list):
        for v in data:
            yield from _keys(v)


def _values_of(data: Any, key: str) -> Iterator[Any]:
    if isinstance(data, dict):
        for k, v in data.items():
            if k == key:
                yield v
            yield from _values_of(v, key)
    elif isinstance(data, list):
        for v in data:
            yield from _values_of(v, key)


def _assert_finite(value: Any, where: str) -> None:
    if isinstance(value, float):
        assert math.isfinite(value), f"{where}: {value!r} is not finite"
    elif isinstance(value, list):
        for v in value:
            _assert_finite(v, where)
    else:
        assert isinstance(value, (str, int, bool)), f"{where}: {value!r} is not a value Netron renders"


def _check_node(where: str, node: onnx.NodeProto) -> None:
    names = [a.name for a in node.attribute]
    assert len(names) == len(set(names)), f"{where} node {node.name!r}: repeated attributes {names}"
    attrs: dict[str, Any] = {}
    for a in node.attribute:
        assert a.type != onnx.AttributeProto.UNDEFINED, "Netron renders an attribute without type as FLOAT 0"
        value = onnx.helper.get_attribute_value(a)
        attrs[a.name] = value.decode("utf-8") if isinstance(value, bytes) else value
    meta_keys = [p.key for p in node.metadata_props]
    assert len(meta_keys) == len(set(meta_keys)), f"{where} node {node.name!r}: repeated metadata {meta_keys}"
    meta = {p.key: p.value for p in node.metadata_props}
    if "input_names" in meta:  # Netron names the ports by position: one name per input
        names = ast.literal_eval(meta["input_names"])
        assert isinstance(names, list) and len(names) == len(node.input), (
            f"{where} node {node.name!r}: input_names {names} for inputs {list(node.input)}"
        )
    role = (
        "module_call" if node.domain == DOMAIN_MODULE else "op"
    )  # the schema's roles, spelled independently of tlnetron
    errors = list(VALIDATORS["node-properties"].iter_errors({"role": role, "attributes": attrs, "metadata": meta}))
    assert not errors, f"{where} node {node.name!r}: {errors[0].message} at {list(errors[0].path)}"

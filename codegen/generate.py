#!/usr/bin/env python
"""Generate src/tlnetron/_generated/ from the JSON Schemas in schema/.

The schemas are the single source of truth. They live, once, in ``src/tlnetron/schema/``
(the package data the wheel ships; ``tlnetron.check.schemas.schema_dir()``); ``schema/`` at the
repository root is a symlink to that folder. This script writes:

* ``__init__.py``           header only;
* ``vocab.py``              closed vocabularies, metadata key names and schema facts;
* ``validate_<name>.py``    one validator per non-vocabulary schema, compiled by
                            ``codegen/compile_schema.py`` (plain Python, no dependency);
* ``_errors.py``            the exception classes those validators raise;
* ``_runtime.py``           the helpers the validators share (data paths, JSON equality).

Usage::

    python codegen/generate.py            # (re)write the generated files
    python codegen/generate.py --check    # exit 1, listing stale/missing/extra files

Output is deterministic: no timestamps, no absolute paths, sorted file lists.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

ROOT = Path(__file__).resolve().parent.parent
# The real folder (schema/ is a symlink to it): reading it directly works in a checkout
# made without symlinks too.
DEFAULT_SCHEMA_DIR = ROOT / "src" / "tlnetron" / "schema"
DEFAULT_OUT_DIR = ROOT / "src" / "tlnetron" / "_generated"

VOCAB_FILE = "vocabularies.schema.json"
MODEL_METADATA_FILE = "model-metadata.schema.json"
NODE_PROPERTIES_FILE = "node-properties.schema.json"
COMPANION_FILE = "companion.schema.json"
SHIPPED_SCHEMA_DIR = "schema"  # where the schemas live (and ship), relative to the tlnetron package
KEY_PREFIX = "torchlens."
SCHEMA_SUFFIX = ".schema.json"

REGEN_LINE = "# Regenerate with `nox -s codegen` (or `python codegen/generate.py`)."


class CodegenError(Exception):
    """A schema breaks an assumption the generator relies on."""


# --------------------------------------------------------------------------- helpers


class Schema:
    """One checked-in schema file: its bytes, parsed JSON and digest."""

    def __init__(self, path: Path) -> None:
        self.file = path.name
        self.raw = path.read_bytes()
        self.sha256 = hashlib.sha256(self.raw).hexdigest()
        try:
            self.doc: dict[str, Any] = json.loads(self.raw.decode("utf-8"))
        except ValueError as exc:
            raise CodegenError(f"schema/{self.file}: not JSON: {exc}") from exc
        if not isinstance(self.doc, dict):
            raise CodegenError(f"schema/{self.file}: top level is not an object")
        self.id = self.doc.get("$id")
        if not isinstance(self.id, str) or not self.id:
            raise CodegenError(f"schema/{self.file}: no $id")

    @property
    def origin(self) -> str:
        return f"schema/{self.file} (sha256 {self.sha256})"


def load_schemas(schema_dir: Path) -> dict[str, Schema]:
    """Read every schema/*.json, checking the cross-file invariants."""
    paths = sorted(schema_dir.glob("*.json"))
    if not paths:
        raise CodegenError(f"no *.json schemas in {schema_dir.name}/")
    schemas = {p.name: Schema(p) for p in paths}
    for required in (VOCAB_FILE, MODEL_METADATA_FILE, NODE_PROPERTIES_FILE):
        if required not in schemas:
            raise CodegenError(f"schema/{required} is missing")
    ids: dict[str, str] = {}
    for s in schemas.values():
        if s.id in ids:
            raise CodegenError(f"schema/{s.file} and schema/{ids[s.id]} share $id {s.id}")
        ids[s.id] = s.file
        if s.doc.get("$schema") != "http://json-schema.org/draft-07/schema#":
            raise CodegenError(f"schema/{s.file}: $schema is not draft-07")
    versions = {s.file: s.doc.get("version") for s in schemas.values()}
    if len(set(map(repr, versions.values()))) != 1:
        raise CodegenError(f"schemas disagree on version: {versions}")
    version = versions[VOCAB_FILE]
    if not isinstance(version, str) or not re.fullmatch(r"[0-9]+\.[0-9]+\.[0-9]+", version):
        raise CodegenError(f"version {version!r} is not MAJOR.MINOR.PATCH")
    _check_meta_schema(schemas)
    _check_refs(schemas)
    return schemas


def _check_meta_schema(schemas: dict[str, Schema]) -> None:
    try:
        from jsonschema import Draft7Validator
        from jsonschema.exceptions import SchemaError
    except ImportError:  # pragma: no cover - jsonschema is in the test extra
        raise CodegenError("codegen needs jsonschema (pip install -e '.[test]')") from None
    for s in schemas.values():
        try:
            Draft7Validator.check_schema(s.doc)
        except SchemaError as exc:
            raise CodegenError(f"schema/{s.file}: not a valid draft-07 schema: {exc.message}") from None


def _walk_refs(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str):
            yield ref
        for value in node.values():
            yield from _walk_refs(value)
    elif isinstance(node, list):
        for value in node:
            yield from _walk_refs(value)


def _resolve_pointer(doc: Any, fragment: str) -> Any:
    if fragment in ("", "/"):
        return doc
    node = doc
    for part in fragment.lstrip("/").split("/"):
        part = part.replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            raise KeyError(fragment)
    return node


def _check_refs(schemas: dict[str, Schema]) -> None:
    by_id = {s.id: s for s in schemas.values()}
    for s in schemas.values():
        for ref in _walk_refs(s.doc):
            base, _, fragment = ref.partition("#")
            target = by_id.get(base) if base else s
            if target is None:
                raise CodegenError(f"schema/{s.file}: $ref {ref} names no checked-in schema")
            try:
                _resolve_pointer(target.doc, fragment)
            except KeyError:
                raise CodegenError(f"schema/{s.file}: $ref {ref} points at nothing") from None


def referenced_files(schema: Schema, schemas: dict[str, Schema]) -> list[str]:
    """Other schema files this schema reaches through $ref (sorted)."""
    by_id = {s.id: s.file for s in schemas.values()}
    out = {by_id[ref.partition("#")[0]] for ref in _walk_refs(schema.doc) if ref.partition("#")[0]}
    out.discard(schema.file)
    return sorted(out)


# Non-ASCII letters that have an obvious ASCII spelling in an identifier.
TRANSLITERATE = str.maketrans(
    {"\u00b5": "u", "\u03bc": "u", "\u03a3": "sum "}
)  # micro sign, Greek mu: "(µs)" -> US; "Σ" -> SUM


def upper_name(value: str) -> str:
    """``"write (inplace)"`` -> ``"WRITE_INPLACE"``: upper-case, non-alnum (ASCII) runs -> ``_``."""
    name = re.sub(r"[^0-9A-Za-z]+", "_", value.translate(TRANSLITERATE)).strip("_").upper()
    if not name.isidentifier() or not name:
        raise CodegenError(f"{value!r} gives no Python identifier")
    return name


def camel_name(value: str) -> str:
    """``"error_code"`` -> ``"ErrorCode"``."""
    name = "".join(part[:1].upper() + part[1:] for part in re.split(r"[^0-9A-Za-z]+", value) if part)
    if not name.isidentifier():
        raise CodegenError(f"{value!r} gives no Python class name")
    return name


def key_attr(key: str) -> str:
    return upper_name(key[len(KEY_PREFIX) :] if key.startswith(KEY_PREFIX) else key)


def q(value: str) -> str:
    """A Python string literal (double quotes when possible, like black)."""
    text = repr(value)
    if text.startswith("'") and '"' not in value:
        text = '"' + text[1:-1].replace("\\'", "'") + '"'
    return text


def doc(text: str) -> str:
    """A docstring literal: triple-quoted when that is safe, else a plain literal."""
    if text.isprintable() and "\\" not in text and '"' not in text[-1:] and '"""' not in text:
        return '"""' + text + '"""'
    return q(text)


def header(origins: list[str]) -> list[str]:
    if len(origins) == 1:
        first = [f"# DO NOT EDIT: generated by codegen/generate.py from {origins[0]}."]
    else:
        first = ["# DO NOT EDIT: generated by codegen/generate.py from:"]
        first += [f"#   {o}" + ("." if i == len(origins) - 1 else "") for i, o in enumerate(origins)]
    return [*first, REGEN_LINE]


def _unique(names: list[str], what: str) -> None:
    seen: set[str] = set()
    for n in names:
        if n in seen:
            raise CodegenError(f"{what}: two members map to {n}")
        seen.add(n)


# --------------------------------------------------------------------------- vocab.py


class Vocabulary(NamedTuple):
    """One closed vocabulary of schema/vocabularies.schema.json."""

    name: str  # the definition name, e.g. "buffer_policy"
    description: str
    members: list[tuple[str, str, str]]  # (value, Python constant name, description), in enum order

    @property
    def class_name(self) -> str:
        return camel_name(self.name)

    @property
    def literal_name(self) -> str:
        return literal_name(self.class_name)


def literal_name(class_name: str) -> str:
    """The naming rule of the Literal aliases: class ``BufferPolicy`` -> ``BufferPolicyName``."""
    return class_name + "Name"


def vocabularies(schema: Schema) -> list[Vocabulary]:
    """Every vocabulary, in schema order."""
    out = []
    definitions = schema.doc.get("definitions")
    if not isinstance(definitions, dict) or not definitions:
        raise CodegenError(f"schema/{schema.file}: no definitions")
    for name, definition in definitions.items():
        # Each vocabulary is {"enum": [...], "x-members": {member: description}}: validators
        # check the enum (fast), codegen documents each member from x-members. An optional
        # "x-tlnetron-names": {member: NAME} names a member's constant when upper_name(member)
        # would not read well ("ai.torchlens.lossy" -> LOSSY rather than AI_TORCHLENS_LOSSY).
        enum = definition.get("enum") if isinstance(definition, dict) else None
        docs = definition.get("x-members") if isinstance(definition, dict) else None
        if not isinstance(enum, list) or not enum or not all(isinstance(c, str) for c in enum):
            raise CodegenError(f"schema/{schema.file}: {name} has no enum of strings")
        if not isinstance(docs, dict) or list(docs) != enum or not all(isinstance(d, str) for d in docs.values()):
            raise CodegenError(
                f"schema/{schema.file}: {name}: x-members must describe every enum member, in enum order"
            )
        if len(set(enum)) != len(enum):
            raise CodegenError(f"schema/{schema.file}: {name} repeats a member")
        names = definition.get("x-tlnetron-names", {})
        if not isinstance(names, dict) or not set(names) <= set(enum):
            raise CodegenError(f"schema/{schema.file}: {name}: x-tlnetron-names must map enum members to names")
        for member, attr in names.items():
            if not isinstance(attr, str) or not re.fullmatch(r"[A-Z][A-Z0-9_]*", attr) or not attr.isidentifier():
                raise CodegenError(
                    f"schema/{schema.file}: {name}: x-tlnetron-names gives {member!r} the name {attr!r}, not "
                    "an UPPER_CASE identifier"
                )
        members = [(c, names.get(c) or upper_name(c), docs[c]) for c in enum]
        _unique([attr for _, attr, _ in members], f"vocabulary {name}")
        out.append(Vocabulary(name, str(definition.get("description", "")), members))
    _unique([upper_name(v.name) for v in out], "vocabulary names")
    _unique([v.class_name for v in out], "vocabulary class names")
    return out


def _tuple_lines(name: str, values: list[str], annotation: str = "tuple[str, ...]") -> list[str]:
    return [f"{name}: {annotation} = (", *(f"    {q(v)}," for v in values), ")"]


def _dict_lines(name: str, items: list[tuple[str, str]]) -> list[str]:
    return [f"{name}: dict[str, str] = {{", *(f"    {q(k)}: {q(v)}," for k, v in items), "}"]


def _frozenset_lines(name: str, values: list[str]) -> list[str]:
    if not values:
        return [f"{name}: frozenset[str] = frozenset()"]
    return [f"{name}: frozenset[str] = frozenset(", "    {", *(f"        {q(v)}," for v in values), "    }", ")"]


def _literal_lines(name: str, values: list[str], what: str) -> list[str]:
    """``Name: TypeAlias = Literal[...]``: the type of a value from a closed set."""
    return [
        f"{name}: TypeAlias = Literal[",
        *(f"    {q(v)}," for v in values),
        "]",
        doc(f"{what} (a plain ``str`` at run time)."),
        "",
        "",
    ]


def _class_lines(name: str, docstring: str, members: list[tuple[str, str, str]]) -> list[str]:
    """members: (attribute, value, description). Constants are ``Final``: plain ``str``
    values that mypy reads as their ``Literal`` type."""
    lines = [f"class {name}:", f"    {doc(docstring)}", ""]
    for attr, value, description in members:
        lines.append(f"    {attr}: Final = {q(value)}")
        if description:
            lines.append(f"    {doc(description)}")
    return [*lines, "", ""]


def _properties(schema: Schema, pointer: str) -> dict[str, Any]:
    node = _resolve_pointer(schema.doc, pointer)
    props = node.get("properties") if isinstance(node, dict) else None
    if not isinstance(props, dict):
        raise CodegenError(f"schema/{schema.file}: {pointer} has no properties")
    return props


# --------------------------------------------------------------------------- the metric table

METRICS_KEY = "x-tlnetron-metrics"
# How a fact's {value} is written (each names one formatting function of tlnetron) and what a
# companion row holds; a new one needs code in tlnetron, so the generator knows the set.
METRIC_FORMATS = ("duration", "flops", "bytes", "count")
COMPANION_VALUES = ("microseconds", "count")
# Where a fact comes from: op, the OpIR attribute of the same name (taken per op, summed);
# ops_counted, how many compute ops a node stands for (1 per op, the passes of a rolled node).
METRIC_SOURCES = ("op", "ops_counted")
METRIC_SCOPES = ("op", "passes", "inclusive", "total")
# Placeholders each scope's templates may use (function_doc: those of the inclusive scope
# without the note).
PLACEHOLDERS = {
    "op": ("value", "raw"),
    "passes": ("value", "raw", "passes", "per_pass"),
    "inclusive": ("value", "raw", "unknown_flops_note", "calls_note"),
    "function_doc": ("value", "raw"),
    "total": ("value", "raw"),
}
ALL_PLACEHOLDERS = ("value", "raw", "passes", "per_pass", "unknown_flops_note", "calls_note")


# Facts' fields that are not metrics: how its numbers were summed (codegen writes them after
# the metric fields, so a fact may not take one of these names).
FACTS_FIXED_FIELDS = ("inclusive", "passes", "unknown_flops", "calls")


class MetricTable(NamedTuple):
    passes_row: str
    metrics: list[dict[str, Any]]  # checked entries, in schema order


def _template(text: Any, allowed: tuple[str, ...], where: str) -> str:
    """A checked ``str.format`` template: only ``{name}`` fields from ``allowed``."""
    import string

    if not isinstance(text, str) or not text:
        raise CodegenError(f"{where}: a template must be a non-empty string, got {text!r}")
    try:
        fields = list(string.Formatter().parse(text))
    except ValueError as exc:
        raise CodegenError(f"{where}: template {text!r} does not parse: {exc}") from None
    for _, field, spec, conversion in fields:
        if field is None:
            continue
        if field not in ALL_PLACEHOLDERS:
            raise CodegenError(
                f"{where}: template {text!r} has unknown placeholder {{{field}}} (allowed: "
                f"{', '.join(ALL_PLACEHOLDERS)})"
            )
        if field not in allowed:
            raise CodegenError(
                f"{where}: template {text!r} uses {{{field}}}, which this scope does not provide (allowed: "
                f"{', '.join(allowed)})"
            )
        if spec or conversion:
            raise CodegenError(f"{where}: template {text!r}: write {{{field}}} bare (no conversion or format spec)")
    return text


def metric_table(vocab: Schema, meta: Schema, node: Schema) -> MetricTable:
    """Read and check ``x-tlnetron-metrics`` of schema/vocabularies.schema.json."""
    where = f"schema/{vocab.file}: {METRICS_KEY}"
    table = vocab.doc.get(METRICS_KEY)
    if not isinstance(table, dict) or set(table) != {"passes_row", "metrics"}:
        raise CodegenError(f"{where} must be an object with exactly passes_row and metrics")
    rows_vocab = vocab.doc.get("definitions", {}).get("companion_row", {}).get("enum", [])
    node_keys = list(_properties(node, "/properties/metadata"))
    meta_keys = list(_properties(meta, ""))
    used_rows: dict[str, str] = {}

    def row(value: Any, at: str) -> str:
        if value not in rows_vocab:
            raise CodegenError(f"{where}: {at}: row {value!r} is not in the companion_row vocabulary")
        if value in used_rows:
            raise CodegenError(f"{where}: {at}: row {value!r} is already used by {used_rows[value]}")
        used_rows[value] = at
        return str(value)

    passes_row = row(table["passes_row"], "passes_row")
    entries = table["metrics"]
    if not isinstance(entries, list) or not entries:
        raise CodegenError(f"{where}: metrics must be a non-empty list")
    out: list[dict[str, Any]] = []
    facts: set[str] = set()
    for i, entry in enumerate(entries):
        at = f"metrics[{i}]"
        if not isinstance(entry, dict) or set(entry) != {"fact", "source", "format", "companion_value", *METRIC_SCOPES}:
            raise CodegenError(
                f"{where}: {at} must have exactly fact, source, format, companion_value, {', '.join(METRIC_SCOPES)}"
            )
        fact = entry["fact"]
        if not isinstance(fact, str) or not fact.isidentifier() or fact in facts:
            raise CodegenError(f"{where}: {at}: fact {fact!r} is not an identifier or repeats another")
        facts.add(fact)
        at = f"metrics[{i}] ({fact})"
        if fact in FACTS_FIXED_FIELDS:
            raise CodegenError(
                f"{where}: {at}: fact {fact!r} is one of Facts' own fields ({', '.join(FACTS_FIXED_FIELDS)})"
            )
        if entry["source"] not in METRIC_SOURCES:
            raise CodegenError(f"{where}: {at}: source {entry['source']!r} is not one of {', '.join(METRIC_SOURCES)}")
        if entry["format"] not in METRIC_FORMATS:
            raise CodegenError(f"{where}: {at}: format {entry['format']!r} is not one of {', '.join(METRIC_FORMATS)}")
        if entry["companion_value"] not in COMPANION_VALUES:
            raise CodegenError(
                f"{where}: {at}: companion_value {entry['companion_value']!r} is not one of "
                f"{', '.join(COMPANION_VALUES)}"
            )
        checked: dict[str, Any] = {
            "fact": fact,
            "source": entry["source"],
            "format": entry["format"],
            "companion_value": entry["companion_value"],
        }
        for scope in METRIC_SCOPES:
            wording = entry[scope]
            here = f"{at}.{scope}"
            if wording is None:
                checked[scope] = None
                continue
            key_field = "model_meta" if scope == "total" else "node_meta"
            fields = {key_field, "text", "rows"} | ({"share_row", "function_doc"} if scope == "inclusive" else set())
            if not isinstance(wording, dict) or set(wording) != fields:
                raise CodegenError(f"{where}: {here} must be null or have exactly {', '.join(sorted(fields))}")
            key = wording[key_field]
            if scope == "total" and key not in meta_keys:
                raise CodegenError(f"{where}: {here}: model_meta {key!r} is not a key of schema/{meta.file}")
            if scope != "total" and key not in node_keys:
                raise CodegenError(f"{where}: {here}: node_meta {key!r} is not a metadata key of schema/{node.file}")
            rows = wording["rows"]
            most = 2 if scope == "passes" else 1  # passes: a second row holds the value per pass
            if not isinstance(rows, list) or not 1 <= len(rows) <= most:
                raise CodegenError(f"{where}: {here}: rows must list 1 to {most} companion rows")
            one: dict[str, Any] = {
                key_field: key,
                "text": _template(wording["text"], PLACEHOLDERS[scope], f"{where}: {here}.text"),
                "rows": [row(r, f"{here}.rows") for r in rows],
            }
            if scope == "inclusive":
                share = wording["share_row"]
                one["share_row"] = None if share is None else row(share, f"{here}.share_row")
                function_doc = wording["function_doc"]
                one["function_doc"] = (
                    None
                    if function_doc is None
                    else _template(function_doc, PLACEHOLDERS["function_doc"], f"{where}: {here}.function_doc")
                )
            checked[scope] = one
        out.append(checked)
    return MetricTable(passes_row, out)


METRIC_RECORDS = '''\
MetricSourceName: TypeAlias = Literal[SOURCES]
"""Where a metric's fact comes from: ``op`` (the OpIR attribute of the same name, taken per
op and summed) or ``ops_counted`` (how many compute ops a node stands for)."""

MetricFormatName: TypeAlias = Literal[FORMATS]
"""How a metric's ``{value}`` is written: ``duration`` (seconds, as tlnetron words a
time), ``flops``, ``bytes`` or ``count`` (a grouped integer)."""

CompanionValueName: TypeAlias = Literal[COMPANION_VALUES]
"""What a metric's companion row holds: ``microseconds`` (the value, in seconds, as
microseconds) or ``count`` (the value as it is)."""


class NodeWording(NamedTuple):
    """How a fact is worded on one op node (scope ``op``) or rolled node (scope ``passes``).

    ``text.format(value=..., raw=..., passes=..., per_pass=...)`` is the value of node
    metadata key ``node_meta``; ``rows[0]`` is the companion row holding the value and, in
    the ``passes`` scope, ``rows[1]`` (when present) holds the value divided by the passes.
    """

    node_meta: NodeMetaName
    text: str
    rows: tuple[CompanionRowName, ...]


class InclusiveWording(NamedTuple):
    """How a fact is worded on a module call (every op inside it).

    ``text.format(value=..., raw=..., unknown_flops_note=..., calls_note=...)`` is the value
    of node metadata key ``node_meta`` (``calls_note``: empty for one call, over how many
    calls for a run); ``rows[0]`` is the companion row holding the value;
    ``share_row`` (None: no share) the companion row holding the call's share of the
    model's total; ``function_doc.format(value=..., raw=...)`` (None: no phrase) the phrase
    in the module's FunctionProto docString.
    """

    node_meta: NodeMetaName
    text: str
    rows: tuple[CompanionRowName, ...]
    share_row: CompanionRowName | None
    function_doc: str | None


class TotalWording(NamedTuple):
    """How a fact's model total is worded: ``text.format(value=..., raw=...)`` is the value
    of model metadata key ``model_meta``; ``rows[0]`` is the companion's model row."""

    model_meta: MetaKeyName
    text: str
    rows: tuple[CompanionRowName, ...]


class Metric(NamedTuple):
    """How one numeric fact is worded, per scope (None: the fact has no wording there).

    ``fact`` names the field of tlnetron's ``Facts`` that holds it; ``source`` where it
    comes from; ``format`` how its
    ``{value}`` is written; ``companion_value`` what its companion rows hold. In templates,
    ``{value}`` is the formatted value, ``{raw}`` the bare number (ungrouped), ``{passes}`` the
    number of passes, ``{per_pass}`` the value divided by the passes (formatted) and
    ``{unknown_flops_note}`` empty or how many ops inside have no FLOP rule, ``{calls_note}``
    empty or over how many calls a run's sums go.
    """

    fact: MetricFactName
    source: MetricSourceName
    format: MetricFormatName
    companion_value: CompanionValueName
    op: NodeWording | None
    passes: NodeWording | None
    inclusive: InclusiveWording | None
    total: TotalWording | None
'''


def _record_lines(kind: str, wording: dict[str, Any] | None, indent: str) -> list[str]:
    if wording is None:
        return []
    lines = [f"{kind}("]
    for field, value in wording.items():
        if isinstance(value, list):
            text = "(" + ", ".join(q(v) for v in value) + ("," if len(value) == 1 else "") + ")"
        else:
            text = "None" if value is None else q(value)
        lines.append(f"    {field}={text},")
    lines.append(")")
    return [indent + line for line in lines]


def _metric_lines(table: MetricTable) -> list[str]:
    facts = [m["fact"] for m in table.metrics]
    lines = [
        "MetricFactName: TypeAlias = Literal[" + ", ".join(q(f) for f in facts) + "]",
        '"""A fact the metric table words (a field of tlnetron\'s ``Facts``)."""',
        "",
        *METRIC_RECORDS.replace("FORMATS", ", ".join(q(f) for f in METRIC_FORMATS))
        .replace("SOURCES", ", ".join(q(f) for f in METRIC_SOURCES))
        .replace("COMPANION_VALUES", ", ".join(q(v) for v in COMPANION_VALUES))
        .splitlines(),
        "",
        "",
        "METRICS: tuple[Metric, ...] = (",
    ]
    kinds = {"op": "NodeWording", "passes": "NodeWording", "inclusive": "InclusiveWording", "total": "TotalWording"}
    for metric in table.metrics:
        lines += ["    Metric("]
        lines += [f"        {f}={q(metric[f])}," for f in ("fact", "source", "format", "companion_value")]
        for scope in METRIC_SCOPES:
            record = _record_lines(kinds[scope], metric[scope], "        ")
            if not record:
                lines.append(f"        {scope}=None,")
                continue
            record[0] = record[0].replace(kinds[scope] + "(", f"{scope}={kinds[scope]}(", 1)
            record[-1] += ","
            lines += record
        lines += ["    ),"]
    lines += [
        ")",
        f'"""Every numeric fact\'s wording, in the order rows are written ({METRICS_KEY} of schema/{VOCAB_FILE})."""',
        "",
        f"PASSES_ROW: Final = {q(table.passes_row)}",
        '"""The companion row holding a rolled node\'s number of passes."""',
    ]
    return lines


COLOURS_KEY = "x-tlnetron-colours"
# Where a scheme's value comes from: exactly one of these keys names it.
COLOUR_SOURCES = ("metric", "attribute", "node_meta", "value_rows")
_COLOUR = re.compile(r"#[0-9a-f]{6}")


def colour_table(vocab: Schema, node: Schema, metrics: MetricTable) -> dict[str, dict[str, Any]]:
    """Read and check ``x-tlnetron-colours`` of the colour_scheme vocabulary: every scheme but
    ``none`` once, its source resolved to the rows, attribute or key the page reads."""
    definitions = vocab.doc.get("definitions", {})
    where = f"schema/{vocab.file}: colour_scheme.{COLOURS_KEY}"
    table = definitions.get("colour_scheme", {}).get(COLOURS_KEY)
    schemes = [m for m in definitions.get("colour_scheme", {}).get("enum", []) if m != "none"]
    if not isinstance(table, dict) or list(table) != schemes:
        raise CodegenError(f"{where} must give every colour scheme but none, in the enum's order: {schemes}")
    rows_vocab = definitions.get("companion_row", {}).get("enum", [])
    by_fact = {m["fact"]: m for m in metrics.metrics}
    attributes = _properties(node, "/properties/attributes")
    node_meta = _properties(node, "/properties/metadata")
    out: dict[str, dict[str, Any]] = {}
    for name, entry in table.items():
        at = f"{where}.{name}"
        sources = [k for k in COLOUR_SOURCES if k in entry]
        categorical = "categories" in entry
        allowed = {"label", sources[0] if len(sources) == 1 else "", "categories" if categorical else "unit"}
        if len(sources) != 1 or set(entry) != allowed or not isinstance(entry.get("label"), str):
            raise CodegenError(f"{at} needs a label, one of {', '.join(COLOUR_SOURCES)} and a unit or categories")
        source = sources[0]
        scheme: dict[str, Any] = {"name": name, "label": entry["label"]}
        if source == "metric":
            metric = by_fact.get(entry["metric"])
            if metric is None:
                raise CodegenError(f"{at}: metric {entry['metric']!r} is no fact of {METRICS_KEY}")
            scheme["rows"] = [metric[s]["rows"][0] for s in ("op", "inclusive", "passes") if metric[s] is not None]
        elif source == "attribute" and entry[source] not in attributes:
            raise CodegenError(f"{at}: {entry[source]!r} is no node attribute of schema/{node.file}")
        elif source == "node_meta" and entry[source] not in node_meta:
            raise CodegenError(f"{at}: {entry[source]!r} is no node metadata key of schema/{node.file}")
        elif source == "value_rows" and (not entry[source] or any(r not in rows_vocab for r in entry[source])):
            raise CodegenError(f"{at}: value_rows must be members of the companion_row vocabulary")
        if source != "metric":
            scheme[source] = entry[source]
        if categorical:
            cats = entry["categories"]
            if (
                not isinstance(cats, list)
                or not all(
                    isinstance(c, list)
                    and len(c) == 3
                    and all(isinstance(x, str) for x in c)
                    and _COLOUR.fullmatch(c[2])
                    for c in cats
                )
                or (source == "value_rows" and len(cats) != 2)
            ):
                raise CodegenError(f"{at}: categories are [value, label, #rrggbb] (two for value_rows)")
            scheme["categories"] = cats
        elif not isinstance(entry.get("unit"), str):
            raise CodegenError(f"{at}: a numeric scheme needs a unit")
        else:
            scheme["unit"] = entry["unit"]
        out[name] = scheme
    return out


def _colour_lines(table: dict[str, dict[str, Any]]) -> list[str]:
    lines = ["COLOUR_SCHEMES: Final[dict[str, dict[str, str | list[str] | list[list[str]]]]] = {"]
    for name, scheme in table.items():
        lines.append(f"    {q(name)}: {{")
        for key, value in scheme.items():
            if isinstance(value, list) and value and isinstance(value[0], list):
                text = "[" + ", ".join("[" + ", ".join(q(x) for x in v) + "]" for v in value) + "]"
            elif isinstance(value, list):
                text = "[" + ", ".join(q(x) for x in value) + "]"
            else:
                text = q(value)
            lines.append(f"        {q(key)}: {text},")
        lines.append("    },")
    lines += [
        "}",
        f'"""Each colour scheme but none: its label and where a node\'s value comes from ({COLOURS_KEY})."""',
    ]
    return lines


VOCAB_DOC = '''\
"""Closed vocabularies, metadata key names and schema facts from tlnetron's JSON Schemas.

Every value here is read from schema/*.json: edit the schema, then regenerate.

Naming rule. A closed vocabulary ``foo_bar`` (a definition of vocabularies.schema.json)
gives ``class FooBar`` (one ``Final`` constant per member: ``FooBar.MEMBER = "member"``, a
plain ``str`` that mypy reads as its literal type), ``FOO_BAR`` (the members in schema
order), ``FOO_BAR_DOC`` (member -> description) and ``FooBarName``, the ``typing.Literal``
of the members, for annotating a parameter or field that holds one. The key classes
``MetaKey``, ``NodeAttr`` and ``NodeMeta`` likewise give ``MetaKeyName``, ``NodeAttrName``
and ``NodeMetaName``. ``METRICS`` and ``PASSES_ROW`` are the metric table
(``x-tlnetron-metrics``): how every numeric fact is worded in node metadata, model metadata,
companion rows and module docs.
"""

from typing import Final, Literal, NamedTuple, TypeAlias
'''


def render_vocab(schemas: dict[str, Schema]) -> str:
    vocab = schemas[VOCAB_FILE]
    meta = schemas[MODEL_METADATA_FILE]
    node = schemas[NODE_PROPERTIES_FILE]
    companion = schemas.get(COMPANION_FILE)
    version = vocab.doc["version"]

    lines = header([schemas[f].origin for f in sorted(schemas)])
    lines += [
        *VOCAB_DOC.splitlines(),
        "",
        f"SCHEMA_VERSION = {q(version)}",
        '"""The ``version`` every checked-in schema carries."""',
        "",
        "SCHEMA_IDS: dict[str, str] = {",
        *(f"    {q(f)}: {q(schemas[f].id)}," for f in sorted(schemas)),
        "}",
        f'"""Schema file name (in ``{SHIPPED_SCHEMA_DIR}/``) -> its ``$id``."""',
    ]

    # Closed vocabularies.
    for v in vocabularies(vocab):
        const = upper_name(v.name)
        values = [c for c, _, _ in v.members]
        lines += ["", "", f"# --- vocabulary {v.name} (schema/{vocab.file})", ""]
        lines += _literal_lines(v.literal_name, values, f"A member of the {v.name} vocabulary")
        lines += _class_lines(v.class_name, v.description, [(attr, c, d) for c, attr, d in v.members])
        lines += _tuple_lines(const, values, f"tuple[{v.literal_name}, ...]")
        lines += _dict_lines(f"{const}_DOC", [(c, d) for c, _, d in v.members])

    # The companion's signature.
    if companion is None:
        raise CodegenError(f"schema/{COMPANION_FILE} is missing")
    signature = _properties(companion, "").get("signature", {}).get("const")
    if not isinstance(signature, str) or not signature:
        raise CodegenError(f"schema/{companion.file}: properties.signature has no string const")
    lines += ["", "", f"# --- companion (schema/{companion.file})", ""]
    lines += [f"COMPANION_SIGNATURE: Final = {q(signature)}"]
    lines += ['"""The ``signature`` every companion carries (its ``const`` in the schema)."""']

    # Model metadata keys.
    meta_props = _properties(meta, "")
    meta_keys = list(meta_props)
    required = meta.doc.get("required", [])
    unknown = [k for k in required if k not in meta_props]
    if unknown:
        raise CodegenError(f"schema/{meta.file}: required keys without a property: {unknown}")
    json_keys = [k for k, p in meta_props.items() if p.get("x-tlnetron-encoding") == "json"]
    meta_doc = [(k, str(p.get("description", ""))) for k, p in meta_props.items()]
    _unique([key_attr(k) for k in meta_keys], "model metadata keys")
    lines += ["", "", f"# --- model metadata (schema/{meta.file})", ""]
    lines += _literal_lines(literal_name("MetaKey"), meta_keys, "A model metadata key")
    lines += _class_lines(
        "MetaKey",
        "Keys of the artifact's model metadataProps.",
        [(key_attr(k), k, d) for k, d in meta_doc],
    )
    lines += _tuple_lines("MODEL_METADATA_KEYS", meta_keys, "tuple[MetaKeyName, ...]")
    lines += _tuple_lines("MODEL_METADATA_REQUIRED", list(required), "tuple[MetaKeyName, ...]")
    lines += _frozenset_lines("MODEL_METADATA_JSON_KEYS", json_keys)
    lines += ['"""Keys whose value is JSON text (``x-tlnetron-encoding: json``)."""']
    lines += _dict_lines("MODEL_METADATA_DOC", meta_doc)

    # Node attributes and node metadata.
    attr_props = _properties(node, "/properties/attributes")
    attr_types: list[tuple[str, str]] = []
    for attr, prop in attr_props.items():
        onnx_type = prop.get("x-onnx-type")
        if not isinstance(onnx_type, str) or not onnx_type:
            raise CodegenError(f"schema/{node.file}: attribute {attr} has no x-onnx-type")
        attr_types.append((attr, onnx_type))
    attr_doc = [(a, str(p.get("description", ""))) for a, p in attr_props.items()]
    _unique([key_attr(a) for a in attr_props], "node attributes")
    node_meta_props = _properties(node, "/properties/metadata")
    node_meta_doc = [(k, str(p.get("description", ""))) for k, p in node_meta_props.items()]
    _unique([key_attr(k) for k in node_meta_props], "node metadata keys")

    lines += ["", "", f"# --- node attributes and metadata (schema/{node.file})", ""]
    lines += _literal_lines(literal_name("NodeAttr"), list(attr_props), "A node attribute name")
    lines += _class_lines(
        "NodeAttr",
        "Names of the attributes an exported NodeProto may carry.",
        [(key_attr(a), a, d) for a, d in attr_doc],
    )
    lines += _dict_lines("NODE_ATTRIBUTE_TYPES", attr_types)
    lines += ['"""Attribute name -> its ONNX AttributeProto type (``x-onnx-type``)."""']
    lines += _dict_lines("NODE_ATTRIBUTE_DOC", attr_doc)
    lines += ["", ""]
    lines += _literal_lines(literal_name("NodeMeta"), list(node_meta_props), "A node metadata key")
    lines += _class_lines(
        "NodeMeta",
        "Keys of an exported NodeProto's metadataProps.",
        [(key_attr(k), k, d) for k, d in node_meta_doc],
    )
    lines += _tuple_lines("NODE_METADATA_KEYS", list(node_meta_props), "tuple[NodeMetaName, ...]")
    lines += _dict_lines("NODE_METADATA_DOC", node_meta_doc)
    limits = {d: node.doc.get("definitions", {}).get(d, {}).get("maxLength") for d in ("text", "line")}
    if len(set(limits.values())) != 1 or not isinstance(limits["text"], int):
        raise CodegenError(f"schema/{node.file}: definitions text and line need one integer maxLength, got {limits}")
    lines += ["", f"NODE_TEXT_MAX_LENGTH = {limits['text']}"]
    lines += ['"""Longest text a node attribute or metadata value may hold (``maxLength``)."""']

    # The metric table.
    lines += ["", "", f"# --- metric table ({METRICS_KEY} of schema/{vocab.file})", ""]
    metrics = metric_table(vocab, meta, node)
    lines += _metric_lines(metrics)

    # The pages' heat map.
    lines += ["", "", f"# --- colour schemes (colour_scheme.{COLOURS_KEY} of schema/{vocab.file})", ""]
    lines += _colour_lines(colour_table(vocab, node, metrics))
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------- validators


def validator_module(schema: Schema) -> str:
    stem = schema.file[: -len(SCHEMA_SUFFIX)] if schema.file.endswith(SCHEMA_SUFFIX) else Path(schema.file).stem
    return "validate_" + re.sub(r"[^0-9A-Za-z]+", "_", stem).strip("_").lower()


def _compiler_module() -> Any:
    """``compile_schema.py`` beside this file (codegen/ is scripts, not a package)."""
    import importlib.util

    path = Path(__file__).resolve().parent / "compile_schema.py"
    module = sys.modules.get("_tlnetron_compile_schema")
    if module is None:
        spec = importlib.util.spec_from_file_location("_tlnetron_compile_schema", path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules["_tlnetron_compile_schema"] = module
        spec.loader.exec_module(module)
    return module


def _compiler() -> tuple[type[Exception], Any]:
    module = _compiler_module()
    return module.CompileError, module.compile_schema


def render_runtime() -> str:
    """``_runtime.py``: the helpers every compiled validator imports."""
    body: str = _compiler_module().RUNTIME
    head = [*header(["codegen/compile_schema.py (no schema input)"]), "# mypy: ignore-errors"]
    return "\n".join(head) + "\n" + body


def render_validator(schema: Schema, schemas: dict[str, Schema]) -> str:
    """One validator module, compiled by ``codegen/compile_schema.py`` (no run-time dependency)."""
    CompileError, compile_schema = _compiler()

    by_id = {s.id: s for s in schemas.values()}
    docs = {s.id: json.loads(s.raw.decode("utf-8")) for s in schemas.values()}

    def resolve(ref: str, doc: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
        base, _, fragment = ref.partition("#")
        if base:
            if base not in by_id:
                raise CodegenError(f"schema/{schema.file}: cannot resolve {ref}")
            doc = docs[base]
        try:
            return _resolve_pointer(doc, fragment), doc
        except KeyError:
            raise CodegenError(f"schema/{schema.file}: $ref {ref} points at nothing") from None

    try:
        code = compile_schema(docs[schema.id], resolve, function="_validate", bulk="_all_match")
    except CompileError as exc:
        raise CodegenError(f"schema/{schema.file}: {exc}") from None

    refs = referenced_files(schema, schemas)
    head = header([schema.origin])
    if refs:
        head.insert(1, "# Through $ref it also reads " + ", ".join(schemas[f].origin for f in refs) + ".")
    head.append(
        "# Validation code by codegen/compile_schema.py: every sub-schema inlined, data paths built only on failure."
    )
    # mypy: the compiled body is untyped; validate() below is the typed entry point.
    out = [
        *head,
        "# mypy: ignore-errors",
        f'"""Validator for schema/{schema.file} (``$id`` {schema.id}).',
        "",
        "``validate(data)`` returns ``data`` unchanged when it matches the schema and",
        "raises ``JsonSchemaValueException`` (``.message``, ``.name`` -- the data path such as",
        "``data.metadata[3].target`` --, ``.rule``, ``.value``, ``.definition``) otherwise.",
        "``all_match(items)`` answers for a list of them at once, where it can (see there).",
        '"""',
        "",
        "from typing import TypeVar",
        "",
        *[line.rstrip() for line in code.splitlines()],
        "",
        "",
        '_T = TypeVar("_T")',
        "",
        f"SCHEMA_ID = {q(schema.id)}",
        f"SCHEMA_FILE = {q(schema.file)}",
        "",
        "",
        "def validate(data: _T) -> _T:",
        f'    """Return ``data`` if it matches schema/{schema.file}; else raise JsonSchemaValueException."""',
        "    _validate(data)",
        "    return data",
        "",
        "",
        "def all_match(items: list[object]) -> bool:",
        '    """True when every item surely matches (one compiled check); False: ``validate`` each to know."""',
        "    return bool(_all_match(items))",
    ]
    text = "\n".join(out)
    text = re.sub(r"\n+(?=^(?:def |_T = ))", "\n\n\n", text, flags=re.M)  # PEP 8 spacing
    return text.rstrip("\n") + "\n"


# --------------------------------------------------------------------------- _errors.py

ERRORS_BODY = '''\
"""Exceptions raised by the generated validators.

The validators are compiled by ``codegen/compile_schema.py`` and raise these classes
(the same interface as fastjsonschema's, which earlier versions used):
``JsonSchemaValueException(message, value=..., name=..., definition=..., rule=...)``.
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["JsonSchemaException", "JsonSchemaValueException"]

_PATH_PARTS = re.compile(r"[^.\\[\\]]+")


class JsonSchemaException(ValueError):
    """Base class of every schema problem."""


class JsonSchemaValueException(JsonSchemaException):
    """A value breaks one rule of a schema.

    ``message``     human-readable, e.g. ``data.metrics[0].target must be longer than or equal to 1 characters``;
    ``value``       the offending value;
    ``name``        its path in the data, e.g. ``data.metadata[3].target``;
    ``definition``  the (sub)schema the value had to satisfy;
    ``rule``        the keyword it broke, e.g. ``const``, ``pattern``, ``required``.
    """

    def __init__(
        self,
        message: str,
        value: Any = None,
        name: str | None = None,
        definition: Any = None,
        rule: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.value = value
        self.name = name
        self.definition = definition
        self.rule = rule

    @property
    def path(self) -> list[str]:
        """``name`` split on dots and brackets (ambiguous for keys that contain dots)."""
        return _PATH_PARTS.findall(self.name or "")

    @property
    def rule_definition(self) -> Any:
        """The schema value of the broken keyword (``None`` when unknown)."""
        if self.rule is None or not isinstance(self.definition, dict):
            return None
        return self.definition.get(self.rule)

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.message, self.value, self.name, self.definition, self.rule))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.message!r}, name={self.name!r}, rule={self.rule!r})"
'''


def render_errors() -> str:
    return "\n".join(header(["codegen/generate.py itself (no schema input)"])) + "\n" + ERRORS_BODY


# --------------------------------------------------------------------------- driver


FACTS_DOC = '''\
"""``Facts``: the numeric facts of one exported node, one field per metric of the metric
table (``x-tlnetron-metrics`` of schema/vocabularies.schema.json), then how they were summed.

A new metric is a row of that table: regenerate, and ``Facts`` has its field, which the
functions below take from the ``OpIR`` attribute of the same name and sum (tlnetron.ir.facts
calls them).
"""

from collections.abc import Callable
from typing import Any

from .._records import record


@record
class Facts:
    """Numeric facts of one exported node (None = does not apply / unknown).

    Durations are *observed* (seconds), FLOPs *estimates*, bytes *captured-tensor* bytes; a
    fact is an op's own, a rolled layer's passes summed (``passes`` > 1), or a module call's
    total over every op inside (``inclusive``).
    """

'''

FACTS_TAIL = '''\
    inclusive: bool = False
    """The facts are a module call's (or a run's) totals over every op inside."""
    passes: int = 1
    """More than 1: a rolled node's passes, summed."""
    unknown_flops: int = 0
    """Inclusive facts: how many ops inside have no FLOP rule (their FLOPs are not in ``flops``)."""
    calls: int = 1
    """Inclusive facts of a run: how many module calls the sums go over."""
'''


SOURCE_WORDS = {
    "op": "the OpIR attribute of the same name, summed",
    "ops_counted": "how many compute ops the node stands for",
}


def render_facts(schemas: dict[str, Schema]) -> str:
    """``_generated/facts.py``: the ``Facts`` record, a field per metric of the table, and its
    arithmetic written out field by field (tlnetron.ir.facts calls it once per node)."""
    table = metric_table(schemas[VOCAB_FILE], schemas[MODEL_METADATA_FILE], schemas[NODE_PROPERTIES_FILE])
    lines = header([schemas[VOCAB_FILE].origin]) + FACTS_DOC.splitlines()
    for metric in table.metrics:
        kind = "float" if metric["format"] == "duration" else "int"
        lines += [
            f"    {metric['fact']}: {kind} | None = None",
            f'    """A metric ({metric["format"]}): {SOURCE_WORDS[metric["source"]]}."""',
        ]
    facts = [m["fact"] for m in table.metrics]
    arithmetic = render_facts_arithmetic(facts, [m["source"] == "op" for m in table.metrics])
    return "\n".join(lines) + "\n" + FACTS_TAIL + arithmetic


def render_facts_arithmetic(facts: list[str], from_op: list[bool]) -> str:
    """The three ways facts are made, one line per metric: no loop over the table per node."""
    taken = {"op", "ops", "item", "items", "known", "count", "counted", "compute", "v", "sum", "Facts", "Any"}
    clash = sorted(taken.intersection(facts))
    if clash:
        raise SystemExit(f"codegen: metric fact name(s) {clash} are names the generated arithmetic uses")

    def call(args: list[str]) -> str:
        return "Facts(\n" + "".join(f"        {a},\n" for a in args) + "    )"

    summed = [f"sum({f}) if {f} else None" for f in facts]
    own = [f"known(op.{f})" if o else "count" for f, o in zip(facts, from_op)]
    passed = [f"sum({f}) if {f} else None" if o else "counted" for f, o in zip(facts, from_op)]
    lines = [
        "",
        "",
        "def op_facts_of(op: Any, known: Callable[[Any], Any], count: int | None) -> Facts:",
        '    """An op\'s own facts: each op metric as ``known`` states it, the counted ones ``count``."""',
        f"    return {call(own)}",
        "",
        "",
        "def sum_facts_of(items: list[Facts], inclusive: bool, passes: int, unknown_flops: int, calls: int) -> Facts:",
        '    """Facts summed metric by metric; a sum is absent when no item has the fact."""',
    ]
    lines += [f"    {f} = [v for item in items if (v := item.{f}) is not None]" for f in facts]
    lines += [
        f"    return {call([*summed, 'inclusive', 'passes', 'unknown_flops', 'calls'])}",
        "",
        "",
        "def passes_facts_of(ops: list[Any], passes: int, known: Callable[[Any], Any], compute: bool) -> Facts:",
        '    """A rolled layer\'s passes summed; the counted metrics are ``passes`` for compute ops."""',
        "    counted = passes if compute else None",
    ]
    lines += [f"    {f} = [v for op in ops if (v := known(op.{f})) is not None]" for f, o in zip(facts, from_op) if o]
    lines += [f"    return {call([*passed, 'False', 'passes'])}"]
    return "\n".join(lines) + "\n"


def render(schema_dir: Path) -> dict[str, bytes]:
    """Every generated file: relative path (POSIX) -> exact bytes."""
    schemas = load_schemas(schema_dir)
    files: dict[str, str] = {
        "__init__.py": "\n".join(header(["schema/*.json (see vocab.py for digests)"])) + "\n",
        "_errors.py": render_errors(),
        "_runtime.py": render_runtime(),
        "vocab.py": render_vocab(schemas),
        "facts.py": render_facts(schemas),
    }
    for name in sorted(schemas):
        if name == VOCAB_FILE:
            continue
        module = validator_module(schemas[name])
        if f"{module}.py" in files:
            raise CodegenError(f"two schemas map to {module}.py")
        files[f"{module}.py"] = render_validator(schemas[name], schemas)
    return {path: content.encode("utf-8") for path, content in sorted(files.items())}


def existing(out_dir: Path) -> set[str]:
    """Files already in out_dir, ignoring Python caches."""
    if not out_dir.is_dir():
        return set()
    found = set()
    for path in out_dir.rglob("*"):
        rel = path.relative_to(out_dir)
        if "__pycache__" in rel.parts or path.suffix == ".pyc" or not path.is_file():
            continue
        found.add(rel.as_posix())
    return found


def diff(expected: dict[str, bytes], out_dir: Path) -> tuple[list[str], list[str], list[str]]:
    have = existing(out_dir)
    stale = sorted(p for p in expected if p in have and (out_dir / p).read_bytes() != expected[p])
    missing = sorted(p for p in expected if p not in have)
    extra = sorted(have - set(expected))
    return stale, missing, extra


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 if anything is out of date")
    parser.add_argument(
        "--schema-dir", type=Path, default=DEFAULT_SCHEMA_DIR, help="default: schema/ (src/tlnetron/schema/)"
    )
    parser.add_argument("--out-dir", type=Path, default=DEFAULT_OUT_DIR, help="default: src/tlnetron/_generated/")
    args = parser.parse_args(argv)

    try:
        expected = render(args.schema_dir)
    except CodegenError as exc:
        print(f"codegen: error: {exc}", file=sys.stderr)
        return 2
    stale, missing, extra = diff(expected, args.out_dir)

    if args.check:
        if not (stale or missing or extra):
            print(f"codegen: {len(expected)} generated files are up to date")
            return 0
        for label, paths in (("stale", stale), ("missing", missing), ("extra", extra)):
            for p in paths:
                print(f"codegen: {label}: {p}")
        print("codegen: out of date; run `nox -s codegen` (or `python codegen/generate.py`)", file=sys.stderr)
        return 1

    for p in stale + missing:
        target = args.out_dir / p
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(expected[p])
        print(f"codegen: wrote {p}")
    for p in extra:
        (args.out_dir / p).unlink()
        print(f"codegen: removed {p}")
    for folder in sorted({(args.out_dir / p).parent for p in extra}, key=lambda f: len(f.parts), reverse=True):
        if folder != args.out_dir and folder.is_dir() and not any(folder.iterdir()):
            folder.rmdir()  # a folder its removed files leave empty
    if not (stale or missing or extra):
        print(f"codegen: {len(expected)} generated files already up to date")
    return 0


if __name__ == "__main__":
    sys.exit(main())

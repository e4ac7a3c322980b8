"""The generated validators accept exactly what jsonschema's Draft7Validator accepts.

Differential: for each of the four validated schemas, Hypothesis draws valid instances
(built from the schema's own structure), mutated ones (wrong types, missing and extra
keys, newlines in strings, out-of-range numbers, near-miss vocabulary words, ...) and
arbitrary JSON, and the generated validator (codegen/compile_schema.py) must agree with the
reference validator (jsonschema + a referencing.Registry holding every checked-in
schema by $id). Non-finite floats are not JSON and are never drawn.
"""

from __future__ import annotations

import math
import copy
import importlib
import importlib.util
import json
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from jsonschema import Draft7Validator
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT7

ROOT = Path(__file__).resolve().parent.parent
SCHEMA_DIR = ROOT / "schema"
GEN_DIR = ROOT / "src" / "tlnetron" / "_generated"
VALIDATED = ["model-metadata", "node-properties", "companion", "baseline-summary"]

SCHEMAS: dict[str, dict[str, Any]] = {
    p.name.removesuffix(".schema.json"): json.loads(p.read_text(encoding="utf-8"))
    for p in sorted(SCHEMA_DIR.glob("*.json"))
}
BY_ID = {s["$id"]: s for s in SCHEMAS.values()}
REGISTRY: Registry = Registry().with_resources(
    (s["$id"], Resource.from_contents(s, default_specification=DRAFT7)) for s in SCHEMAS.values()
)
REFERENCE = {name: Draft7Validator(SCHEMAS[name], registry=REGISTRY) for name in VALIDATED}


def _load_generated() -> tuple[dict[str, ModuleType], ModuleType]:
    """The checked-in generated package, imported by path (tlnetron itself need not import)."""
    alias = "_schema_agreement_generated"
    if alias not in sys.modules:
        spec = importlib.util.spec_from_file_location(
            alias, GEN_DIR / "__init__.py", submodule_search_locations=[str(GEN_DIR)]
        )
        assert spec is not None and spec.loader is not None
        package = importlib.util.module_from_spec(spec)
        sys.modules[alias] = package
        spec.loader.exec_module(package)
    validators = {n: importlib.import_module(f"{alias}.validate_{n.replace('-', '_')}") for n in VALIDATED}
    # The package loaded by path cannot import ..build._rows: give it the compiled row check when
    # it is built, so the differential covers the fast answers as shipped too.
    try:
        from tlnetron.build._rows import rows_match
    except ImportError:  # pragma: no cover - a build without a C compiler
        rows_match = None
    for module in validators.values():
        if hasattr(module, "_rows_match"):
            module._rows_match = rows_match
    return validators, importlib.import_module(f"{alias}._errors")


GENERATED, ERRORS = _load_generated()
SchemaError = ERRORS.JsonSchemaValueException


def generated_accepts(name: str, instance: Any) -> bool:
    """Run the generated validator; it may only ever raise JsonSchemaValueException."""
    snapshot = copy.deepcopy(instance)
    try:
        GENERATED[name].validate(instance)
    except SchemaError as exc:
        assert isinstance(exc.message, str) and exc.message.startswith(exc.name or "?")
        assert isinstance(exc.name, str) and exc.name.startswith("data")
        assert isinstance(exc.rule, str) and exc.rule
        accepted = False
    else:
        accepted = True
    assert instance == snapshot, "the validator changed its input"
    return accepted


def reference_accepts(name: str, instance: Any) -> bool:
    return REFERENCE[name].is_valid(instance)


# --------------------------------------------------------------------------- strategies

# The schemas' patterns, keyed by their exact text: a changed pattern needs a new strategy here.
LINE_PATTERN = "^[^\\n\\r]*(?![\\s\\S])"
SEMVER_PATTERN = "^[0-9]+\\.[0-9]+\\.[0-9]+(?![\\s\\S])"
INPUT_NAMES_PATTERN = "^\\['[^'\\n]*'(, '[^'\\n]*')*\\](?![\\s\\S])"
EXPORT_ID_PATTERN = "^[0-9a-f]{32}(?![\\s\\S])"

ANY_CHAR = st.characters()
NO_NEWLINE = st.characters(exclude_characters="\n\r")
SMALL = 6  # collection sizes stay small: agreement is about shape, not size

finite_floats = st.floats(allow_nan=False, allow_infinity=False)
json_scalars = st.one_of(st.none(), st.booleans(), st.integers(), finite_floats, st.text(max_size=8))
json_values = st.recursive(
    json_scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=6), inner, max_size=3)),
    max_leaves=6,
)


def _input_names() -> st.SearchStrategy[str]:
    name = st.text(alphabet=st.characters(exclude_characters="'\n"), max_size=6)
    return st.lists(name, min_size=1, max_size=3).map(lambda ns: "[" + ", ".join(f"'{n}'" for n in ns) + "]")


PATTERN_STRATEGIES: dict[str, Callable[[int, int], st.SearchStrategy[str]]] = {
    LINE_PATTERN: lambda lo, hi: st.text(alphabet=NO_NEWLINE, min_size=lo, max_size=hi),
    SEMVER_PATTERN: lambda lo, hi: st.tuples(*[st.integers(0, 99)] * 3).map(lambda t: "%d.%d.%d" % t),
    INPUT_NAMES_PATTERN: lambda lo, hi: _input_names(),
    EXPORT_ID_PATTERN: lambda lo, hi: st.text(alphabet="0123456789abcdef", min_size=32, max_size=32),
}

KNOWN_KEYWORDS = {
    "$schema",
    "$id",
    "title",
    "description",
    "version",
    "definitions",
    "x-onnx-type",
    "x-tlnetron-encoding",
    "x-members",
    "type",
    "minLength",
    "maxLength",
    "pattern",
    "minimum",
    "enum",
    "const",
    "oneOf",
    "$ref",
    "not",
    "items",
    "uniqueItems",
    "properties",
    "required",
    "additionalProperties",
}


def resolve(ref: str, doc: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    base, _, fragment = ref.partition("#")
    target_doc = BY_ID[base] if base else doc
    node: Any = target_doc
    for part in fragment.strip("/").split("/"):
        node = node[part]
    return node, target_doc


def valid(
    sub: dict[str, Any], doc: dict[str, Any], path: tuple[str, ...] = (), *, rich: bool = False
) -> st.SearchStrategy[Any]:
    """Instances of ``sub`` (a subschema of ``doc``) for the keywords these schemas use.

    ``rich``: arrays are non-empty and every optional property is present, so that
    mutations have plenty to work on.
    """
    if path in OVERRIDES.get(doc["$id"], {}):
        return OVERRIDES[doc["$id"]][path]
    if "$ref" in sub:  # draft-07: siblings of $ref are ignored
        target, target_doc = resolve(sub["$ref"], doc)
        return valid(target, target_doc, path, rich=rich)
    unknown = set(sub) - KNOWN_KEYWORDS
    assert not unknown, f"{doc['$id']} {path}: no strategy for keywords {unknown}; extend this test"
    if "oneOf" in sub:
        assert all(set(b) == {"const", "description"} for b in sub["oneOf"]), path
        return st.sampled_from([b["const"] for b in sub["oneOf"]])
    if "enum" in sub:
        return st.sampled_from(sub["enum"])
    if "const" in sub:
        return st.just(sub["const"])
    if "not" in sub:
        assert set(sub["not"]) == {"enum"}, f"{path}: no strategy for not {sub['not']}"
        refused = sub["not"]["enum"]
        rest = {k: v for k, v in sub.items() if k != "not"}
        return valid(rest, doc, path, rich=rich).filter(lambda value: value not in refused)
    kind = sub.get("type")
    if isinstance(kind, list):
        return st.one_of([valid({**sub, "type": k}, doc, path, rich=rich) for k in kind])
    if kind == "string":
        lo = sub.get("minLength", 0)
        hi = min(sub.get("maxLength", lo + 12), lo + 12)
        pattern = sub.get("pattern")
        if pattern is None:
            return st.text(alphabet=ANY_CHAR, min_size=lo, max_size=hi)
        assert pattern in PATTERN_STRATEGIES, f"{path}: no strategy for pattern {pattern!r}"
        return PATTERN_STRATEGIES[pattern](lo, hi)
    if kind == "integer":
        return st.integers(min_value=sub.get("minimum"))
    if kind == "number":
        low = sub.get("minimum")
        return st.one_of(st.integers(min_value=low), st.floats(min_value=low, allow_nan=False, allow_infinity=False))
    if kind == "boolean":
        return st.booleans()
    if kind == "array":
        items = valid(sub["items"], doc, (*path, "items"), rich=rich)
        return st.lists(items, min_size=int(rich), max_size=SMALL, unique=bool(sub.get("uniqueItems")))
    if kind == "object":
        props = sub.get("properties", {})
        required = sub.get("required", [])
        if not props and sub.get("additionalProperties", True) is True:
            return st.dictionaries(st.text(max_size=6), json_values, max_size=3)
        present = list(props) if rich else required
        return st.fixed_dictionaries(
            {k: valid(props[k], doc, (*path, k), rich=rich) for k in present},
            optional={k: valid(p, doc, (*path, k)) for k, p in props.items() if k not in present},
        )
    raise AssertionError(f"{doc['$id']} {path}: no strategy for {sub}")


# Hand-built part: a trace baseline is the JSON text of a baseline summary (decoded here),
# which the string-or-object type alone would rarely produce.
OVERRIDES: dict[str, dict[tuple[str, ...], st.SearchStrategy[Any]]] = {
    SCHEMAS["model-metadata"]["$id"]: {
        ("torchlens.baseline",): st.deferred(
            lambda: st.one_of(
                st.text(max_size=10),
                VALID["baseline-summary"],
                st.dictionaries(st.text(max_size=6), json_values, max_size=3),
            )
        ),
    },
}

VALID: dict[str, st.SearchStrategy[Any]] = {name: valid(SCHEMAS[name], SCHEMAS[name]) for name in VALIDATED}
RICH: dict[str, st.SearchStrategy[Any]] = {name: valid(SCHEMAS[name], SCHEMAS[name], rich=True) for name in VALIDATED}


def _walk(node: Any) -> list[Any]:
    out = [node]
    if isinstance(node, dict):
        for value in node.values():
            out += _walk(value)
    elif isinstance(node, list):
        for value in node:
            out += _walk(value)
    return out


def _harvest() -> tuple[list[str], list[Any]]:
    """Property names and literal values that appear anywhere in the schemas."""
    keys: set[str] = set()
    literals: set[str] = set()
    for schema in SCHEMAS.values():
        for node in _walk(schema):
            if isinstance(node, dict):
                keys.update(node.get("properties", {}))
                keys.update(k for k in node.get("required", []) if isinstance(k, str))
                if isinstance(node.get("const"), str):
                    literals.add(node["const"])
                literals.update(v for v in node.get("enum", []) if isinstance(v, str))
    return sorted(keys), sorted(literals)


KNOWN_KEYS, LITERALS = _harvest()
TRICKY: list[Any] = [
    *LITERALS,
    *KNOWN_KEYS,
    "",
    " ",
    "\n",
    "\r",
    "x\n",
    "x\r\n",
    "\nx",
    "a\nb",
    "a\rb",
    "\u2028",
    "MODEL",
    "Model",
    "model ",
    "1.0.0",
    "1.0.0\n",
    "1.0",
    "v1.0.0",
    "0" * 32,
    "0" * 31,
    "0" * 33,
    "A" * 32,
    "0" * 32 + "\n",
    "['a']",
    "['a', 'b']",
    "['a']\n",
    "[a]",
    "[]",
    "['it's']",
    "x" * 1999,
    "x" * 2000,
    "x" * 2001,
    0,
    1,
    -1,
    2,
    27,
    2**63,
    -(2**63),
    0.0,
    -0.0,
    1.0,
    2.0,
    0.5,
    -0.5,
    1e300,
    -1e300,
    1e-300,
    True,
    False,
    None,
    [],
    {},
    [1],
    ["a"],
    [None],
    [[1]],
    [{}],
    {"a": 1},
]
tricky = st.sampled_from(TRICKY)
replacement = st.one_of(tricky, json_values)


def _locations(node: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [path]
    if isinstance(node, dict):
        for key, value in node.items():
            out += _locations(value, (*path, key))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            out += _locations(value, (*path, index))
    return out


def _get(doc: Any, path: tuple[Any, ...]) -> Any:
    for part in path:
        doc = doc[part]
    return doc


def _string_variants(text: str) -> list[str]:
    middle = len(text) // 2
    return [
        # A final "\n" is where regex dialects differ most ($ in Python matches before it).
        text + "\n",
        text + "\n",
        text + "\n",
        text + "\r\n",
        "\n" + text,
        text[:middle] + "\n" + text[middle:],
        text + "\r",
        "",
        text.upper(),
        text + " ",
        text + "x" * 2000,
        text[:-1],
    ]


@st.composite
def mutate(draw: st.DrawFn, doc: Any, *, strings_only: bool = False) -> Any:
    """One small edit somewhere in doc (a deep copy is edited).

    ``strings_only``: edit one string (newlines, case, length), where patterns,
    length limits and vocabularies are checked.
    """
    doc = copy.deepcopy(doc)
    locations = _locations(doc)
    strings = [p for p in locations if isinstance(_get(doc, p), str)]
    if strings_only:
        path = draw(st.sampled_from(strings))
        _set(doc, path, draw(st.sampled_from(_string_variants(_get(doc, path)))))
        return doc
    # Half the edits go to strings: patterns, lengths and vocabularies live there.
    path = draw(st.sampled_from(strings) if strings and draw(st.booleans()) else st.sampled_from(locations))
    node = _get(doc, path)
    ops = ["replace"]
    if isinstance(node, dict):
        ops += ["add"] + (["delete"] if node else [])
    elif isinstance(node, list):
        ops += ["append"] + (["delete", "duplicate"] if node else [])
    elif isinstance(node, str):
        ops += ["string"]
    elif isinstance(node, int) and not isinstance(node, bool):
        ops += ["number"]
    op = draw(st.sampled_from(ops))
    event(f"mutation: {op}")

    new: Any
    if op == "replace":
        new = draw(replacement)
    elif op == "add":
        key = draw(st.one_of(st.sampled_from(KNOWN_KEYS), st.text(max_size=6)))
        node[key] = draw(replacement)
        new = node
    elif op == "delete" and isinstance(node, dict):
        del node[draw(st.sampled_from(sorted(node)))]
        new = node
    elif op == "delete":
        del node[draw(st.integers(0, len(node) - 1))]
        new = node
    elif op == "append":
        node.append(draw(replacement))
        new = node
    elif op == "duplicate":
        node.append(copy.deepcopy(node[draw(st.integers(0, len(node) - 1))]))
        new = node
    elif op == "string":
        new = draw(st.sampled_from(_string_variants(node)))
    else:  # number
        new = draw(st.sampled_from([-1, -node, node + 0.5, float(node), True, str(node), 0]))
    return _set(doc, path, new)


def _set(doc: Any, path: tuple[Any, ...], new: Any) -> Any:
    if not path:
        return new
    _get(doc, path[:-1])[path[-1]] = new
    return doc


@st.composite
def mutated(draw: st.DrawFn, base: st.SearchStrategy[Any]) -> Any:
    doc = draw(base)
    for _ in range(draw(st.integers(1, 2))):
        doc = draw(mutate(doc))
    return doc


INSTANCES = {
    name: st.one_of(
        VALID[name], RICH[name], mutated(VALID[name]), mutated(RICH[name]), mutated(RICH[name]), json_values
    )
    for name in VALIDATED
}

# Modest by default (a few seconds for all four schemas); a longer profile loaded by
# --hypothesis-profile raises it.
EXAMPLES = max(200, settings().max_examples)
AGREEMENT = settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


# --------------------------------------------------------------------------- differential


@pytest.mark.parametrize("name", VALIDATED)
@AGREEMENT
@given(data=st.data())
def test_generated_validator_agrees_with_jsonschema(name: str, data: st.DataObject) -> None:
    instance = data.draw(INSTANCES[name], label="instance")
    expected = reference_accepts(name, instance)
    event("accepted" if expected else "rejected")
    assert generated_accepts(name, instance) == expected, [e.message for e in REFERENCE[name].iter_errors(instance)]


@pytest.mark.parametrize("name", VALIDATED)
@settings(AGREEMENT, max_examples=max(100, EXAMPLES // 2))
@given(data=st.data())
def test_string_edits_agree(name: str, data: st.DataObject) -> None:
    """Focused: one edited string in an otherwise valid instance (regex dialects differ on newlines)."""
    instance = data.draw(RICH[name].flatmap(lambda doc: mutate(doc, strings_only=True)), label="instance")
    expected = reference_accepts(name, instance)
    event("accepted" if expected else "rejected")
    assert generated_accepts(name, instance) == expected, [e.message for e in REFERENCE[name].iter_errors(instance)]


@pytest.mark.parametrize("name", VALIDATED)
@settings(AGREEMENT, max_examples=max(50, EXAMPLES // 4))
@given(data=st.data())
def test_valid_instances_are_accepted_by_both(name: str, data: st.DataObject) -> None:
    instance = data.draw(st.one_of(VALID[name], RICH[name]), label="instance")
    assert reference_accepts(name, instance), [e.message for e in REFERENCE[name].iter_errors(instance)]
    assert generated_accepts(name, instance)


@pytest.mark.parametrize("name", VALIDATED)
@settings(AGREEMENT, max_examples=max(100, EXAMPLES // 2))
@given(data=st.data())
def test_the_compiled_answer_for_many_is_yes_only_when_each_is_valid(name: str, data: st.DataObject) -> None:
    """``all_match`` (one compiled check of a list, as node validation uses it) never says
    yes to a list holding an instance the reference rejects, and says yes to valid lists of
    node properties (where the export relies on it)."""
    items = data.draw(st.lists(INSTANCES[name], max_size=3), label="items")
    snapshot = copy.deepcopy(items)
    fast = GENERATED[name].all_match(items)
    assert items == snapshot, "the check changed its input"
    event("yes" if fast else "no")
    if fast:
        assert all(reference_accepts(name, item) for item in items), items
    valid = data.draw(st.lists(VALID[name], max_size=3), label="valid")
    if name == "node-properties" and GENERATED[name]._rows_match is not None:
        # an integral float where an integer belongs is valid; the Python validator decides it
        plain = not any(
            type(v) is float for d in valid for part in d.values() if isinstance(part, dict) for v in part.values()
        )
        assert GENERATED[name].all_match(valid) or not plain, valid


# --------------------------------------------------------------------------- known samples


def row(**changes: Any) -> dict[str, Any]:
    base: dict[str, Any] = {"kind": "node", "target": "conv1", "name": "observed duration (µs)", "value": 12.5}
    base.update(changes)
    return {key: value for key, value in base.items() if value is not DROP}


DROP = object()


def companion(*rows: dict[str, Any], **top: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {"signature": "netron:attachment", "metadata": [], "metrics": list(rows)}
    doc.update(top)
    return {key: value for key, value in doc.items() if value is not DROP}


def metadata(**changes: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "torchlens.disclaimer": "A picture of a trace, not a runnable model.",
        "torchlens.schema_version": "1.0.0",
        "torchlens.capture_outcome": "complete",
        "torchlens.capture_verified": "no_verdict",
        "torchlens.structure_only": False,
        "torchlens.granularity": "module",
        "torchlens.show_buffers": "meaningful",
        "torchlens.hidden_buffer_count": 0,
        "torchlens.hidden_op_count": 0,
        "torchlens.node_count": 5,
        "torchlens.edge_count": 6,
        "torchlens.function_count": 2,
        "torchlens.omitted_value_count": 0,
        "torchlens.trace_op_count": 9,
        "torchlens.interventions": [],
        "torchlens.torchlens_version": "2.36.1",
    }
    doc.update({f"torchlens.{k}": v for k, v in changes.items()})
    return {key: value for key, value in doc.items() if value is not DROP}


def node(**changes: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "role": "op",
        "attributes": {"function": "torch.nn.functional.conv2d", "module_path": "features.0", "num_params": 448},
        "metadata": {"input_names": "['input', 'weight', 'bias']", "observed_duration": "12.5 µs"},
    }
    for key, value in changes.items():
        section, _, field = key.partition("__")
        if field:
            doc[section][field] = value
        else:
            doc[section] = value
        if value is DROP:
            (doc[section].pop(field) if field else doc.pop(section))
    return doc


def summary(**changes: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "direction": {"subject": "this trace", "reference": "baseline trace"},
        "row_counts": dict.fromkeys(
            ["added", "removed", "unresolved", "excluded_machinery", "unreachable", "zero", "changed"], 0
        ),
        "removed_labels": ["relu_3"],
        "source": "torchlens.diff",
    }
    doc.update(changes)
    return {key: value for key, value in doc.items() if value is not DROP}


SAMPLES: list[tuple[str, str, Any, str | None]] = [
    # (id, schema, instance, None if valid else the data path the generated validator names)
    ("companion-ok", "companion", companion(row(), row(kind="model", target="", name="exported nodes", value=7)), None),
    ("companion-empty", "companion", companion(), None),
    ("companion-graph-empty-target", "companion", companion(row(kind="graph", target="")), None),
    ("companion-value-list", "companion", companion(row(value=["a", 1, 2.5, True])), None),
    ("companion-type-int64", "companion", companion(row(type="int64")), None),
    ("companion-extra-top-key", "companion", companion(identifier="x"), None),
    ("companion-kind-function", "companion", companion(row(kind="function")), "data.metrics[0].kind"),
    ("companion-kind-empty", "companion", companion(row(kind="")), "data.metrics[0].kind"),
    # Whether a target names something Netron shows (model rows: only ""; node rows: a node)
    # is tlnetron.check.validation.companion_problems' job, not the schema's: see the test below.
    ("companion-model-with-target", "companion", companion(row(kind="model", target="x")), None),
    ("companion-node-no-target", "companion", companion(row(target="")), None),
    ("companion-newline-in-name", "companion", companion(row(name="a\nb")), "data.metrics[0].name"),
    ("companion-trailing-newline-in-name", "companion", companion(row(name="a\n")), "data.metrics[0].name"),
    ("companion-cr-in-target", "companion", companion(row(target="a\rb")), "data.metrics[0].target"),
    ("companion-empty-name", "companion", companion(row(name="")), "data.metrics[0].name"),
    ("companion-value-null", "companion", companion(row(value=None)), "data.metrics[0].value"),
    ("companion-value-object", "companion", companion(row(value={"a": 1})), "data.metrics[0].value"),
    ("companion-value-nested-list", "companion", companion(row(value=[[1]])), "data.metrics[0].value[0]"),
    ("companion-type-percentage", "companion", companion(row(type="percentage")), "data.metrics[0].type"),
    ("companion-type-tensor", "companion", companion(row(type="tensor")), "data.metrics[0].type"),
    ("companion-row-extra-key", "companion", companion(row(identifier="x")), "data.metrics[0]"),
    ("companion-row-no-value", "companion", companion(row(value=DROP)), "data.metrics[0]"),
    ("companion-no-metrics", "companion", companion(metrics=DROP), "data"),
    ("companion-bad-signature", "companion", companion(signature="netron:metadata"), "data.signature"),
    ("companion-metadata-row", "companion", {**companion(), "metadata": [row(kind="x")]}, "data.metadata[0].kind"),
    ("metadata-ok", "model-metadata", metadata(), None),
    (
        "metadata-everything",
        "model-metadata",
        metadata(
            capture_outcome_reason="halted at a frontier",
            trace_state="edited",
            depth=2,
            depth_reason="auto",
            warnings=["legibility_budget_exceeded"],
            root_ranks=30,
            observed_duration_total="1.2 ms",
            estimated_flops_total="3.4 MFLOPs",
            captured_bytes_total="5 kB",
            baseline_kind="trace",
            baseline=summary(),
            torch_version="2.5.0",
            interventions=[{"kind": "set", "edit": "zero", "selection": "relu_1", "sites": 1}],
        ),
        None,
    ),
    ("metadata-integral-float-count", "model-metadata", metadata(node_count=5.0), None),
    ("metadata-baseline-string", "model-metadata", metadata(baseline_kind="identifier", baseline="run-41"), None),
    ("metadata-unknown-key", "model-metadata", metadata(colour="red"), "data"),
    ("metadata-missing-required", "model-metadata", metadata(disclaimer=DROP), "data"),
    ("metadata-negative-count", "model-metadata", metadata(node_count=-1), "data.torchlens.node_count"),
    ("metadata-bool-count", "model-metadata", metadata(node_count=True), "data.torchlens.node_count"),
    ("metadata-fractional-count", "model-metadata", metadata(node_count=1.5), "data.torchlens.node_count"),
    ("metadata-depth-zero", "model-metadata", metadata(depth=0), "data.torchlens.depth"),
    ("metadata-version-newline", "model-metadata", metadata(schema_version="1.0.0\n"), "data.torchlens.schema_version"),
    ("metadata-version-short", "model-metadata", metadata(schema_version="1.0"), "data.torchlens.schema_version"),
    ("metadata-export-id", "model-metadata", metadata(export_id="0123456789abcdef" * 2), None),
    (
        "metadata-export-id-upper",
        "model-metadata",
        metadata(export_id="0123456789ABCDEF" * 2),
        "data.torchlens.export_id",
    ),
    ("metadata-export-id-short", "model-metadata", metadata(export_id="0" * 31), "data.torchlens.export_id"),
    ("metadata-export-id-long", "model-metadata", metadata(export_id="0" * 33), "data.torchlens.export_id"),
    ("metadata-export-id-newline", "model-metadata", metadata(export_id="0" * 32 + "\n"), "data.torchlens.export_id"),
    ("metadata-granularity", "model-metadata", metadata(granularity="layer"), "data.torchlens.granularity"),
    (
        "metadata-structure-only-text",
        "model-metadata",
        metadata(structure_only="false"),
        "data.torchlens.structure_only",
    ),
    ("metadata-warning-unknown", "model-metadata", metadata(warnings=["oops"]), "data.torchlens.warnings[0]"),
    (
        "metadata-warning-twice",
        "model-metadata",
        metadata(warnings=["capture_incomplete", "capture_incomplete"]),
        "data.torchlens.warnings",
    ),
    ("metadata-baseline-list", "model-metadata", metadata(baseline=["x"]), "data.torchlens.baseline"),
    (
        "metadata-intervention-extra",
        "model-metadata",
        metadata(interventions=[{"kind": "k", "edit": "e", "selection": "s", "sites": 0, "why": "?"}]),
        "data.torchlens.interventions[0]",
    ),
    ("node-ok", "node-properties", node(), None),
    ("node-empty-sections", "node-properties", node(attributes={}, metadata={}), None),
    ("node-buffer-write", "node-properties", node(role="buffer", attributes__buffer_access="write (inplace)"), None),
    ("node-line-2000", "node-properties", node(attributes__layer="x" * 2000), None),
    ("node-role-module", "node-properties", node(role="module"), "data.role"),
    ("node-no-role", "node-properties", node(role=DROP), "data"),
    (
        "node-buffer-access",
        "node-properties",
        node(attributes__buffer_access="writes"),
        "data.attributes.buffer_access",
    ),
    ("node-line-2001", "node-properties", node(attributes__layer="x" * 2001), "data.attributes.layer"),
    ("node-line-newline", "node-properties", node(attributes__function="f\n"), "data.attributes.function"),
    ("node-module-attr", "node-properties", node(attributes__module="features.0"), "data.attributes"),
    ("node-num-params-zero", "node-properties", node(attributes__num_params=0), "data.attributes.num_params"),
    (
        "node-index-negative",
        "node-properties",
        node(attributes__multi_output_index=-1),
        "data.attributes.multi_output_index",
    ),
    ("node-input-names-bare", "node-properties", node(metadata__input_names="[a]"), "data.metadata.input_names"),
    ("node-input-names-newline", "node-properties", node(metadata__input_names="['a']\n"), "data.metadata.input_names"),
    ("node-input-names-empty", "node-properties", node(metadata__input_names="[]"), "data.metadata.input_names"),
    (
        "node-metadata-number",
        "node-properties",
        node(metadata__observed_duration=12.5),
        "data.metadata.observed_duration",
    ),
    ("summary-ok", "baseline-summary", summary(), None),
    ("summary-extra", "baseline-summary", summary(verdict="same"), "data"),
    ("summary-no-source", "baseline-summary", summary(source=DROP), "data"),
    ("summary-counts-missing", "baseline-summary", summary(row_counts={"added": 1}), "data.row_counts"),
    (
        "summary-count-negative",
        "baseline-summary",
        summary(row_counts={**summary()["row_counts"], "zero": -1}),
        "data.row_counts.zero",
    ),
    ("summary-labels-not-strings", "baseline-summary", summary(removed_labels=[1]), "data.removed_labels[0]"),
]


@pytest.mark.parametrize(("schema", "instance", "error_at"), [s[1:] for s in SAMPLES], ids=[s[0] for s in SAMPLES])
def test_known_samples(schema: str, instance: Any, error_at: str | None) -> None:
    assert reference_accepts(schema, instance) is (error_at is None)
    assert generated_accepts(schema, instance) is (error_at is None)
    if error_at is not None:
        with pytest.raises(SchemaError) as caught:
            GENERATED[schema].validate(instance)
        assert caught.value.name == error_at


def test_node_diff_status_key_is_checked() -> None:
    doc = node()
    doc["metadata"]["torchlens.diff.status"] = "changed"
    assert reference_accepts("node-properties", doc) and generated_accepts("node-properties", doc)
    doc["metadata"]["torchlens.diff.status"] = "different"
    assert not reference_accepts("node-properties", doc)
    with pytest.raises(SchemaError) as caught:
        GENERATED["node-properties"].validate(doc)
    assert caught.value.name == "data.metadata.torchlens.diff.status"
    assert caught.value.rule == "enum"
    assert caught.value.value == "different"


def test_the_cross_reference_check_owns_target_rules() -> None:
    """The schema cannot say which targets Netron shows; tlnetron.check.validation.companion_problems does."""
    validation = pytest.importorskip("tlnetron.check.validation")
    shown = validation.Shown(nodes=frozenset({"conv1"}), values=frozenset({"conv1_out"}), functions=frozenset())

    def problems(*rows: dict[str, Any]) -> list[Any]:
        return list(validation.companion_problems(companion(*rows), shown))

    assert problems(row(), row(kind="model", target="", name="exported nodes", value=7)) == []
    assert problems(row(kind="model", target="x"))  # model rows: the empty target only
    assert problems(row(target=""))  # node rows: a node name
    assert problems(row(kind="value", target="nowhere"))
    assert problems(row(kind="function"))  # schema refusals surface here too
    assert problems(row(name="a\n"))


def test_the_cross_reference_check_names_each_problem_among_many_clean_rows() -> None:
    """A section is cleared at once when clean; one bad row among thousands is still named
    where it is, and finite values whose sum leaves float's range are no problem."""
    validation = pytest.importorskip("tlnetron.check.validation")
    shown = validation.Shown(nodes=frozenset({"conv1"}), values=frozenset({"conv1_out"}), functions=frozenset())
    many = [row(kind="value", target="conv1_out", name=f"row {i}", value=float(i)) for i in range(3000)]

    def where(rows: list[dict[str, Any]]) -> list[str]:
        return [p.where for p in validation.companion_problems(companion(*rows), shown, built=True)]

    assert where(many) == []
    assert (
        where([*many, row(value=1.7e308), row(name="other", value=1.7e308), row(name="x", value=[1e308, 1e308])]) == []
    )
    assert where([*many[:1500], row(value=math.nan), *many[1500:]]) == ["metrics[1500]"]
    assert where([*many, row(kind="value", target="conv1_out", name="row 7", value=1)]) == ["metrics[3000]"]
    assert where([*many[:10], row(target="gone"), *many[10:]]) == ["metrics[10]"]
    assert where([*many, row(name="list", value=[1.0, math.inf])]) == ["metrics[3000]"]

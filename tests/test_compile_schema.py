"""codegen/compile_schema.py on its own: every keyword it implements agrees with jsonschema.

``test_schema_agreement.py`` holds the validators generated from tlnetron's own schemas to
``jsonschema``; this file covers what those schemas do not use today (non-string enums,
``additionalProperties`` as a schema, ``uniqueItems`` with 1 vs 1.0, ``not``, nested refs),
so a schema edit that starts using them is already covered, and checks that anything the
compiler does not implement is refused instead of skipped.
"""

from __future__ import annotations

import functools
import importlib.util
import sys
import types
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonschema import Draft7Validator

ROOT = Path(__file__).resolve().parent.parent
GEN_DIR = ROOT / "src" / "tlnetron" / "_generated"


def _load(name: str, path: Path) -> types.ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


COMPILER = _load("_test_compile_schema", ROOT / "codegen" / "compile_schema.py")
try:
    from tlnetron.build._rows import rows_match as COMPILER_ROWS
except ImportError:  # pragma: no cover - a build without a C compiler
    COMPILER_ROWS = None
ERRORS = _load("_test_compile_schema_errors", GEN_DIR / "_errors.py")


# A stand-in for the generated package: its _errors and _runtime, so a compiled validator
# runs with exactly the names it imports (a missing import fails as it would when shipped).
PACKAGE = "_test_compile_schema_pkg"


def _package() -> None:
    if PACKAGE in sys.modules:
        return
    package = types.ModuleType(PACKAGE)
    package.__path__ = []
    sys.modules[PACKAGE] = package
    sys.modules[f"{PACKAGE}._errors"] = ERRORS
    runtime = types.ModuleType(f"{PACKAGE}._runtime")
    runtime.__package__ = PACKAGE
    sys.modules[f"{PACKAGE}._runtime"] = runtime
    exec(compile(COMPILER.RUNTIME, "<runtime>", "exec"), runtime.__dict__)
    # The stand-in package has no build/_rows: give the validators the compiled row check
    # when it is built, so the agreement tests run its fast answer too.
    try:
        from tlnetron.build._rows import rows_match
    except ImportError:  # pragma: no cover - a build without a C compiler
        rows_match = None
    runtime._rows_match = rows_match  # type: ignore[attr-defined]


def _resolve(ref: str, doc: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
    node: Any = doc
    for part in ref.partition("#")[2].strip("/").split("/"):
        node = node[part]
    return node, doc


def _compile(schema: dict[str, Any]) -> Any:
    """The compiled validator function for ``schema`` (relative refs only)."""
    _package()
    source = COMPILER.compile_schema(schema, _resolve, function="check")
    namespace: dict[str, Any] = {"__name__": f"{PACKAGE}.compiled", "__package__": PACKAGE}
    exec(compile(source, "<compiled schema>", "exec"), namespace)
    return namespace["check"]


SCHEMAS: dict[str, dict[str, Any]] = {
    "types": {"type": ["integer", "null", "boolean"]},
    "number_minimum": {"type": "number", "minimum": 1.5},
    "integer_minimum": {"type": "integer", "minimum": 0},
    "untyped_minimum": {"minimum": 2},
    "string_rules": {"type": "string", "minLength": 2, "maxLength": 4, "pattern": "^a"},
    "untyped_string_rules": {"minLength": 1, "pattern": "b$"},
    "mixed_enum": {"enum": [1, "1", True, None, [1, 2], {"a": 1}]},
    "string_enum": {"enum": ["a", "b"]},
    "const_number": {"const": 1},
    "const_false": {"const": False},
    "object": {
        "type": "object",
        "required": ["a"],
        "properties": {"a": {"type": "integer"}, "b": {"type": "string"}},
        "additionalProperties": False,
    },
    "untyped_object_rules": {"required": ["x"], "properties": {"x": {"const": 1}}},
    # the key-count shortcut: as many keys as required, all present, means no others
    "two_required_closed": {
        "required": ["a", "b"],
        "properties": {"a": {"type": "integer"}, "b": True, "n": {"type": "string"}},
        "additionalProperties": False,
    },
    "required_not_a_property": {"required": ["a", "z"], "properties": {"a": True}, "additionalProperties": False},
    "required_twice": {"required": ["a", "a"], "properties": {"a": True, "b": True}, "additionalProperties": False},
    "required_open": {"required": ["x", "z"], "properties": {"x": {"type": "integer"}}},
    "additional_schema": {"properties": {"a": {"type": "string"}}, "additionalProperties": {"type": "integer"}},
    "array_items": {"type": "array", "items": {"type": "string", "minLength": 1}},
    "unique": {"uniqueItems": True},
    "unique_items": {"type": "array", "items": {"type": ["integer", "number", "boolean"]}, "uniqueItems": True},
    "not_enum": {"type": "string", "not": {"enum": ["x", "y"]}},
    "not_type": {"not": {"type": "integer"}},
    "refs": {
        "definitions": {
            "pos": {"type": "integer", "minimum": 1},
            "row": {
                "type": "object",
                "properties": {"n": {"$ref": "#/definitions/pos"}},
                "additionalProperties": False,
            },
        },
        "type": "array",
        "items": {"$ref": "#/definitions/row"},
    },
    "booleans": {"properties": {"yes": True, "no": False}},
    # arrays of flat rows: checked first by build/_rows.c's rows_match from a generated spec
    "flat_rows": {
        "type": "array",
        "items": {
            "type": "object",
            "required": ["a", "x"],
            "properties": {
                "a": {"enum": ["a", "ab"]},
                "x": {
                    "type": ["string", "integer", "array"],
                    "minLength": 1,
                    "maxLength": 3,
                    "pattern": "^[^\\n\\r]*(?![\\s\\S])",
                    "items": {"type": ["string", "boolean"], "not": {"enum": ["y"]}},
                },
                "n": {"type": "number", "minimum": 0.5},
                "b": {"type": "string", "not": {"enum": ["x"]}},
                "p": {"type": "string", "pattern": "^a*b"},
                "o": {
                    "type": ["object", "null"],
                    "required": ["z"],
                    "properties": {"z": {"type": "integer", "minimum": 0}, "yes": {"type": "object"}},
                    "additionalProperties": False,
                },
            },
            "additionalProperties": False,
        },
    },
    "flat_rows_open": {
        "type": "array",
        "items": {"type": "object", "required": ["n"], "properties": {"n": {"type": ["integer", "null"]}, "yes": True}},
    },
}

json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 3),
    st.sampled_from([0.0, 1.0, 1.5, 2.0, -0.5, 1e300]),
    st.text(alphabet="abxy1\n", max_size=5),
)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(st.sampled_from(["a", "b", "n", "x", "yes", "no", "z", "p", "o"]), inner, max_size=3),
    ),
    max_leaves=8,
)


@pytest.mark.parametrize("name", sorted(SCHEMAS))
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(instance=json_values)
def test_compiled_validator_agrees_with_jsonschema(name: str, instance: Any) -> None:
    schema = SCHEMAS[name]
    check = _compile(schema)
    try:
        check(instance)
    except ERRORS.JsonSchemaValueException as exc:
        accepted = False
        assert exc.name.startswith("data") and exc.message.startswith(exc.name) and exc.rule
    else:
        accepted = True
    assert accepted == Draft7Validator(schema).is_valid(instance), (name, instance)


@functools.lru_cache(maxsize=None)
def _bulk(name: str) -> Any:
    """``bulk(items)`` compiled beside the validator of ``SCHEMAS[name]``."""
    _package()
    source = COMPILER.compile_schema(SCHEMAS[name], _resolve, function="check", bulk="bulk")
    namespace: dict[str, Any] = {"__name__": f"{PACKAGE}.compiled", "__package__": PACKAGE}
    exec(compile(source, "<compiled schema>", "exec"), namespace)
    return namespace["bulk"]


@pytest.mark.parametrize("name", sorted(SCHEMAS))
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(items=st.lists(json_values, max_size=4))
def test_the_bulk_answer_is_yes_only_when_every_item_matches(name: str, items: list[Any]) -> None:
    if _bulk(name)(items):
        validator = Draft7Validator(SCHEMAS[name])
        assert all(validator.is_valid(item) for item in items), (name, items)


@pytest.mark.skipif(COMPILER_ROWS is None, reason="build/_rows is not built here")
def test_the_bulk_answer_is_given_for_objects_only() -> None:
    assert _bulk("object")([{"a": 1}, {"a": 2, "b": "x"}]) is True
    assert _bulk("object")([{"a": 1}, {"a": "1"}]) is False
    assert _bulk("object")([]) is True
    assert _bulk("types")([1, None]) is False  # no object schema: each item is validated
    assert _bulk("untyped_object_rules")([{"x": 1}]) is False  # not known to be an object


def test_error_names_the_path_and_the_rule() -> None:
    check = _compile(SCHEMAS["refs"])
    with pytest.raises(ERRORS.JsonSchemaValueException) as caught:
        check([{"n": 1}, {"n": 0}])
    assert (caught.value.name, caught.value.rule) == ("data[1].n", "minimum")
    assert caught.value.value == 0
    assert caught.value.definition == {"type": "integer", "minimum": 1}
    with pytest.raises(ERRORS.JsonSchemaValueException) as caught:
        check([{"n": 1, "extra": 2}])
    assert (caught.value.name, caught.value.rule) == ("data[0]", "additionalProperties")
    assert "extra" in caught.value.message


@pytest.mark.parametrize(
    ("schema", "what"),
    [
        ({"oneOf": [{"type": "string"}]}, "unsupported keyword"),
        ({"type": "string", "format": "email"}, "unsupported keyword"),
        ({"items": [{"type": "string"}]}, "positional items"),
        ({"type": "decimal"}, "unsupported type"),
        ({"definitions": {"a": {"type": "string"}}, "$ref": "#/definitions/a", "minLength": 2}, "validating siblings"),
        ({"definitions": {"a": {"items": {"$ref": "#/definitions/a"}}}, "$ref": "#/definitions/a"}, "recursive"),
        ({"pattern": "(?P<"}, "does not compile"),
        ({"enum": []}, "empty enum"),
    ],
)
def test_what_the_compiler_does_not_implement_is_refused(schema: dict[str, Any], what: str) -> None:
    with pytest.raises(COMPILER.CompileError, match=what):
        _compile(schema)


def test_output_is_deterministic() -> None:
    schema = SCHEMAS["mixed_enum"]
    first = COMPILER.compile_schema(schema, lambda ref, doc: (doc, doc))
    assert first == COMPILER.compile_schema(schema, lambda ref, doc: (doc, doc))
    assert "frozenset({" not in first  # set reprs vary between runs; the compiler sorts


@pytest.mark.parametrize("pattern", sorted(COMPILER.PATTERN_PREDICATES))
@settings(max_examples=500, deadline=None)
@given(
    text=st.text(alphabet=st.sampled_from(["a", " ", "\n", "\r", "\u2028", "\x85", "\t", "é"]), max_size=6)
    | st.text(max_size=8)
)
def test_pattern_predicates_match_exactly_what_the_regex_matches(pattern: str, text: str) -> None:
    import re

    predicate = eval(COMPILER.PATTERN_PREDICATES[pattern].format(v="text"))
    assert predicate == (re.search(pattern, text) is not None), repr(text)


def test_pattern_predicates_are_used_and_other_patterns_still_compile_to_re() -> None:
    line = next(iter(COMPILER.PATTERN_PREDICATES))
    check = _compile({"type": "string", "pattern": line})
    check("one line")
    with pytest.raises(ERRORS.JsonSchemaValueException) as caught:
        check("two\nlines")
    assert caught.value.rule == "pattern"
    source = COMPILER.compile_schema({"type": "string", "pattern": line}, lambda ref, doc: (doc, doc))
    assert "re.compile" not in source
    source = COMPILER.compile_schema({"type": "string", "pattern": "^a+$"}, lambda ref, doc: (doc, doc))
    assert "re.compile('^a+$').search" in source


def _imported_and_used(source: str) -> tuple[set[str], set[str]]:
    """Names a compiled module imports, and the names its code reads."""
    import ast

    tree = ast.parse(source)
    imported = {
        alias.asname or alias.name
        for node in ast.walk(tree)
        if isinstance(node, (ast.Import, ast.ImportFrom))
        for alias in node.names
    }
    used = {node.id for node in ast.walk(tree) if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load)}
    return imported, used


@pytest.mark.parametrize("name", sorted(SCHEMAS))
def test_compiled_code_imports_exactly_what_it_uses(name: str) -> None:
    source = COMPILER.compile_schema(SCHEMAS[name], _resolve, function="check")
    imported, used = _imported_and_used(source)
    assert imported <= used, f"unused imports {sorted(imported - used)}"
    helpers = {"re", "JsonSchemaValueException", *COMPILER.RUNTIME_HELPERS}
    assert used & helpers <= imported, f"used but not imported {sorted((used & helpers) - imported)}"


def test_import_trimming_is_not_vacuous() -> None:
    """Each optional import appears exactly when a keyword needs it."""
    cases = {
        "import re": ({"pattern": "^a+$"}, {"pattern": next(iter(COMPILER.PATTERN_PREDICATES))}),
        "_json_key": ({"enum": [1, "a"]}, {"enum": ["a", "b"]}),
        "_is_integer": ({"type": "integer"}, {"type": "string"}),
        "JsonSchemaValueException": ({"not": {"type": "string"}}, {"type": "string"}),
    }
    for needle, (needs, does_not) in cases.items():
        assert needle in COMPILER.compile_schema(needs, _resolve), needle
        assert needle not in COMPILER.compile_schema(does_not, _resolve), needle
    assert "import" not in COMPILER.compile_schema({}, _resolve)


def test_runtime_exports_the_helpers_validators_import() -> None:
    _package()
    runtime = sys.modules[f"{PACKAGE}._runtime"]
    assert tuple(runtime.__all__) == COMPILER.RUNTIME_HELPERS
    # _rows_match is None where the C row check is not built: validators then loop in Python
    assert all(callable(getattr(runtime, name)) for name in COMPILER.RUNTIME_HELPERS if name != "_rows_match")
    from tlnetron._generated import _runtime
    from tlnetron.build import companion

    assert (_runtime._rows_match is None) == (companion.COMPILED is None)


@pytest.mark.parametrize(
    ("items", "fast"),
    [
        ({"type": "object", "properties": {"a": {"type": "string", "pattern": "^[^\\n\\r]*(?![\\s\\S])"}}}, True),
        ({"type": "object", "properties": {"a": {"enum": ["x"]}, "b": {"items": {"type": "null"}}}}, True),
        ({"$ref": "#/definitions/row"}, True),
        ({"type": "object", "properties": {"a": {"type": "string", "pattern": "^a"}}}, True),  # by its search
        ({"type": "object", "properties": {"a": {"minimum": 1}}}, True),
        ({"type": "object", "properties": {"a": {"type": "object", "properties": {"b": {"minimum": 0}}}}}, True),
        ({"properties": {"a": True}}, False),  # not known to be an object: the loop words it
        ({"type": "object", "properties": {"a": {"const": 1}}}, False),
        ({"type": "object", "properties": {"a": {"enum": [1, "1"]}}}, False),
        ({"type": "object", "properties": {"a": {"not": {"type": "string"}}}}, False),
        ({"type": "object", "properties": {"a": {"type": "object", "properties": {"b": {"const": 1}}}}}, False),
        ({"type": "object", "additionalProperties": {"type": "string"}}, False),
        ({"type": "object", "required": ["z"], "properties": {"a": True}, "additionalProperties": False}, False),
    ],
)
def test_flat_rows_get_the_compiled_check_and_nothing_else_does(items: dict[str, Any], fast: bool) -> None:
    schema = {"definitions": {"row": {"type": "object", "required": ["a"]}}, "type": "array", "items": items}
    source = COMPILER.compile_schema(schema, _resolve, function="check")
    assert ("_rows_match(" in source) == fast, source
    check = _compile(schema)
    assert check([]) == []


def test_every_supported_keyword_has_one_emitter() -> None:
    table = COMPILER._Compiler.KEYWORDS
    keywords = [k for group, _ in table for k in group]
    assert len(keywords) == len(set(keywords)), "a keyword in two table rows"
    assert set(keywords) == COMPILER.VALIDATING
    for _, method in table:
        assert callable(getattr(COMPILER._Compiler, method)), method
    # The table is what the compiler consults: drop a row and its keyword is no longer checked.
    schema = {"type": "string", "minLength": 2}
    assert "must be longer" in COMPILER.compile_schema(schema, _resolve)
    original = COMPILER._Compiler.KEYWORDS
    try:
        COMPILER._Compiler.KEYWORDS = tuple(row for row in original if "minLength" not in row[0])
        assert "must be longer" not in COMPILER.compile_schema(schema, _resolve)
    finally:
        COMPILER._Compiler.KEYWORDS = original

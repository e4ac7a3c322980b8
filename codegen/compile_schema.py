"""Compile a draft-07 JSON Schema (the subset tlnetron's schemas use) to plain Python.

Why our own compiler: an export validates every node and every companion row (thousands
per model). fastjsonschema's code builds each value's data path eagerly (a ``str.format``
per array item) and calls one function per sub-schema; on GPT-2-small that was ~9 ms of a
~60 ms export. The code written here inlines every sub-schema (``$ref`` included) into one
function per schema and builds a data path only when it raises.

Semantics follow draft-07 as ``jsonschema.Draft7Validator`` applies it (the test suite holds
the two to agreement with Hypothesis, ``tests/test_schema_agreement.py``):

* ``integer`` accepts floats with no fractional part; ``number`` and ``integer`` never
  accept booleans; ``enum``/``const`` compare like JSON (``1 == 1.0``, ``True != 1``);
* a ``$ref`` ignores its sibling keywords (draft-07), so a sibling that validates is refused
  here rather than silently skipped;
* string lengths count code points; ``pattern`` is a regular-expression *search*.

Any keyword outside the supported set is a :class:`CompileError`: a schema change that
needs a new keyword must teach this compiler, never be silently skipped.

Errors raise ``JsonSchemaValueException(message, value=, name=, definition=, rule=)`` from
the generated package's ``_errors.py``, with ``name`` the data path (``data.metrics[3].name``).
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable
from typing import Any, NamedTuple

__all__ = ["RUNTIME", "CompileError", "compile_schema"]

# Keywords that only annotate (never reject a value).
ANNOTATIONS = frozenset(
    {"$schema", "$id", "$comment", "title", "description", "version", "definitions", "default", "examples"}
)
TYPES = ("string", "integer", "number", "boolean", "array", "object", "null")

# Patterns with an exactly equivalent plain-Python test (checked against ``re`` by
# tests/test_compile_schema.py): ``{v}`` is the value. A regular-expression search costs
# ~0.3 us per string; tlnetron checks this one on every node name, row name and target.
PATTERN_PREDICATES = {
    # "one line": anchored at the start, no CR/LF, then the end of the string.
    "^[^\\n\\r]*(?![\\s\\S])": "('\\n' not in {v} and '\\r' not in {v})",
}


# The helpers _runtime.py defines for validators (what a validator may import from it).
RUNTIME_HELPERS = ("_fail", "_is_integer", "_is_number", "_json_key", "_rows_match")

# An array of objects (of scalars, arrays and objects) is first checked in one C call,
# build/_rows.c's rows_match, from a spec written here; it answers True only when every row
# surely matches, and otherwise the Python loop decides. Its masks spell JSON types as bits:
ROW_TYPE_BITS = {"string": 1, "integer": 2, "number": 4, "boolean": 8, "array": 16, "object": 32, "null": 64}
ONE_LINE = "^[^\\n\\r]*(?![\\s\\S])"  # rows_match tests it without a regex (PATTERN_PREDICATES' first)
_ROW_KEYWORDS = frozenset({"type", "properties", "required", "additionalProperties"})
_VALUE_KEYWORDS = (
    frozenset({"type", "enum", "minLength", "maxLength", "pattern", "not", "items", "minimum"}) | _ROW_KEYWORDS
)


class CompileError(Exception):
    """The schema uses something this compiler does not implement."""


# Used by the compiler for enum/const members and copied verbatim into _runtime.py (RUNTIME).
def _json_key(value):
    """Hashable; equal exactly when the JSON values are equal (1 == 1.0, True != 1)."""
    if isinstance(value, bool):
        return ("b", value)
    if isinstance(value, (int, float)):
        if isinstance(value, float) and not value.is_integer():
            return ("n", value)
        return ("n", int(value))
    if isinstance(value, str):
        return ("s", value)
    if value is None:
        return ("z",)
    if isinstance(value, (list, tuple)):
        return ("a", tuple(_json_key(v) for v in value))
    if isinstance(value, dict):
        return ("o", tuple(sorted((str(k), _json_key(v)) for k, v in value.items())))
    return ("?", id(value))


RUNTIME = '''\
"""Helpers shared by every generated validator (written once, as ``_generated/_runtime.py``)."""

from ._errors import JsonSchemaValueException

__all__ = ["_fail", "_is_integer", "_is_number", "_json_key", "_rows_match"]

try:  # one C pass over an array of flat rows (tlnetron.build._rows); None in a build without C
    from ..build._rows import rows_match as _rows_match
except ImportError:
    _rows_match = None


def _name(path, *more):
    """The data path as fastjsonschema spells it: data.key[3].other."""
    parts = [*path, *more]
    out = [str(parts[0])]
    for part in parts[1:]:
        out.append(f"[{part}]" if isinstance(part, int) else f".{part}")
    return "".join(out)


def _fail(message, value, path, more, definition, rule):
    name = _name(path, *more)
    raise JsonSchemaValueException(f"{name} {message}", value=value, name=name, definition=definition, rule=rule)


JSON_KEY_SOURCE


def _is_integer(value):
    if value.__class__ is int:
        return True
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return True
    return isinstance(value, float) and value.is_integer()


def _is_number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool)
'''.replace("JSON_KEY_SOURCE\n", inspect.getsource(_json_key))


class _Site(NamedTuple):
    """Where one (sub)schema is being compiled: what every keyword method needs."""

    schema: dict[str, Any]
    var: str  # the Python variable holding the value under test
    path: list[str]  # data path parts after ``path`` (Python expressions)
    out: list[str]  # code lines appended to
    depth: int  # indentation level of the code
    doc: dict[str, Any]  # the schema document relative $refs resolve against
    known: str | None  # the one type the value is known to have once ``type`` passed

    @property
    def pad(self) -> str:
        return "    " * self.depth


class _Compiler:
    # Keyword(s) -> the method that emits their check, in the order checks are written.
    # Supporting a new keyword is one ``_kw_*`` method plus one row here (VALIDATING below
    # is derived from this table).
    KEYWORDS: tuple[tuple[tuple[str, ...], str], ...] = (
        (("$ref",), "_kw_ref"),
        (("type",), "_kw_type"),
        (("enum", "const"), "_kw_enum"),
        (("minLength", "maxLength", "pattern"), "_kw_string"),
        (("minimum",), "_kw_minimum"),
        (("properties", "required", "additionalProperties"), "_kw_object"),
        (("items", "uniqueItems"), "_kw_array"),
        (("not",), "_kw_not"),
    )

    def __init__(self, resolve: Callable[[str, dict[str, Any]], tuple[dict[str, Any], dict[str, Any]]]) -> None:
        self.resolve = resolve
        self.consts: list[str] = []  # module-level constant definitions
        self.const_ids: dict[str, str] = {}
        self.patterns: dict[str, str] = {}
        self.n_vars = 0
        self.ref_stack: list[str] = []
        self.uses: set[str] = set()  # run-time names the emitted code refers to

    # ----------------------------------------------------------------- helpers

    def const(self, value: Any, prefix: str = "_D") -> str:
        """A module-level constant holding ``value`` (deduplicated by its repr)."""
        if isinstance(value, frozenset):  # a set's repr order varies between runs
            text = "frozenset(" + repr(tuple(sorted(value, key=repr))) + ")"
        else:
            text = repr(value)
        return self.const_text(text, prefix)

    def const_text(self, text: str, prefix: str) -> str:
        """A module-level constant whose source is ``text`` (deduplicated by it)."""
        name = self.const_ids.get(text)
        if name is None:
            name = f"{prefix}{len(self.const_ids)}"
            self.const_ids[text] = name
            self.consts.append(f"{name} = {text}")
        return name

    def pattern(self, regex: str) -> str:
        try:
            re.compile(regex)
        except re.error as exc:
            raise CompileError(f"pattern {regex!r} does not compile in Python: {exc}") from None
        name = self.patterns.get(regex)
        if name is None:
            name = f"_P{len(self.patterns)}"
            self.patterns[regex] = name
            self.consts.append(f"{name} = re.compile({regex!r}).search")
            self.uses.add("re")
        return name

    def var(self) -> str:
        self.n_vars += 1
        return f"v{self.n_vars}"

    def use(self, name: str) -> str:
        """``name`` (a run-time helper), recorded so the module imports it."""
        self.uses.add(name)
        return name

    @staticmethod
    def more(parts: list[str]) -> str:
        return "(" + "".join(f"{p}, " for p in parts) + ")"

    def fail(
        self, out: list[str], pad: str, message: str, var: str, path: list[str], schema: dict[str, Any], rule: str
    ) -> None:
        out.append(
            f"{pad}{self.use('_fail')}({message}, {var}, path, {self.more(path)}, {self.const(schema)}, {rule!r})"
        )

    def site_fail(self, site: _Site, pad: str, message: str, rule: str) -> None:
        self.fail(site.out, pad, message, site.var, site.path, site.schema, rule)

    # ----------------------------------------------------------------- schema nodes

    def emit(self, schema: Any, var: str, path: list[str], out: list[str], depth: int, doc: dict[str, Any]) -> None:
        """Append code that checks ``var`` against ``schema``; ``path`` are parts after ``path``."""
        if schema is True or schema == {}:
            return
        if schema is False:
            self.fail(out, "    " * depth, "'must not be present (schema false)'", var, path, {}, "false")
            return
        if not isinstance(schema, dict):
            raise CompileError(f"a schema must be an object or a boolean, got {schema!r}")
        unknown = [k for k in schema if k not in VALIDATING and k not in ANNOTATIONS and not k.startswith("x-")]
        if unknown:
            raise CompileError(f"unsupported keyword(s) {sorted(unknown)}; teach codegen/compile_schema.py")
        site = _Site(schema, var, path, out, depth, doc, self.known_type(schema))
        for keywords, method in self.KEYWORDS:
            if any(k in schema for k in keywords):
                getattr(self, method)(site)

    @staticmethod
    def known_type(schema: dict[str, Any]) -> str | None:
        """The one type a value has once the schema's ``type`` check passed (None: several or any)."""
        types = schema.get("type")
        if isinstance(types, str):
            return types
        if isinstance(types, list) and len(types) == 1:
            return str(types[0])
        return None

    def _kw_ref(self, site: _Site) -> None:
        schema = site.schema
        siblings = [k for k in schema if k in VALIDATING and k != "$ref"]
        if siblings:
            raise CompileError(f"$ref {schema['$ref']} has validating siblings {siblings}: draft-07 ignores them")
        ref = schema["$ref"]
        key = f"{id(site.doc)}{ref}"
        if key in self.ref_stack:
            raise CompileError(f"recursive $ref {ref} is not supported")
        target, target_doc = self.resolve(ref, site.doc)
        self.ref_stack.append(key)
        self.emit(target, site.var, site.path, site.out, site.depth, target_doc)
        self.ref_stack.pop()

    def _kw_type(self, site: _Site) -> None:
        types = site.schema["type"]
        if not isinstance(types, (str, list)):
            raise CompileError(f"unsupported type {types!r}")
        type_list = [types] if isinstance(types, str) else list(types)
        if not type_list or any(t not in TYPES for t in type_list):
            raise CompileError(f"unsupported type {types!r}")
        # Exact-class tests of every type first: a union's isinstance fallbacks run only for subclasses.
        tests = [self.type_test(t, site.var) for t in type_list]
        cond = " or ".join([fast for fast, _ in tests] + [slow for _, slow in tests if slow])
        site.out.append(f"{site.pad}if not ({cond}):")
        self.site_fail(site, site.pad + "    ", repr("must be " + " or ".join(type_list)), "type")

    def _kw_enum(self, site: _Site) -> None:
        schema, var = site.schema, site.var
        rule = "enum" if "enum" in schema else "const"
        members = list(schema["enum"]) if rule == "enum" else [schema["const"]]
        if not members:
            raise CompileError("an empty enum accepts nothing")
        message = f"must be one of {members!r}" if rule == "enum" else f"must be same as const definition: {members[0]}"
        if all(isinstance(m, str) for m in members):
            allowed = self.const(frozenset(members), "_E")
            site.out.append(
                f"{site.pad}if not ({var}.__class__ is str or isinstance({var}, str)) or {var} not in {allowed}:"
            )
        else:
            allowed = self.const(frozenset(_json_key(m) for m in members), "_E")
            site.out.append(f"{site.pad}if {self.use('_json_key')}({var}) not in {allowed}:")
        self.site_fail(site, site.pad + "    ", repr(message), rule)

    def _kw_string(self, site: _Site) -> None:
        schema, var, out, pad = site.schema, site.var, site.out, site.pad
        inner = pad + "    "
        if site.known == "string":
            out.append(f"{pad}if True:")
        else:
            out.append(f"{pad}if {var}.__class__ is str or isinstance({var}, str):")
        if "minLength" in schema or "maxLength" in schema:
            n = self.var()
            out.append(f"{inner}{n} = len({var})")
            if "minLength" in schema:
                lo = int(schema["minLength"])
                out.append(f"{inner}if {n} < {lo}:")
                self.site_fail(
                    site, inner + "    ", repr(f"must be longer than or equal to {lo} characters"), "minLength"
                )
            if "maxLength" in schema:
                hi = int(schema["maxLength"])
                out.append(f"{inner}if {n} > {hi}:")
                self.site_fail(
                    site, inner + "    ", repr(f"must be shorter than or equal to {hi} characters"), "maxLength"
                )
        if "pattern" in schema:
            predicate = PATTERN_PREDICATES.get(schema["pattern"])
            if predicate is not None:
                out.append(f"{inner}if not {predicate.format(v=var)}:")
            else:
                search = self.pattern(schema["pattern"])
                out.append(f"{inner}if {search}({var}) is None:")
            self.site_fail(site, inner + "    ", repr(f"must match pattern {schema['pattern']}"), "pattern")

    def _kw_minimum(self, site: _Site) -> None:
        lo = site.schema["minimum"]
        if isinstance(lo, bool) or not isinstance(lo, (int, float)):
            raise CompileError(f"minimum {lo!r} is not a number")
        site.out.append(f"{site.pad}if {self.use('_is_number')}({site.var}) and {site.var} < {lo!r}:")
        self.site_fail(site, site.pad + "    ", repr(f"must be bigger than or equal to {lo}"), "minimum")

    def _kw_not(self, site: _Site) -> None:
        out, pad = site.out, site.pad
        sub: list[str] = []
        self.emit(site.schema["not"], site.var, site.path, sub, site.depth + 2, site.doc)
        if not sub:  # "not": {} (or true) rejects everything
            self.site_fail(site, pad, repr("must NOT match a disallowed definition"), "not")
        else:
            out.append(f"{pad}try:")
            out.append(f"{pad}    if True:")
            out.extend(sub)
            out.append(f"{pad}except {self.use('JsonSchemaValueException')}:")
            out.append(f"{pad}    pass")
            out.append(f"{pad}else:")
            self.site_fail(site, pad + "    ", repr("must NOT match a disallowed definition"), "not")

    def type_test(self, t: str, var: str) -> tuple[str, str]:
        """The test that ``var`` has JSON type ``t``: (exact-class test, fallback for subclasses or "")."""
        if t == "integer":
            return f"{var}.__class__ is int", f"{self.use('_is_integer')}({var})"
        if t == "number":
            return f"{var}.__class__ is int or {var}.__class__ is float", f"{self.use('_is_number')}({var})"
        return {
            "string": (f"{var}.__class__ is str", f"isinstance({var}, str)"),
            "boolean": (f"{var} is True or {var} is False", ""),
            "array": (f"{var}.__class__ is list", f"isinstance({var}, (list, tuple))"),
            "object": (f"{var}.__class__ is dict", f"isinstance({var}, dict)"),
            "null": (f"{var} is None", ""),
        }[t]

    def _kw_object(self, site: _Site) -> None:
        schema, var, path, out, depth, doc = site.schema, site.var, site.path, site.out, site.depth, site.doc
        pad = site.pad
        inner = pad + "    "
        props: dict[str, Any] = schema.get("properties", {})
        required: list[str] = schema.get("required", [])
        extra = schema.get("additionalProperties", True)
        if not isinstance(props, dict) or not isinstance(required, list):
            raise CompileError("properties must be an object and required a list")
        guard = f"{pad}if True:" if site.known == "object" else f"{pad}if isinstance({var}, dict):"
        out.append(guard)
        # Required properties are looked up by name (a missing one raises KeyError, free until it
        # does) and the key set is compared only when the object has more keys than required:
        # thousands of rows cost a few lookups each, not a loop over their keys.
        looked_up: dict[str, str] = {}
        if required:
            needed = self.const(tuple(required), "_R")
            out.append(f"{inner}try:")
            for name in required:
                looked_up[name] = self.var()
                out.append(f"{inner}    {looked_up[name]} = {var}[{name!r}]")
            out.append(f"{inner}except KeyError:")
            missing = f"sorted(k for k in {needed} if k not in {var})"
            out.append(
                f"{inner}    {self.use('_fail')}('must contain ' + str({missing}) + ' properties', {var}, "
                f"path, {self.more(path)}, {self.const(schema)}, 'required')"
            )
        if extra is False:
            # (the offending keys are sorted as text: a Python caller's dict may hold other keys)
            # With every required key present, as many keys as required means no others.
            only_required = set(required) <= set(props) and len(set(required)) == len(required)
            size = f"len({var}) != {len(required)} and " if only_required and required else ""
            allowed = self.const(frozenset(props), "_S")
            out.append(f"{inner}if {size}not {var}.keys() <= {allowed}:")
            out.append(
                f"{inner}    {self.use('_fail')}('must not contain ' + str(sorted((k for k in {var} if k not in "
                f"{allowed}), key=str)) + ' properties', {var}, path, {self.more(path)}, {self.const(schema)}, "
                "'additionalProperties')"
            )
        for name, sub in props.items():
            value = looked_up.get(name) or self.var()
            checks: list[str] = []
            self.emit(sub, value, [*path, repr(name)], checks, depth + (1 if name in looked_up else 2), doc)
            if not checks:
                continue
            if name in looked_up:
                out.extend(checks)
            else:
                out.append(f"{inner}if {name!r} in {var}:")
                out.append(f"{inner}    {value} = {var}[{name!r}]")
                out.extend(checks)
        if extra is not True and extra is not False:
            key, value = self.var(), self.var()
            rest: list[str] = []
            self.emit(extra, value, [*path, key], rest, depth + 3, doc)
            if rest:
                out.append(f"{inner}for {key}, {value} in {var}.items():")
                out.append(f"{inner}    if {key} not in {self.const(frozenset(props), '_S')}:")
                out.extend(rest)
        if out[-1] == guard:  # every property accepts anything: nothing to check
            out.append(f"{inner}pass")

    def _kw_array(self, site: _Site) -> None:
        schema, var, path, out = site.schema, site.var, site.path, site.out
        pad = site.pad
        inner = pad + "    "
        guard = f"{pad}if True:" if site.known == "array" else f"{pad}if isinstance({var}, (list, tuple)):"
        out.append(guard)
        items = schema.get("items", True)
        if isinstance(items, list):
            raise CompileError("positional items (an array of schemas) are not supported")
        if items is not True and items != {}:
            index, item = self.var(), self.var()
            spec = row_spec(items, site.doc, self.resolve, self.pattern)
            loop = inner + "    " if spec is not None else inner
            checks: list[str] = []
            self.emit(items, item, [*path, index], checks, site.depth + (3 if spec is not None else 2), site.doc)
            if checks:
                if spec is not None:
                    fast = self.use("_rows_match")
                    out.append(f"{inner}if {fast} is None or not {fast}({var}, {self.const_text(spec, '_F')}):")
                out.append(f"{loop}for {index}, {item} in enumerate({var}):")
                out.extend(checks)
        if schema.get("uniqueItems") is True:
            out.append(f"{inner}if len({{{self.use('_json_key')}(x) for x in {var}}}) != len({var}):")
            self.site_fail(site, inner + "    ", repr("must contain unique items"), "uniqueItems")
        if out[-1] == guard:
            out.append(f"{inner}pass")


def _resolved(schema: Any, doc: dict[str, Any], resolve: Callable[..., Any]) -> tuple[Any, dict[str, Any]]:
    """``schema`` with a bare ``$ref`` (annotations aside) followed, as often as it is one."""
    for _ in range(32):
        if not isinstance(schema, dict) or "$ref" not in schema:
            return schema, doc
        if any(k != "$ref" and k not in ANNOTATIONS and not k.startswith("x-") for k in schema):
            return None, doc  # emit() refuses validating siblings of a $ref
        schema, doc = resolve(schema["$ref"], doc)
    return None, doc


def _str_set(members: Any) -> str | None:
    """Source of a frozenset of string members (sorted: stable output), None for other members."""
    if not isinstance(members, list) or not members or not all(isinstance(m, str) for m in members):
        return None
    return "frozenset(" + repr(tuple(sorted(set(members)))) + ")"


def row_spec(
    schema: Any, doc: dict[str, Any], resolve: Callable[..., Any], pattern: Callable[[str], str]
) -> str | None:
    """Source of rows_match's spec for objects of ``schema``: ``(required count, extra keys
    allowed, {key: (required, check)})``; None when it is no object schema rows_match can
    check. ``pattern(regex)`` names the validator's compiled search for a pattern."""
    schema, doc = _resolved(schema, doc, resolve)
    if not isinstance(schema, dict) or schema.get("type") != "object":
        return None
    if any(k not in _ROW_KEYWORDS and k not in ANNOTATIONS and not k.startswith("x-") for k in schema):
        return None
    return _object_spec(schema, doc, resolve, pattern)


def _object_spec(
    schema: dict[str, Any],
    doc: dict[str, Any],
    resolve: Callable[..., Any],
    pattern: Callable[[str], str],
    depth: int = 0,
) -> str | None:
    if depth > 16:  # a recursive schema: emit() refuses it, and a spec would never end
        return None
    props, required = schema.get("properties", {}), schema.get("required", [])
    extra = schema.get("additionalProperties", True)
    if not isinstance(props, dict) or not isinstance(required, list) or extra not in (True, False):
        return None
    if not all(isinstance(k, str) for k in required) or (extra is False and not set(required) <= set(props)):
        return None
    entries = []
    for key in sorted(set(props) | set(required)):
        check = _value_check(props.get(key, True), doc, resolve, pattern, depth + 1)
        if check is None:
            return None
        entries.append(f"{key!r}: ({key in required!r}, {check})")
    return f"({len(set(required))}, {extra!r}, {{{', '.join(entries)}}})"


def _value_check(
    schema: Any, doc: dict[str, Any], resolve: Callable[..., Any], pattern: Callable[[str], str], depth: int = 0
) -> str | None:
    """Source of one property's check: ``(type mask, enum, min length, max length (-1: none),
    one line, not enum, items' check, pattern's search, object's spec, minimum)``; None when it
    needs a keyword rows_match lacks."""
    schema, doc = _resolved(schema, doc, resolve)
    if depth > 16:
        return None
    if schema is True or schema == {}:
        return f"({sum(ROW_TYPE_BITS.values())}, None, 0, -1, False, None, None, None, None, None)"
    if not isinstance(schema, dict):
        return None
    if any(k not in _VALUE_KEYWORDS and k not in ANNOTATIONS and not k.startswith("x-") for k in schema):
        return None
    types = schema.get("type", list(ROW_TYPE_BITS))
    types = [types] if isinstance(types, str) else types
    if not isinstance(types, list) or not types or any(t not in ROW_TYPE_BITS for t in types):
        return None
    enum = _str_set(schema["enum"]) if "enum" in schema else "None"
    lo, hi = schema.get("minLength", 0), schema.get("maxLength", -1)
    if enum is None or not all(isinstance(n, int) and not isinstance(n, bool) and n >= -1 for n in (lo, hi)):
        return None
    regex = schema.get("pattern", ONE_LINE)
    if not isinstance(regex, str):
        return None
    search = "None" if regex == ONE_LINE else pattern(regex)
    banned = "None"
    if "not" in schema:
        rule, _ = _resolved(schema["not"], doc, resolve)
        kept = {k: v for k, v in rule.items() if k not in ANNOTATIONS} if isinstance(rule, dict) else None
        banned = _str_set(kept.get("enum")) if kept is not None and set(kept) == {"enum"} else None
        if banned is None:
            return None
    items = "None"
    if "items" in schema:
        if schema["items"] is True or schema["items"] == {}:
            items = "None"
        else:
            items = _value_check(schema["items"], doc, resolve, pattern, depth + 1)  # type: ignore[assignment]
            if items is None:
                return None
    minimum = schema.get("minimum")
    if minimum is not None and (isinstance(minimum, bool) or not isinstance(minimum, (int, float))):
        return None
    # an object value is checked by its own spec; without one (no object allowed) it is left to Python
    obj = "None"
    if "object" in types and "enum" not in schema:
        obj = _object_spec(schema, doc, resolve, pattern, depth + 1)  # type: ignore[assignment]
        if obj is None:
            return None
    mask = sum(ROW_TYPE_BITS[t] for t in set(types))
    one_line = "pattern" in schema and regex == ONE_LINE
    return f"({mask}, {enum}, {lo}, {hi}, {one_line!r}, {banned}, {items}, {search}, {obj}, {minimum!r})"


# Keywords this compiler implements (one row of _Compiler.KEYWORDS each).
VALIDATING = frozenset(k for keywords, _ in _Compiler.KEYWORDS for k in keywords)


def compile_schema(
    schema: dict[str, Any],
    resolve: Callable[[str, dict[str, Any]], tuple[dict[str, Any], dict[str, Any]]],
    function: str = "_validate",
    bulk: str | None = None,
) -> str:
    """Python source defining ``function(data)`` (raises on the first violation).

    ``resolve(ref, doc)`` returns ``(target schema, the document it lives in)`` for a
    ``$ref`` met inside ``doc`` (relative refs resolve against ``doc``). With ``bulk``, it also
    defines ``bulk(items)``: True when every item of a list surely matches (one rows_match
    call), False when the items need ``function`` to tell (always, for a schema it cannot
    state as a spec).
    """
    compiler = _Compiler(resolve)
    body: list[str] = []
    compiler.emit(schema, "data", [], body, 1, schema)
    tail: list[str] = []
    if bulk is not None:
        spec = row_spec(schema, schema, resolve, compiler.pattern)
        answer = "False"
        if spec is not None:
            fast = compiler.use("_rows_match")
            answer = f"{fast} is not None and {fast}(items, {compiler.const_text(spec, '_F')})"
        tail = ["", "", f"def {bulk}(items):", f"    return {answer}"]
    # Import only what the emitted code refers to (no unused imports in generated code).
    uses = compiler.uses
    imports: list[str] = []
    if "re" in uses:
        imports += ["import re", ""]
    relative = []
    if "JsonSchemaValueException" in uses:
        relative.append("from ._errors import JsonSchemaValueException")
    helpers = [name for name in RUNTIME_HELPERS if name in uses]
    if helpers:
        relative.append("from ._runtime import " + ", ".join(helpers))
    if relative:
        imports += [*relative, ""]
    lines = [
        *imports,
        *compiler.consts,
        "",
        "",
        f"def {function}(data, path=('data',)):",
        *(body or ["    pass"]),
        "    return data",
        *tail,
    ]
    return "\n".join(lines) + "\n"

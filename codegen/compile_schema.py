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
import json
import re
from collections.abc import Callable
from typing import Any

__all__ = ["RUNTIME", "CompileError", "compile_schema"]

# Keywords that only annotate (never reject a value).
ANNOTATIONS = frozenset(
    {"$schema", "$id", "$comment", "title", "description", "version", "definitions", "default", "examples"}
)
# Keywords this compiler implements.
VALIDATING = frozenset(
    {
        "type",
        "enum",
        "const",
        "properties",
        "required",
        "additionalProperties",
        "items",
        "minLength",
        "maxLength",
        "pattern",
        "minimum",
        "not",
        "uniqueItems",
        "$ref",
    }
)
TYPES = ("string", "integer", "number", "boolean", "array", "object", "null")

# Patterns with an exactly equivalent plain-Python test (checked against ``re`` by
# tests/test_compile_schema.py): ``{v}`` is the value. A regular-expression search costs
# ~0.3 us per string; tlnetron checks this one on every node name, row name and target.
PATTERN_PREDICATES = {
    # "one line": anchored at the start, no CR/LF, then the end of the string.
    "^[^\\n\\r]*(?![\\s\\S])": "('\\n' not in {v} and '\\r' not in {v})",
}


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

__all__ = ["_fail", "_is_integer", "_is_number", "_json_key"]


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


class _Compiler:
    def __init__(self, root: dict[str, Any], resolve: Callable[[str, dict[str, Any]], tuple[dict[str, Any], dict[str, Any]]]) -> None:
        self.root = root
        self.resolve = resolve
        self.consts: list[str] = []  # module-level constant definitions
        self.const_ids: dict[str, str] = {}
        self.patterns: dict[str, str] = {}
        self.n_vars = 0
        self.ref_stack: list[str] = []

    # ----------------------------------------------------------------- helpers

    def const(self, value: Any, prefix: str = "_D") -> str:
        """A module-level constant holding ``value`` (deduplicated by its repr)."""
        if isinstance(value, frozenset):  # a set's repr order varies between runs
            text = "frozenset(" + repr(tuple(sorted(value, key=repr))) + ")"
        else:
            text = repr(value)
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
        return name

    def var(self) -> str:
        self.n_vars += 1
        return f"v{self.n_vars}"

    @staticmethod
    def more(parts: list[str]) -> str:
        return "(" + "".join(f"{p}, " for p in parts) + ")"

    def fail(self, out: list[str], pad: str, message: str, var: str, path: list[str], schema: dict[str, Any], rule: str) -> None:
        out.append(
            f"{pad}_fail({message}, {var}, path, {self.more(path)}, {self.const(schema)}, {rule!r})"
        )

    # ----------------------------------------------------------------- schema nodes

    def emit(self, schema: Any, var: str, path: list[str], out: list[str], depth: int, doc: dict[str, Any]) -> None:
        """Append code that checks ``var`` against ``schema``; ``path`` are parts after ``path``."""
        pad = "    " * depth
        if schema is True or schema == {}:
            return
        if schema is False:
            self.fail(out, pad, "'must not be present (schema false)'", var, path, {}, "false")
            return
        if not isinstance(schema, dict):
            raise CompileError(f"a schema must be an object or a boolean, got {schema!r}")
        unknown = [k for k in schema if k not in VALIDATING and k not in ANNOTATIONS and not k.startswith("x-")]
        if unknown:
            raise CompileError(f"unsupported keyword(s) {sorted(unknown)}; teach codegen/compile_schema.py")

        if "$ref" in schema:
            siblings = [k for k in schema if k in VALIDATING and k != "$ref"]
            if siblings:
                raise CompileError(f"$ref {schema['$ref']} has validating siblings {siblings}: draft-07 ignores them")
            ref = schema["$ref"]
            key = f"{id(doc)}{ref}"
            if key in self.ref_stack:
                raise CompileError(f"recursive $ref {ref} is not supported")
            target, target_doc = self.resolve(ref, doc)
            self.ref_stack.append(key)
            self.emit(target, var, path, out, depth, target_doc)
            self.ref_stack.pop()
            return

        types = schema.get("type")
        known = None  # the one type the value is known to have once the type check passed
        if types is not None:
            type_list = [types] if isinstance(types, str) else list(types)
            if not type_list or any(t not in TYPES for t in type_list):
                raise CompileError(f"unsupported type {types!r}")
            cond = " or ".join(self.type_test(t, var) for t in type_list)
            known = type_list[0] if len(type_list) == 1 else None
            out.append(f"{pad}if not ({cond}):")
            self.fail(out, pad + "    ", repr("must be " + " or ".join(type_list)), var, path, schema, "type")

        if "enum" in schema or "const" in schema:
            rule = "enum" if "enum" in schema else "const"
            members = list(schema["enum"]) if rule == "enum" else [schema["const"]]
            if not members:
                raise CompileError("an empty enum accepts nothing")
            message = (
                f"must be one of {members!r}" if rule == "enum" else f"must be same as const definition: {members[0]}"
            )
            if all(isinstance(m, str) for m in members):
                allowed = self.const(frozenset(members), "_E")
                out.append(f"{pad}if not ({var}.__class__ is str or isinstance({var}, str)) or {var} not in {allowed}:")
            else:
                allowed = self.const(frozenset(_json_key(m) for m in members), "_E")
                out.append(f"{pad}if _json_key({var}) not in {allowed}:")
            self.fail(out, pad + "    ", repr(message), var, path, schema, rule)

        string_rules = [k for k in ("minLength", "maxLength", "pattern") if k in schema]
        if string_rules:
            inner = pad + "    "
            if known == "string":
                out.append(f"{pad}if True:")
            else:
                out.append(f"{pad}if {var}.__class__ is str or isinstance({var}, str):")
            if "minLength" in schema or "maxLength" in schema:
                n = self.var()
                out.append(f"{inner}{n} = len({var})")
                if "minLength" in schema:
                    lo = int(schema["minLength"])
                    out.append(f"{inner}if {n} < {lo}:")
                    self.fail(out, inner + "    ", repr(f"must be longer than or equal to {lo} characters"), var, path, schema, "minLength")
                if "maxLength" in schema:
                    hi = int(schema["maxLength"])
                    out.append(f"{inner}if {n} > {hi}:")
                    self.fail(out, inner + "    ", repr(f"must be shorter than or equal to {hi} characters"), var, path, schema, "maxLength")
            if "pattern" in schema:
                predicate = PATTERN_PREDICATES.get(schema["pattern"])
                if predicate is not None:
                    out.append(f"{inner}if not {predicate.format(v=var)}:")
                else:
                    search = self.pattern(schema["pattern"])
                    out.append(f"{inner}if {search}({var}) is None:")
                self.fail(out, inner + "    ", repr(f"must match pattern {schema['pattern']}"), var, path, schema, "pattern")

        if "minimum" in schema:
            lo = schema["minimum"]
            if isinstance(lo, bool) or not isinstance(lo, (int, float)):
                raise CompileError(f"minimum {lo!r} is not a number")
            out.append(f"{pad}if _is_number({var}) and {var} < {lo!r}:")
            self.fail(out, pad + "    ", repr(f"must be bigger than or equal to {lo}"), var, path, schema, "minimum")

        if any(k in schema for k in ("properties", "required", "additionalProperties")):
            self.emit_object(schema, var, path, out, depth, doc, known == "object")

        if "items" in schema or "uniqueItems" in schema:
            self.emit_array(schema, var, path, out, depth, doc, known == "array")

        if "not" in schema:
            sub: list[str] = []
            self.emit(schema["not"], var, path, sub, depth + 2, doc)
            if not sub:  # "not": {} (or true) rejects everything
                self.fail(out, pad, repr("must NOT match a disallowed definition"), var, path, schema, "not")
            else:
                out.append(f"{pad}try:")
                out.append(f"{pad}    if True:")
                out.extend(sub)
                out.append(f"{pad}except JsonSchemaValueException:")
                out.append(f"{pad}    pass")
                out.append(f"{pad}else:")
                self.fail(out, pad + "    ", repr("must NOT match a disallowed definition"), var, path, schema, "not")

    @staticmethod
    def type_test(t: str, var: str) -> str:
        return {
            "string": f"{var}.__class__ is str or isinstance({var}, str)",
            "integer": f"{var}.__class__ is int or _is_integer({var})",
            "number": f"{var}.__class__ is int or {var}.__class__ is float or _is_number({var})",
            "boolean": f"{var} is True or {var} is False",
            "array": f"isinstance({var}, (list, tuple))",
            "object": f"isinstance({var}, dict)",
            "null": f"{var} is None",
        }[t]

    def emit_object(
        self, schema: dict[str, Any], var: str, path: list[str], out: list[str], depth: int, doc: dict[str, Any], known: bool
    ) -> None:
        pad = "    " * depth
        inner = pad + "    "
        props: dict[str, Any] = schema.get("properties", {})
        required: list[str] = schema.get("required", [])
        extra = schema.get("additionalProperties", True)
        if not isinstance(props, dict) or not isinstance(required, list):
            raise CompileError("properties must be an object and required a list")
        out.append(f"{pad}if True:" if known else f"{pad}if isinstance({var}, dict):")
        if required:
            needed = self.const(tuple(required), "_R")
            out.append(f"{inner}for key in {needed}:")
            out.append(f"{inner}    if key not in {var}:")
            missing = f"sorted(k for k in {needed} if k not in {var})"
            out.append(
                f"{inner}        _fail('must contain ' + str({missing}) + ' properties', {var}, path, {self.more(path)}, {self.const(schema)}, 'required')"
            )
        if not props and extra is True:
            return
        key, value = self.var(), self.var()
        out.append(f"{inner}for {key}, {value} in {var}.items():")
        body = inner + "    "
        first = True
        for name, sub in props.items():
            checks: list[str] = []
            self.emit(sub, value, [*path, repr(name)], checks, depth + 3, doc)
            out.append(f"{body}{'if' if first else 'elif'} {key} == {name!r}:")
            out.extend(checks or [f"{body}    pass"])
            first = False
        if extra is True:
            return
        rest: list[str] = []
        if extra is False:
            allowed = self.const(tuple(props), "_K")
            rest.append(f"{body}    _fail('must not contain ' + str(sorted(k for k in {var} if k not in {allowed})) + ' properties', {var}, path, {self.more(path)}, {self.const(schema)}, 'additionalProperties')")
        else:
            self.emit(extra, value, [*path, key], rest, depth + 3, doc)
        if rest:
            out.append(f"{body}else:" if not first else f"{body}if True:")
            out.extend(rest)

    def emit_array(
        self, schema: dict[str, Any], var: str, path: list[str], out: list[str], depth: int, doc: dict[str, Any], known: bool
    ) -> None:
        pad = "    " * depth
        inner = pad + "    "
        guard = f"{pad}if True:" if known else f"{pad}if isinstance({var}, (list, tuple)):"
        out.append(guard)
        items = schema.get("items", True)
        if isinstance(items, list):
            raise CompileError("positional items (an array of schemas) are not supported")
        if items is not True and items != {}:
            index, item = self.var(), self.var()
            checks: list[str] = []
            self.emit(items, item, [*path, index], checks, depth + 2, doc)
            if checks:
                out.append(f"{inner}for {index}, {item} in enumerate({var}):")
                out.extend(checks)
        if schema.get("uniqueItems") is True:
            out.append(f"{inner}if len({{_json_key(x) for x in {var}}}) != len({var}):")
            self.fail(out, inner + "    ", repr("must contain unique items"), var, path, schema, "uniqueItems")
        if out[-1] == guard:
            out.append(f"{inner}pass")


def compile_schema(
    schema: dict[str, Any],
    resolve: Callable[[str, dict[str, Any]], tuple[dict[str, Any], dict[str, Any]]],
    function: str = "_validate",
) -> str:
    """Python source defining ``function(data)`` (raises on the first violation).

    ``resolve(ref, doc)`` returns ``(target schema, the document it lives in)`` for a
    ``$ref`` met inside ``doc`` (relative refs resolve against ``doc``).
    """
    compiler = _Compiler(schema, resolve)
    body: list[str] = []
    compiler.emit(schema, "data", [], body, 1, schema)
    lines = [
        "import re",
        "",
        "from ._errors import JsonSchemaValueException",
        "from ._runtime import _fail, _is_integer, _is_number, _json_key",
        "",
        *compiler.consts,
        "",
        "",
        f"def {function}(data, path=('data',)):",
        *(body or ["    pass"]),
        "    return data",
    ]
    return "\n".join(lines) + "\n"


def _self_check() -> None:  # pragma: no cover - a quick manual smoke run
    schema = json.loads('{"type": "object", "properties": {"a": {"type": "integer", "minimum": 1}}, "required": ["a"]}')
    print(compile_schema(schema, lambda ref, doc: (doc, doc)))


if __name__ == "__main__":  # pragma: no cover
    _self_check()

"""The published JSON Schemas and the generated validators (stage 4 building block).

The schemas ship inside the wheel, once, as package data (``tlnetron/schema/``; the
repository's ``schema/`` is a symlink to it); third-party tools load them from
:func:`schema_dir` and validate with any draft-07 validator. tlnetron itself runs the
validators generated from the same files by ``codegen/``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from importlib import resources
from pathlib import Path
from typing import Any

from .._generated import (
    validate_baseline_summary,
    validate_companion,
    validate_model_metadata,
    validate_node_properties,
)
from .._generated._errors import JsonSchemaValueException
from .._generated.vocab import SCHEMA_IDS, SCHEMA_VERSION

__all__ = [
    "SCHEMA_VERSION",
    "SchemaViolation",
    "load_schema",
    "schema_dir",
    "schema_files",
    "validate",
    "validate_each",
]

_MODULES = {
    "model-metadata": validate_model_metadata,
    "node-properties": validate_node_properties,
    "companion": validate_companion,
    "baseline-summary": validate_baseline_summary,
}
_VALIDATORS: dict[str, Callable[[Any], Any]] = {name: module.validate for name, module in _MODULES.items()}


class SchemaViolation(Exception):
    """``data`` does not match a tlnetron schema: ``path`` points at the offending value."""

    index: int | None = None
    """Position of the failing item when :func:`validate_each` raised it."""

    def __init__(self, schema: str, path: str, message: str, rule: str | None) -> None:
        self.schema = schema
        self.path = path
        self.rule = rule
        super().__init__(f"{schema}: {message}")


def validate(schema: str, data: Any) -> None:
    """Validate ``data`` against the schema named ``schema`` (e.g. ``"companion"``).

    Raises:
        SchemaViolation: with the data path and the failing rule.
    """
    try:
        _VALIDATORS[schema](data)
    except JsonSchemaValueException as exc:
        raise SchemaViolation(schema, str(exc.name or "data"), str(exc.message), exc.rule) from None


def validate_each(schema: str, items: Iterable[Any]) -> None:
    """Validate every item against ``schema`` (one validator lookup and handler for all).

    Raises:
        SchemaViolation: for the first failing item; its ``index`` is that item's position.
    """
    check = _VALIDATORS[schema]
    items = items if isinstance(items, list) else list(items)
    if _MODULES[schema].all_match(items):  # one compiled check; otherwise each item decides and words it
        return
    index = -1
    try:
        for index, data in enumerate(items):
            check(data)
    except JsonSchemaValueException as exc:
        violation = SchemaViolation(schema, str(exc.name or "data"), str(exc.message), exc.rule)
        violation.index = index
        raise violation from None


def schema_dir() -> Path:
    """Folder of the installed schema files (``*.schema.json``)."""
    return Path(str(resources.files("tlnetron") / "schema"))


def schema_files() -> dict[str, Path]:
    """Installed schema file per ``$id``."""
    base = schema_dir()
    return {sid: base / name for name, sid in sorted(SCHEMA_IDS.items())}


def load_schema(name: str) -> dict[str, Any]:
    """Load one installed schema by file stem (``"companion"``) or file name."""
    file = name if name.endswith(".json") else f"{name}.schema.json"
    data: dict[str, Any] = json.loads((schema_dir() / file).read_text(encoding="utf-8"))
    return data

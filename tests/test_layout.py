"""The package's shape: stages import one way (no cycles), one module reads torchlens, and
the views registry matches the granularity vocabulary. Read from the source, no torch."""

from __future__ import annotations

import ast
from pathlib import Path

from tlnetron._generated.vocab import GRANULARITY
from tlnetron.views import VIEWS

SRC = Path(__file__).resolve().parent.parent / "src" / "tlnetron"
MODULES = {p.stem: p for p in SRC.glob("*.py")}


def _imports(path: Path) -> set[str]:
    """The tlnetron modules ``path`` imports, anywhere in it (lazy imports included);
    ``from . import name`` of a non-module is an import of the package (``__init__``)."""
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(node, ast.ImportFrom):
            continue
        if node.level == 1 and node.module:
            out.add(node.module.split(".")[0])
        elif node.level == 1:
            out.update(a.name if a.name in MODULES else "__init__" for a in node.names)
        elif node.module and node.module.split(".")[0] == "tlnetron":
            parts = node.module.split(".")
            out.add(parts[1] if len(parts) > 1 else "__init__")
    return {m for m in out if m in MODULES and m != path.stem}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_no_import_cycles() -> None:
    graph = {name: _imports(path) for name, path in MODULES.items()}
    assert graph["api"] and graph["pipeline"]  # the reading finds imports at all
    assert _cycles(graph) == []


def test_a_cycle_would_be_found() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == [["a", "b", "c"]]


def test_only_the_reader_reads_torchlens_traces() -> None:
    """The demo traces its own model; everything else sees the IR only."""
    readers = set()
    for name, path in MODULES.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            if any(n == "torchlens" or n.startswith("torchlens.") for n in names):
                readers.add(name)
            assert not any(n.startswith("torchlens.export") for n in names), f"{name} imports torchlens.export"
    assert readers == {"reader", "demo"}


def test_every_granularity_has_a_view() -> None:
    assert tuple(VIEWS) == GRANULARITY or sorted(VIEWS) == sorted(GRANULARITY)
    for granularity, view in VIEWS.items():
        assert view.granularity == granularity

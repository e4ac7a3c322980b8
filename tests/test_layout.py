"""The package's shape: stages import one way (no cycles), one module reads torchlens, and
the views registry matches the granularity vocabulary. Read from the source, no torch."""

from __future__ import annotations

import ast
from pathlib import Path

from tlnetron._generated.vocab import GRANULARITY
from tlnetron.views import VIEWS

SRC = Path(__file__).resolve().parent.parent / "src" / "tlnetron"

# The pipeline, in the order an export runs it: a stage imports only from itself and earlier
# stages (and the shared modules), never from a later one.
STAGES = ("ir", "read", "words", "views", "build", "check", "write", "pages")
# Used by every stage: errors, options and the small services each stage reports through.
SHARED = {"errors", "options", "perf", "progress", "result", "_records", "_version", "_generated"}
# The top: the public surface and the one function that runs the stages in order.
TOP = {"__init__", "api", "pipeline", "cli", "demo", "integration"}


def _name(path: Path) -> str:
    """``read/trace.py`` -> ``read.trace``; a package's ``__init__.py`` is the package's name."""
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__" and len(parts) > 1:
        parts.pop()
    return ".".join(parts)


MODULES = {_name(p): p for p in SRC.rglob("*.py") if "_generated" not in p.relative_to(SRC).parts}


def _resolve(path: Path, level: int, module: str | None) -> str:
    """The dotted name (under tlnetron) a relative import in ``path`` reaches."""
    here = _name(path).split(".")
    package = here if path.name == "__init__.py" else here[:-1]
    base = package[: len(package) - (level - 1)] if level > 1 else package
    if base == ["__init__"]:
        base = []
    return ".".join([*base, *(module.split(".") if module else [])])


def _known(name: str) -> str | None:
    """The module (or package) a dotted name is, trimmed to the longest one that exists."""
    parts = name.split(".")
    while parts:
        candidate = ".".join(parts)
        if candidate in MODULES:
            return candidate
        parts.pop()
    return "__init__" if name == "" else None


def _imports(path: Path) -> set[str]:
    """The tlnetron modules ``path`` imports, anywhere in it (lazy imports included);
    ``from . import name`` imports the module ``name`` if there is one, else the package."""
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(node, ast.ImportFrom):
            continue
        if node.level:
            target = _resolve(path, node.level, node.module)
        elif node.module and node.module.split(".")[0] == "tlnetron":
            target = ".".join(node.module.split(".")[1:])
        else:
            continue
        for alias in node.names:
            found = _known(f"{target}.{alias.name}" if target else alias.name)
            if found is None or found == target:
                found = _known(target)
            if found is not None:
                out.add(found)
    return {m for m in out if m != _name(path) and m in MODULES}


def _stage(name: str) -> str:
    head = name.split(".")[0]
    return head if head in STAGES else ("shared" if head in SHARED else "top")


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
    assert graph["api"] and graph["pipeline"] and graph["read.trace"]  # the reading finds imports at all
    assert _cycles(graph) == []


def test_every_module_is_in_a_stage_the_shared_modules_or_the_top() -> None:
    assert {n for n in MODULES if "." not in n} <= set(STAGES) | SHARED | TOP
    assert set(STAGES) <= set(MODULES)  # each stage is a package


def test_stages_import_one_way() -> None:
    """A stage reads earlier stages and the shared modules; shared modules read only each other."""
    order = {stage: i for i, stage in enumerate(STAGES)}
    wrong = []
    for name, path in MODULES.items():
        stage = _stage(name)
        if stage == "top":
            continue
        for dep in _imports(path):
            target = _stage(dep)
            if target == "shared" or (stage != "shared" and target in order and order[target] <= order[stage]):
                continue
            wrong.append(f"{name} ({stage}) imports {dep} ({target})")
    assert wrong == []


def test_a_backward_import_would_be_found() -> None:
    """The rule reads relative imports the way Python resolves them."""
    path = SRC / "words" / "docs.py"
    assert _resolve(path, 2, "views.nodes") == "views.nodes"
    assert _resolve(path, 1, "text") == "words.text"
    assert _resolve(SRC / "views" / "__init__.py", 1, "module") == "views.module"
    assert _stage("views.nodes") == "views" and _stage("perf") == "shared" and _stage("cli") == "top"


def test_a_cycle_would_be_found() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == [["a", "b", "c"]]


def test_only_the_reader_reads_torchlens_traces() -> None:
    """read.trace reads Trace objects; read.baseline runs TorchLens' differential on two of
    them and reads its report (the Trace's own attributes through read.trace); the demo
    traces its own model; everything else sees the IR only."""
    readers = set()
    for name, path in MODULES.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else []
            )
            if any(n == "torchlens" or n.startswith("torchlens.") for n in names):
                readers.add(name)
            assert not any(n.startswith("torchlens.export") for n in names), f"{name} imports torchlens.export"
    assert readers == {"read.trace", "read.baseline", "demo"}


def test_every_granularity_has_a_view() -> None:
    assert tuple(VIEWS) == GRANULARITY or sorted(VIEWS) == sorted(GRANULARITY)
    for granularity, view in VIEWS.items():
        assert view.granularity == granularity

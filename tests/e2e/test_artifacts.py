"""Real exports of real architectures, opened in the real Netron the way a person does.

For each (model, granularity) the bare Netron app is served, the artifact is dropped on
it, then its ``netron:attachment`` companion; then everything a person would look at is
read back from the page and compared with what the artifact and the companion say:

* one op box per node of the root graph, and nothing else drawn as a node;
* every edge Netron can label carries its shape label: the multiset of drawn labels
  equals the one computed from the artifact with Netron's own rules (reader contract
  §4: rank >= 1, dims joined by "×", 0 / missing / -1 print "?", over 16 UTF-16
  characters no label, one edge per producer->consumer pair labelled by the first value);
* the companion's rows show in Node Properties (Metadata, Metrics) and Model Properties;
* every companion target matches something Netron shows;
* module view: a two-level drill-down (breadcrumb, body edge labels, inner rows);
* rolled view of the loop: passes / recurrence, no cycle.

Render times are recorded per (model, granularity) in pytest's cache,
``.pytest_cache/d/tlnetron-e2e/render-times.json`` (not in the temporary folder, which the
suite leaves empty), and printed (run with ``-s`` to see the table).
"""

from __future__ import annotations

import base64
import copy
import json
import math
import re
import time
import warnings
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

import tlnetron
from tlnetron._generated.vocab import GRANULARITY, BufferPolicy, CaptureStatus, Granularity, MetaKey, NodeAttr
from netron_driver import ErrorDialogError, NetronPage

pytestmark = pytest.mark.e2e

MODELS = ["demo", "gpt2", "gpt2_small", "bert", "resnet", "loop", "multi_output_mixed", "conv3d"]
DRILL_MODELS = {"demo", "gpt2", "gpt2_small", "bert"}
LABEL_CAP = 16  # UTF-16 code units; longer labels are not drawn (reader contract §4)
HONESTY_KEYS = (
    MetaKey.CAPTURE_OUTCOME,
    MetaKey.GRANULARITY,
    MetaKey.SHOW_BUFFERS,
    MetaKey.HIDDEN_BUFFER_COUNT,
    MetaKey.HIDDEN_OP_COUNT,
    MetaKey.NODE_COUNT,
    MetaKey.EDGE_COUNT,
    MetaKey.FUNCTION_COUNT,
)
RENDER_TIMES_JSON = Path("tlnetron-e2e", "render-times.json")
"""Where the render times go, inside pytest's cache folder."""

Json = dict[str, Any]


# --------------------------------------------------------------------------- exports


@dataclass(frozen=True)
class Exported:
    name: str
    granularity: str
    artifact: Path
    companion: Path
    model: Json
    attachment: Json

    @property
    def graph(self) -> Json:
        return self.model["graph"]  # type: ignore[no-any-return]


def export_quietly(log: Any, path: Path, **kwargs: Any) -> tlnetron.ExportResult:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", tlnetron.TlnetronWarning)
        return tlnetron.export(log, path, **kwargs)


ExportFn = Callable[[str, str], Exported]


@pytest.fixture(scope="module")
def exported(zoo_trace: Any, tmp_path_factory: pytest.TempPathFactory) -> ExportFn:
    cache: dict[tuple[str, str], Exported] = {}
    root = tmp_path_factory.mktemp("artifacts")

    def get(name: str, granularity: str) -> Exported:
        key = (name, granularity)
        if key not in cache:
            path = root / f"{name}_{granularity}.onnx.json"
            result = export_quietly(zoo_trace(name), path, granularity=granularity)
            assert result.companion is not None and result.companion.is_file()
            cache[key] = Exported(
                name,
                granularity,
                path,
                result.companion,
                json.loads(path.read_text("utf-8")),
                json.loads(result.companion.read_text("utf-8")),
            )
        return cache[key]

    return get


RENDER_TIMES: dict[str, float] = {}


@pytest.fixture(scope="module", autouse=True)
def _report_render_times(request: pytest.FixtureRequest) -> Iterator[None]:
    yield
    if not RENDER_TIMES:
        return
    cache = getattr(request.config, "cache", None)  # None under -p no:cacheprovider
    where = ""
    if cache is not None:
        path = cache.mkdir(RENDER_TIMES_JSON.parent.name) / RENDER_TIMES_JSON.name
        path.write_text(json.dumps(RENDER_TIMES, indent=1, sort_keys=True) + "\n", encoding="utf-8")
        where = f", also in {path}"
    print(f"\nNetron render seconds (drop -> drawn){where}:")
    for key in sorted(RENDER_TIMES):
        print(f"  {key:<40} {RENDER_TIMES[key]:6.2f}")


# --------------------------------------------------------------------------- Netron's rules, in Python


def utf16_len(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


def shape_label(value_type: Json | None) -> str:
    """The edge label Netron draws for a value of this type ("" = no label), reader contract §4."""
    if not value_type or "tensorType" not in value_type:
        return ""
    shape = value_type["tensorType"].get("shape")
    if not shape or not shape.get("dim"):
        return ""  # unknown rank or a scalar
    parts = []
    for dim in shape["dim"]:
        if dim.get("dimParam"):
            parts.append(dim["dimParam"])
        elif "dimValue" in dim and int(dim["dimValue"]) not in (0, -1):
            parts.append(str(int(dim["dimValue"])))
        else:
            parts.append("?")  # missing, -1 and 0 all print as "?"
    text = "\u00d7".join(parts)
    return text if utf16_len(text) <= LABEL_CAP else ""


def value_types(body: Json) -> dict[str, Json]:
    """Name -> type from a GraphProto's (or FunctionProto's) input, output and valueInfo."""
    types: dict[str, Json] = {}
    for section in ("valueInfo", "input", "output"):
        for info in body.get(section, []):
            if isinstance(info, dict) and "type" in info:
                types[info["name"]] = info["type"]
    return types


def _names(items: Sequence[Any]) -> list[str]:
    return [item if isinstance(item, str) else item["name"] for item in items]


def expected_edges(body: Json) -> dict[tuple[Any, Any], str]:
    """(producer, consumer) -> label of the edges Netron draws for a graph or function body.

    Mirrors ``view.Graph.add`` / ``view.Value.build``: values are built in the order they
    were first seen (graph inputs, then per node its inputs then outputs, then graph
    outputs); one edge per producer->consumer box pair, labelled by the first value.
    Producers / consumers are ("input", i), ("node", i), ("output", i).
    """
    types = value_types(body)
    order: list[str] = []
    seen: set[str] = set()
    producer: dict[str, tuple[str, int]] = {}
    consumers: dict[str, list[tuple[str, int]]] = {}

    def create(name: str) -> None:
        if name not in seen:
            seen.add(name)
            order.append(name)

    for i, name in enumerate(_names(body.get("input", []))):
        create(name)
        producer[name] = ("input", i)
    for i, node in enumerate(body.get("node", [])):
        for name in node.get("input", []):
            if name:
                create(name)
                consumers.setdefault(name, []).append(("node", i))
        for name in node.get("output", []):
            if name:
                create(name)
                producer[name] = ("node", i)
    for i, name in enumerate(_names(body.get("output", []))):
        create(name)
        consumers.setdefault(name, []).append(("output", i))
    edges: dict[tuple[Any, Any], str] = {}
    for name in order:
        if name not in producer:
            continue
        for consumer in consumers.get(name, []):
            edges.setdefault((producer[name], consumer), shape_label(types.get(name)))
    return edges


def js_text(value: Any) -> str:
    """How Netron's sidebar prints a companion row value (reader contract §7)."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return js_number(value)
    if isinstance(value, list):
        return ", ".join(js_text(v) for v in value)
    return str(value)


def js_number(x: float) -> str:
    """JavaScript ``Number.prototype.toString()`` for a float (repr gives the same shortest digits)."""
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "Infinity" if x > 0 else "-Infinity"
    if x == 0:
        return "0"
    sign = "-" if x < 0 else ""
    _, digit_tuple, exponent = Decimal(repr(abs(x))).as_tuple()
    assert isinstance(exponent, int)
    digits = "".join(map(str, digit_tuple)).lstrip("0")
    while digits.endswith("0"):
        digits, exponent = digits[:-1], exponent + 1
    k = len(digits)
    n = exponent + k  # value = 0.<digits> x 10^n
    if k <= n <= 21:
        return sign + digits + "0" * (n - k)
    if 0 < n <= 21:
        return sign + digits[:n] + "." + digits[n:]
    if -6 < n <= 0:
        return sign + "0." + "0" * (-n) + digits
    e = n - 1
    mantissa = digits[0] + ("." + digits[1:] if k > 1 else "")
    return f"{sign}{mantissa}e{'+' if e >= 0 else '-'}{abs(e)}"


def attribute_text(attribute: Json) -> str:
    kind = attribute.get("type")
    if kind == "STRING":
        return base64.b64decode(attribute.get("s", "")).decode("utf-8")
    if kind == "INT":
        return str(int(attribute.get("i", 0)))
    if kind == "INTS":
        return ", ".join(str(int(v)) for v in attribute.get("ints", []))
    if kind == "FLOAT":
        return js_text(attribute.get("f", 0.0))
    if kind == "STRINGS":
        return ", ".join(base64.b64decode(v).decode("utf-8") for v in attribute.get("strings", []))
    raise AssertionError(f"attribute type {kind!r} not handled by this test")


_INPUT_NAMES = re.compile(r"^\[('[^']*'(, '[^']*')*)\]$")


def expected_metadata(node: Json, attachment: Json, *, is_call: bool) -> list[tuple[str, str]]:
    """Node Properties -> Metadata: metadataProps (input_names consumed as port names by
    Netron for custom-domain ops) then the companion's metadata rows (same name: replaced in place)."""
    rows: dict[str, str] = {}
    for prop in node.get("metadataProps", []):
        if prop["key"] == "input_names" and not is_call and _INPUT_NAMES.match(prop["value"]):
            continue
        rows[prop["key"]] = prop["value"]
    for name, text in companion_rows(attachment, "metadata", "node", node["name"]):
        rows[name] = text
    return list(rows.items())


def companion_rows(attachment: Json, section: str, kind: str, target: str) -> list[tuple[str, str]]:
    """(name, shown text) of the companion's ``section`` rows for (kind, target); last duplicate wins."""
    rows: dict[str, str] = {}
    for row in attachment.get(section, []):
        if row.get("kind") == kind and row.get("target") == target:
            rows[row["name"]] = js_text(row.get("value"))
    return list(rows.items())


def functions_by_key(model: Json) -> dict[tuple[str, str, str], Json]:
    return {(f.get("domain", ""), f["name"], f.get("overload", "")): f for f in model.get("functions", [])}


def body_of(model: Json, node: Json) -> Json | None:
    """The FunctionProto a call node resolves to (domain, opType, overload all exact), or None."""
    key = (node.get("domain", "") or "ai.onnx", node["opType"], node.get("overload", ""))
    return functions_by_key(model).get(key)


def shown_node_names(model: Json) -> set[str]:
    """Names of every node Netron can show: the root graph's and every function body's."""
    names = {n.get("name", "").split("\n", 1)[0] for n in model["graph"].get("node", [])}
    for fn in model.get("functions", []):
        names |= {n.get("name", "").split("\n", 1)[0] for n in fn.get("node", [])}
    names.discard("")
    return names


def unmatched_targets(model: Json, attachment: Json) -> list[tuple[str, str, str]]:
    """(section, kind, target) of companion rows that match nothing Netron shows (reader contract §7)."""
    nodes = shown_node_names(model)
    functions = {f["name"] for f in model.get("functions", [])}
    values = {o for n in model["graph"].get("node", []) for o in n.get("output", [])}
    values |= {v["name"] for v in (*model["graph"].get("input", []), *model["graph"].get("output", []))}
    for fn in model.get("functions", []):
        values |= {o for n in fn.get("node", []) for o in n.get("output", [])}
        values |= {*fn.get("input", []), *fn.get("output", [])}
    out = []
    for section in ("metadata", "metrics"):
        for row in attachment.get(section, []):
            kind, target = row.get("kind"), row.get("target")
            if kind == "node":
                ok = isinstance(target, str) and target in nodes
            elif kind in ("model",):
                ok = target == ""
            elif kind == "graph":
                ok = target == "" or target in functions
            elif kind == "value":
                ok = isinstance(target, str) and target in values
            else:
                ok = False  # tensor rows: tlnetron writes none; anything else shows nowhere
            if not ok:
                out.append((section, str(kind), str(target)))
    return out


def breadcrumb_text(function: Json) -> str:
    """What Netron's breadcrumb button shows for a function: its identifier, last 24 chars."""
    name = f"{function['name']}:{function['overload']}" if function.get("overload") else function["name"]
    return name if len(name) <= 24 else "\u2026" + name[-24:]


# --------------------------------------------------------------------------- page checks


def op_boxes(netron: NetronPage) -> list[dict[str, Any]]:
    return [n for n in netron.drawn_nodes() if n["kind"] == "node"]


def check_drawn_body(netron: NetronPage, body: Json, where: str) -> None:
    """Boxes, inputs/outputs, edges and labels of the drawn graph equal the body's."""
    drawn = netron.drawn_nodes()
    boxes = [n for n in drawn if n["kind"] == "node"]
    names = [n["name"] for n in body.get("node", [])]
    assert len(boxes) == len(names), f"{where}: {len(boxes)} op boxes drawn, artifact has {len(names)} nodes"
    assert Counter(b["name"] for b in boxes) == Counter(names), where
    assert sum(n["kind"] == "input" for n in drawn) == len(body.get("input", [])), where
    assert sum(n["kind"] == "output" for n in drawn) == len(body.get("output", [])), where
    assert [n for n in drawn if n["kind"] == "other"] == [], where

    edges = expected_edges(body)
    expected_labels = Counter(label for label in edges.values() if label)
    drawn_labels = Counter(netron.edge_labels())
    assert netron.edge_path_count() == len(edges), f"{where}: edge count"
    assert drawn_labels == expected_labels, (
        f"{where}: drawn edge labels differ from the artifact's: "
        f"missing {dict(expected_labels - drawn_labels)}, extra {dict(drawn_labels - expected_labels)}"
    )
    assert all(utf16_len(label) <= LABEL_CAP for label in drawn_labels)


def check_targets_drawn(netron: NetronPage, body: Json, attachment: Json, where: str) -> None:
    """Every node-row target that names a node of this body has a drawn box ``node-name-<target>``."""
    ids = {n["id"] for n in op_boxes(netron)}
    body_names = {n["name"] for n in body.get("node", [])}
    targets = {
        row["target"]
        for section in ("metadata", "metrics")
        for row in attachment[section]
        if row["kind"] == "node" and row["target"] in body_names
    }
    missing = sorted(t for t in targets if f"node-name-{t}" not in ids)
    assert missing == [], f"{where}: companion targets with no drawn box: {missing}"


def check_node_sidebar(netron: NetronPage, model: Json, node: Json, attachment: Json, where: str) -> dict[str, Any]:
    props = netron.open_node_properties(node["name"])
    is_call = body_of(model, node) is not None
    top = dict(props["Node Properties"])
    assert top["name"] == node["name"], where
    if node.get("attribute"):
        expected_attrs = sorted(
            ((a["name"], attribute_text(a)) for a in node["attribute"]), key=lambda kv: kv[0].lower()
        )
        assert props["Attributes"] == expected_attrs, f"{where}: attributes of {node['name']}"
    metrics = companion_rows(attachment, "metrics", "node", node["name"])
    metadata = expected_metadata(node, attachment, is_call=is_call)
    assert metrics, f"{where}: the test picked {node['name']!r}, which has no companion metrics"
    assert props.get("Metadata") == metadata, f"{where}: Metadata of {node['name']}"
    assert props.get("Metrics") == metrics, f"{where}: Metrics of {node['name']}"
    return props


def rows_once_attached(netron: NetronPage, node: str, *, timeout: float = 10.0) -> dict[str, Any]:
    """Node Properties of ``node`` once the companion (dropped by the page itself) is applied.

    The page dispatches the drop itself; the attachment is read asynchronously, and an open
    sidebar is not refreshed, so re-open it until rows show.
    """
    deadline = time.monotonic() + timeout
    while True:
        props = netron.open_node_properties(node)
        if "Metrics" in props or time.monotonic() > deadline:
            return props
        time.sleep(0.1)


def check_pair_in_page(netron: NetronPage, model: Json, attachment: Json, where: str) -> None:
    """A page that dropped the pair itself: a node's and the model's companion rows, then the
    same inside a drilled-into function (the app is Netron's, only framed or inlined)."""
    graph = model["graph"]
    op = next(n for n in graph["node"] if "overload" not in n)
    props = rows_once_attached(netron, op["name"])
    assert props.get("Metrics") == companion_rows(attachment, "metrics", "node", op["name"]), props
    check_node_sidebar(netron, model, op, attachment, where)
    model_props = netron.open_model_properties()
    assert model_props["Metrics"] == companion_rows(attachment, "metrics", "model", "")
    call = next(n for n in graph["node"] if "overload" in n)
    netron.drill_into(call["name"])
    body = next(f for f in model["functions"] if f.get("overload") == call["overload"])
    check_drawn_body(netron, body, f"{where}, inside {call['name']}")
    inner = next(n for n in body["node"] if "overload" not in n)
    check_node_sidebar(netron, model, inner, attachment, f"{where}, drilled in")
    netron.go_up()


def first_node_with(
    attachment: Json, body: Json, metric: str, *, calls: bool | None = None, model: Json | None = None
) -> Json | None:
    """The first node of ``body`` with a companion metrics row named ``metric`` (calls only / none)."""
    targets = {r["target"] for r in attachment["metrics"] if r["kind"] == "node" and r["name"] == metric}
    node: Json
    for node in body.get("node", []):
        if node["name"] not in targets:
            continue
        if calls is not None and model is not None and (body_of(model, node) is not None) != calls:
            continue
        return node
    return None


DURATION_ROWS = ("observed \u00b5s", "all-pass \u00b5s")  # one pass / a rolled layer of several


def first_op_with_duration(ex: Exported, body: Json) -> Json | None:
    """The first non-call node of ``body`` with a companion duration row."""
    for metric in DURATION_ROWS:
        node = first_node_with(ex.attachment, body, metric, calls=False, model=ex.model)
        if node is not None:
            return node
    return None


def check_one_level(netron: NetronPage, ex: Exported, call: Json) -> None:
    """Drill into ``call``: the body is drawn as the function says; an inner op shows its rows."""
    fn = body_of(ex.model, call)
    assert fn is not None
    where = f"{ex.name}/{ex.granularity} inside {call['name']}"
    seconds = netron.drill_into(call["name"])
    RENDER_TIMES[f"{ex.name}/{ex.granularity} drill {fn['name']}"] = round(seconds, 3)
    assert netron.breadcrumb() == [breadcrumb_text(fn)], where
    check_drawn_body(netron, fn, where)
    check_targets_drawn(netron, fn, ex.attachment, where)
    op = first_op_with_duration(ex, fn)
    if op is not None:
        check_node_sidebar(netron, ex.model, op, ex.attachment, where)
    netron.go_up()
    assert netron.breadcrumb() == []


def check_model_sidebar(netron: NetronPage, ex: Exported) -> None:
    props = netron.open_model_properties()
    top = dict(props["Model Properties"])
    assert top["format"] == "ONNX v10"
    assert top["producer"].startswith("tlnetron ")
    meta_props = [(p["key"], p["value"]) for p in ex.model["metadataProps"]]
    expected: dict[str, str] = dict(meta_props)
    for name, text in companion_rows(ex.attachment, "metadata", "model", ""):
        expected[name] = text
    shown = props["Metadata"]
    assert shown == list(expected.items())
    shown_dict = dict(shown)
    for key in HONESTY_KEYS:
        assert key in shown_dict, f"honesty row {key} missing from Model Properties"
    assert shown_dict[MetaKey.GRANULARITY] == ex.granularity
    assert shown_dict[MetaKey.SHOW_BUFFERS] == BufferPolicy.MEANINGFUL
    assert shown_dict[MetaKey.CAPTURE_OUTCOME] == CaptureStatus.COMPLETE
    assert shown_dict[MetaKey.NODE_COUNT] == str(len(ex.graph["node"]))
    totals = companion_rows(ex.attachment, "metrics", "model", "")
    assert any(name.startswith("\u03a3 ") for name, _ in totals), "the companion has no Σ totals"
    assert props["Metrics"] == totals


def drill_path(ex: Exported, min_depth: int = 2) -> list[Json]:
    """The shortest chain of call nodes (top-level call, a call in its body, ...) at least
    ``min_depth`` long whose last body holds an op with a duration row."""
    model = ex.model
    queue: list[list[Json]] = [[n] for n in ex.graph["node"] if body_of(model, n) is not None]
    while queue:
        path = queue.pop(0)
        body = body_of(model, path[-1])
        assert body is not None
        if len(path) >= min_depth and first_op_with_duration(ex, body) is not None:
            return path
        queue.extend(path + [n] for n in body["node"] if body_of(model, n) is not None)
    raise AssertionError(f"{ex.name}: no chain of {min_depth}+ module calls ending at an op with metrics")


def breadcrumb_of(functions: Sequence[Json]) -> list[str]:
    """Netron's breadcrumb for a drill stack (outermost first): the last 3 levels, "…" before them."""
    shown = [breadcrumb_text(fn) for fn in functions]
    return shown if len(shown) <= 3 else ["\u2026", *shown[-3:]]


def check_drill_down(netron: NetronPage, ex: Exported) -> None:
    """Drill at least two levels (top call -> a call inside its body -> ...), check each level, go back up."""
    model = ex.model
    path = drill_path(ex)
    outer = path[0]
    functions = [body_of(model, call) for call in path]
    outer_fn = functions[0]
    assert outer_fn is not None

    # The call box: class name, module path, call index; inclusive metadata.
    attrs = {a["name"]: attribute_text(a) for a in outer["attribute"]}
    assert {"class_name", "module_path", "call_index"} <= set(attrs)
    assert attrs["class_name"] == outer["opType"] == outer_fn["name"]
    props = check_node_sidebar(netron, model, outer, ex.attachment, f"{ex.name} call {outer['name']}")
    shown_attrs = dict(props["Attributes"])
    assert shown_attrs["class_name"] == attrs["class_name"]
    assert shown_attrs["module_path"] == attrs["module_path"]
    assert shown_attrs["call_index"] == attrs["call_index"]
    meta_names = [name for name, _ in props["Metadata"]]
    assert {"inclusive_time", "inclusive_flops"} <= set(meta_names)

    stack: list[Json] = []
    for call, fn in zip(path, functions):
        assert fn is not None
        seconds = netron.drill_into(call["name"])
        RENDER_TIMES[f"{ex.name}/{ex.granularity} drill {fn['name']}"] = round(seconds, 3)
        stack.append(fn)
        where = f"{ex.name} inside {call['name']}"
        assert netron.breadcrumb() == breadcrumb_of(stack), where
        check_drawn_body(netron, fn, where)
        assert netron.edge_labels(), f"{where}: no edge labels drawn inside the body"
        check_targets_drawn(netron, fn, ex.attachment, where)
        op = first_op_with_duration(ex, fn)
        if op is not None:  # rows for ops inside a function show once drilled in
            check_node_sidebar(netron, model, op, ex.attachment, where)
        elif fn is not functions[-1]:
            inner_call = next(n for n in fn["node"] if body_of(model, n) is not None)
            check_node_sidebar(netron, model, inner_call, ex.attachment, where)
    while stack:
        netron.go_up()
        stack.pop()
        assert netron.breadcrumb() == breadcrumb_of(stack)
    assert {b["name"] for b in op_boxes(netron)} == {n["name"] for n in ex.graph["node"]}


def check_rolled_loop(netron: NetronPage, ex: Exported) -> None:
    layer = next(n for n in ex.graph["node"] if any(a["name"] == "recurrence" for a in n.get("attribute", [])))
    props = netron.open_node_properties(layer["name"])
    attrs = dict(props["Attributes"])
    assert attrs["passes"] == "5"
    recurrence = attribute_text(next(a for a in layer["attribute"] if a["name"] == "recurrence"))
    assert attrs["recurrence"] == recurrence
    assert "feeds back" in recurrence
    # No feedback edge: a drawn edge from a later layer back to this one would be a cycle.
    edges = expected_edges(ex.graph)
    index = ex.graph["node"].index(layer)
    assert all(not (c == ("node", index) and p[0] == "node" and p[1] > index) for p, c in edges)
    # input -> linear -> tanh -> output, and nothing back: the layout finished on a DAG.
    assert netron.edge_path_count() == len(edges) == len(ex.graph["node"]) + 1


# --------------------------------------------------------------------------- the tests


@pytest.mark.parametrize("granularity", GRANULARITY)
@pytest.mark.parametrize("name", MODELS)
def test_export_opens_fully_lit(netron: NetronPage, exported: ExportFn, name: str, granularity: str) -> None:
    ex = exported(name, granularity)
    seconds = netron.open_dropped(ex.artifact, ex.companion)
    RENDER_TIMES[f"{name}/{granularity}"] = round(seconds, 3)
    where = f"{name}/{granularity}"

    # Boxes, edges, labels of the root graph.
    check_drawn_body(netron, ex.graph, where)
    assert len(op_boxes(netron)) == int(
        next(p["value"] for p in ex.model["metadataProps"] if p["key"] == MetaKey.NODE_COUNT)
    )

    # Companion: every target matches something shown; the root graph's are drawn.
    assert unmatched_targets(ex.model, ex.attachment) == []
    check_targets_drawn(netron, ex.graph, ex.attachment, where)

    # Companion rows in Node Properties: an op node, and in module view a call node.
    call = next((n for n in ex.graph["node"] if body_of(ex.model, n) is not None), None)
    op = first_op_with_duration(ex, ex.graph)
    if op is not None:
        check_node_sidebar(netron, ex.model, op, ex.attachment, where)
    else:  # bert, loop: every root node is a module call; ops are checked after drilling in
        assert granularity == Granularity.MODULE and all(body_of(ex.model, n) for n in ex.graph["node"]), where
    if granularity == Granularity.MODULE and ex.model.get("functions"):
        assert call is not None
        check_node_sidebar(netron, ex.model, call, ex.attachment, f"{where} call")
    else:
        assert call is None, f"{where}: a {granularity} view has a call node"

    # Model Properties: honesty block and companion totals.
    check_model_sidebar(netron, ex)

    if granularity == Granularity.MODULE and name in DRILL_MODELS:
        check_drill_down(netron, ex)
    elif call is not None:
        check_one_level(netron, ex, call)
    if granularity == Granularity.ROLLED and name == "loop":
        check_rolled_loop(netron, ex)
    assert netron.console_errors() == []


# --------------------------------------------------------------------------- the checks fail for real


def _corrupt_elem_type(model: Json) -> None:
    model["graph"]["input"][0]["type"]["tensorType"]["elemType"] = "FLOAT"


def _corrupt_base64(model: Json) -> None:
    attribute = next(a for n in model["graph"]["node"] for a in n.get("attribute", []) if a["type"] == "STRING")
    attribute["s"] = "not base64!!"


@pytest.mark.parametrize(
    ("corrupt", "dialog"),
    [(_corrupt_elem_type, "Unsupported data type"), (_corrupt_base64, "File JSON format is not onnx.ModelProto")],
    ids=["elemType-string", "invalid-base64"],
)
def test_corrupted_real_export_shows_error_dialog(
    netron: NetronPage, exported: ExportFn, tmp_path: Path, corrupt: Callable[[Json], None], dialog: str
) -> None:
    ex = exported("demo", "module")
    model = copy.deepcopy(ex.model)
    corrupt(model)
    path = tmp_path / "broken.onnx.json"
    path.write_text(json.dumps(model, ensure_ascii=False), encoding="utf-8")
    with pytest.raises(ErrorDialogError, match=dialog):
        netron.open_dropped(path, ex.companion)


def test_wrong_companion_target_is_caught(netron: NetronPage, exported: ExportFn, tmp_path: Path) -> None:
    ex = exported("demo", "op")
    bad = copy.deepcopy(ex.attachment)
    op = ex.graph["node"][1]["name"]
    wrong = op.upper()  # names match case-sensitively
    row = next(r for r in bad["metrics"] if r["kind"] == "node" and r["target"] == op)
    row["target"] = wrong
    assert unmatched_targets(ex.model, bad) == [("metrics", "node", wrong)]
    path = tmp_path / "wrong.attachment.json"
    path.write_text(json.dumps(bad, ensure_ascii=False), encoding="utf-8")
    # In the browser it loads "successfully" and the row is shown nowhere.
    netron.open_dropped(ex.artifact, path)
    shown = dict(netron.open_node_properties(op).get("Metrics", []))
    assert row["name"] not in shown
    with pytest.raises(AssertionError, match="Metrics of"):
        check_node_sidebar(netron, ex.model, ex.graph["node"][1], ex.attachment, "good companion vs bad drop")
    assert netron.console_errors() == []


def test_label_rules_match_netron_examples() -> None:
    """The Python mirror of Netron's label rule, on the reader contract's own examples."""

    def t(*dims: Any) -> Json:
        return {
            "tensorType": {
                "elemType": 1,
                "shape": {
                    "dim": [
                        {"dimParam": d} if isinstance(d, str) else ({} if d is None else {"dimValue": str(d)})
                        for d in dims
                    ]
                },
            }
        }

    assert shape_label(t("batch", 64, 224, 224)) == "batch×64×224×224"
    assert shape_label(t("batch", 128, 224, 224)) == ""
    assert shape_label(t(2, 0, None, -1)) == "2×?×?×?"
    assert shape_label(t()) == ""
    assert shape_label({"tensorType": {"elemType": 1}}) == ""
    assert [js_number(v) for v in (64.611, 2048.0, 1e21, 1e-7, 0.000001, 123456.789, 1.5e300, -0.25)] == [
        "64.611",
        "2048",
        "1e+21",
        "1e-7",
        "0.000001",
        "123456.789",
        "1.5e+300",
        "-0.25",
    ]
    body = {
        "input": [{"name": "x", "type": t(1, 3)}],
        "node": [
            {"name": "a", "input": ["x", "x"], "output": ["a0", "a1"]},
            {"name": "b", "input": ["a1", "a0"], "output": ["b0"]},
        ],
        "output": [{"name": "b0", "type": t(1, 5)}],
        "valueInfo": [{"name": "a0", "type": t(1, 4)}, {"name": "a1", "type": t(9, 9)}],
    }
    # x->a once (x twice); a->b once, labelled by a0 (a's outputs are created in order); b->output.
    assert expected_edges(body) == {
        (("input", 0), ("node", 0)): "1×3",
        (("node", 0), ("node", 1)): "1×4",
        (("node", 1), ("output", 0)): "1×5",
    }


def test_drawn_checks_fail_for_real(netron: NetronPage, exported: ExportFn) -> None:
    """The box/label comparison catches a graph that differs from what is drawn."""
    ex = exported("demo", "op")
    netron.open_dropped(ex.artifact)
    check_drawn_body(netron, ex.graph, "as exported")
    reshaped = copy.deepcopy(ex.graph)
    reshaped["valueInfo"][0]["type"]["tensorType"]["shape"]["dim"].append({"dimValue": "7"})
    with pytest.raises(AssertionError, match="drawn edge labels differ"):
        check_drawn_body(netron, reshaped, "one value reshaped")
    fewer = copy.deepcopy(ex.graph)
    fewer["node"].pop(1)
    with pytest.raises(AssertionError, match="op boxes drawn"):
        check_drawn_body(netron, fewer, "one node dropped")


def test_long_shapes_go_unlabelled_but_stay_in_the_sidebar(netron: NetronPage, tmp_path: Path) -> None:
    """A 6-D shape is 17 characters ("10×10×10×10×10×10"): no edge label, full type in the sidebar."""
    import torch
    import torchlens
    from torch import nn

    class Wide(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x.relu().sum(dim=0)

    log = torchlens.trace(Wide().eval(), (torch.randn(10, 10, 10, 10, 10, 10),))
    path = tmp_path / "wide.onnx.json"
    result = export_quietly(log, path, granularity=Granularity.OP)
    model = json.loads(path.read_text("utf-8"))
    edges = expected_edges(model["graph"])
    assert sorted(edges.values()) == ["", "", "10×10×10×10×10"]
    netron.open_dropped(path, result.companion)
    check_drawn_body(netron, model["graph"], "wide")
    assert netron.edge_labels() == ["10×10×10×10×10"]
    relu = next(n for n in model["graph"]["node"] if n["opType"] == "relu")
    inputs = netron.open_node_properties(relu["name"], expand=True)["Inputs"]
    assert any("float32[10,10,10,10,10,10]" in value for _, value in inputs), inputs
    assert netron.console_errors() == []


def _value_rows(ex: Exported) -> dict[str, list[tuple[str, Any]]]:
    rows: dict[str, list[tuple[str, Any]]] = {}
    for row in ex.attachment["metrics"]:
        if row["kind"] == "value":
            rows.setdefault(row["target"], []).append((row["name"], row["value"]))
    return rows


def _edges_between_boxes(ex: Exported) -> set[str]:
    """Values produced by a drawn root node and consumed by another (an edge between boxes)."""
    produced = {o for n in ex.graph["node"] for o in n.get("output", [])}
    consumed = {i for n in ex.graph["node"] for i in n.get("input", [])}
    return produced & consumed


def _check_value_rows_on_the_edge(netron: NetronPage, ex: Exported, target: str, rows: list[tuple[str, Any]]) -> None:
    """Click the edge ``target``: Connection Properties holds each value row as the companion
    wrote it, and the producing node's Node Properties none of them."""
    netron.open_dropped(ex.artifact, ex.companion)
    sidebar = netron.open_connection_properties(target)
    shown = [pair for section in sidebar.values() for pair in section]
    for name, value in rows:
        text = str(int(value)) if isinstance(value, float) and value.is_integer() else str(value)
        if "e" not in text:  # JavaScript writes exponents differently (1e-7, not 1e-07)
            assert (name, text) in shown, (name, value, sidebar)
        else:
            assert name in {n for n, _ in shown}, (name, sidebar)
    producer = next(n["name"] for n in ex.graph["node"] if target in n.get("output", []))
    node_rows = {n for section in netron.open_node_properties(producer).values() for n, _ in section}
    assert not node_rows & {name for name, _ in rows}, node_rows
    assert netron.console_errors() == []


def test_activation_stats_show_in_connection_properties(netron: NetronPage, exported: ExportFn) -> None:
    """Click an edge of the demo's root graph: its value rows (issue 26) are in Connection
    Properties, each as the companion wrote it."""
    ex = exported("demo", "module")
    rows = _value_rows(ex)
    target = next(name for name in rows if name in _edges_between_boxes(ex))
    _check_value_rows_on_the_edge(netron, ex, target, rows[target])


def test_a_rolled_layers_edge_shows_its_passes_pooled(netron: NetronPage, exported: ExportFn) -> None:
    """In the rolled view a layer of several passes draws one edge: clicking it shows the
    statistics of every pass's tensor taken together."""
    ex = exported("loop", "rolled")
    rows = _value_rows(ex)
    layers = {n["name"] for n in ex.graph["node"] if any(a["name"] == NodeAttr.PASSES for a in n.get("attribute", []))}
    target = next(name for name in rows if name in layers and name in _edges_between_boxes(ex))
    _check_value_rows_on_the_edge(netron, ex, target, rows[target])

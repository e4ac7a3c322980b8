"""The compiled companion rows (``tlnetron.build._rows``) against their Python twins.

``value_rows`` must make the very rows ``stats_rows`` + ``_row`` make (names, order, values,
types, the 7-significant-digit rounding, integers past 2**53 as digits), and ``survey`` must
read a section as the Python loop does; the export takes whichever is built, so a difference
would make two installs write different companions.
"""

from __future__ import annotations

import json
import math
import os
import random
import struct
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tlnetron.build import companion as companion_mod
from tlnetron.build.companion import value_rows
from tlnetron.check.validation import survey
from tlnetron.ir.trace import TensorStats

compiled = pytest.mark.skipif(
    companion_mod.COMPILED is None and not os.environ.get("TLNETRON_ONEPASS_REQUIRED"),
    reason="tlnetron.build._rows is not built here (no C compiler at install)",
)


def test_the_compiled_rows_are_built_where_required() -> None:
    if os.environ.get("TLNETRON_ONEPASS_REQUIRED"):
        assert companion_mod.COMPILED is not None, "tlnetron.build._rows did not build: is a C compiler installed?"
    if companion_mod.COMPILED is None:
        pytest.skip("not built here")


def _both(pairs: list[tuple[str, TensorStats]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    fast: list[dict[str, Any]] = []
    slow: list[dict[str, Any]] = []
    value_rows(fast, pairs)
    value_rows(slow, pairs, compiled=False)
    return fast, slow


def _same_rows(fast: list[dict[str, Any]], slow: list[dict[str, Any]]) -> None:
    assert fast == slow
    # equal is not enough: 1 == 1.0 == True, and -0.0 == 0.0; the written JSON must agree too
    assert [[(k, type(v)) for k, v in r.items()] for r in fast] == [[(k, type(v)) for k, v in r.items()] for r in slow]
    assert json.dumps(fast) == json.dumps(slow)


_finite = st.floats(allow_nan=False, allow_infinity=False)
_big_int = st.integers(min_value=-(2**70), max_value=2**70)
_extreme = st.one_of(st.none(), _finite, _big_int, st.booleans())
_count = st.integers(min_value=0, max_value=2**62)


@st.composite
def _stats(draw: st.DrawFn) -> TensorStats:
    numel = draw(st.integers(min_value=0, max_value=2**62))
    mean = draw(st.one_of(st.none(), _finite))
    return TensorStats(
        numel,
        draw(_count),
        draw(_count),
        draw(st.integers(min_value=0, max_value=numel)),
        draw(_extreme),
        draw(_extreme),
        mean,
        draw(st.one_of(st.none(), _finite)) if mean is not None else None,
    )


@compiled
@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.text(max_size=20), _stats()), max_size=6))
def test_value_rows_match_python(pairs: list[tuple[str, TensorStats]]) -> None:
    _same_rows(*_both(pairs))


@compiled
@pytest.mark.parametrize(
    "stats",
    [
        TensorStats(0),  # empty: no zero fraction
        TensorStats(4, 1, 3, 0),  # nothing finite: counts only
        TensorStats(10, 0, 0, 10, -0.0, 0.0, 0.0, 0.0),  # signed zeros keep their sign
        TensorStats(3, 0, 0, 1, -(2**53) - 1, 2**53 + 1, 0.5, 0.1),  # past 2**53: digits
        TensorStats(3, 0, 0, 1, -(2**53), 2**53, 0.5, 0.1),  # at 2**53: still numbers
        TensorStats(2**62, 2**60, 0, 7, -(2**70), 2**70, 1e300, 5e-324),  # huge counts, subnormal std
        TensorStats(5, 0, 0, 2, False, True, 0.6),  # bool: extremes as bools, no std
        TensorStats(7, 0, 0, 3, 1e15, 9.9999995e14, 1e-15, 9.99999949e-16),  # the fast rounding's edges
        TensorStats(3, 0, 0, 0, 1234567.5, 0.12345675, 9999999.5, 1e22),  # ties, to even or by digits
    ],
)
def test_value_rows_edges(stats: TensorStats) -> None:
    _same_rows(*_both([("linear_1_1", stats), ("t\u00e9rm", stats)]))


@compiled
def test_seven_digit_rounding_matches_pythons_format() -> None:
    """The compiled rounding takes a numeric shortcut away from halves: it must give
    ``float(f"{v:.7g}")`` for every double, ties and near-ties included."""
    rnd = random.Random(7)
    values: list[float] = []
    for _ in range(20_000):
        values.append(struct.unpack("d", struct.pack("Q", rnd.getrandbits(64)))[0])  # any bit pattern
        values.append(rnd.uniform(-10, 10) * 10.0 ** rnd.randint(-20, 20))
        digits, exp = rnd.randint(1_000_000, 9_999_999), rnd.randint(-18, 18)
        values.append(float(f"{digits}5e{exp}"))  # a decimal half at the 8th digit
        values.append(float(f"{digits}49999999e{exp}"))  # just below one
        values.append(float(f"{digits}50000001e{exp}"))  # just above one
    values = [v for v in values if math.isfinite(v)]
    pairs = [("t", TensorStats(1, 0, 0, 0, v)) for v in values]
    fast, _ = _both(pairs)
    got = [r["value"] for r in fast if r["name"] == "min"]
    want = [float(f"{v:.7g}") for v in values]
    assert len(got) == len(want)
    mismatched = [
        (v, g, w) for v, g, w in zip(values, got, want) if g != w or math.copysign(1, g) != math.copysign(1, w)
    ]
    assert not mismatched[:5]


def test_value_rows_refuse_what_is_not_pairs() -> None:
    if companion_mod.COMPILED is None:
        pytest.skip("not built here")
    rows = companion_mod.COMPILED
    assert rows is not None
    with pytest.raises(TypeError):
        rows.value_rows([], "value", tuple("abcdefg"), [("t",)])
    with pytest.raises(TypeError):
        rows.value_rows([], "value", tuple("abcdefg"), [(1, TensorStats(1))])
    with pytest.raises(ValueError):
        rows.value_rows([], "value", ("a",), [])
    with pytest.raises(AttributeError):
        rows.value_rows([], "value", tuple("abcdefg"), [("t", object())])


_text = st.sampled_from(["", "a", "b", "linear_1_1", "\u00e9", "x" * 40])
_value = st.one_of(
    _text,
    st.integers(),
    st.floats(),
    st.booleans(),
    st.lists(st.one_of(st.floats(), st.integers(), _text), max_size=3),
)


@st.composite
def _section(draw: st.DrawFn) -> list[dict[str, Any]]:
    rows = draw(
        st.lists(
            st.fixed_dictionaries(
                {"kind": st.sampled_from(["model", "node", "value"]), "target": _text, "name": _text, "value": _value}
            ),
            max_size=30,
        )
    )
    if rows and draw(st.booleans()):  # a row again, as another dict with equal keys
        rows.append(dict(draw(st.sampled_from(rows))))
    return rows


def _survey_equal(rows: list[dict[str, Any]]) -> None:
    distinct, pairs, total, odd = survey(rows)
    p_distinct, p_pairs, p_total, p_odd = survey(rows, compiled=False)
    assert (distinct, pairs) == (p_distinct, p_pairs)
    assert total == p_total or (math.isnan(total) and math.isnan(p_total))
    assert [id(v) for v in odd] == [id(v) for v in p_odd]


@compiled
@settings(max_examples=400, deadline=None)
@given(_section())
def test_survey_matches_python(rows: list[dict[str, Any]]) -> None:
    _survey_equal(rows)


@compiled
def test_survey_of_a_large_section() -> None:
    """Thousands of rows (the tables grow past their first size), one duplicate at the end."""
    rows = [{"kind": "value", "target": f"op_{i // 7}", "name": f"row {i % 7}", "value": i / 3} for i in range(20_000)]
    _survey_equal(rows)
    assert survey(rows)[0] is True
    rows.append({"kind": "value", "target": "op_5", "name": "row 2", "value": 1})
    _survey_equal(rows)
    assert survey(rows)[0] is False
    assert len(survey(rows)[1]) == 20_000 // 7 + 1


@compiled
def test_survey_sums_and_odd_values() -> None:
    class Number(int):
        pass

    odd_values: list[Any] = [True, [1.0, math.inf], Number(3), math.nan]
    values = [1.5, 2, "x", *odd_values]
    rows = [{"kind": "node", "target": "a", "name": str(i), "value": v} for i, v in enumerate(values)]
    distinct, pairs, total, odd = survey(rows)
    assert distinct and pairs == [("node", "a")]
    assert math.isnan(total)  # the NaN is a float: summed, so the section is walked
    assert odd == odd_values[:3]
    _survey_equal(rows)


def test_survey_refuses_what_is_not_a_section() -> None:
    if companion_mod.COMPILED is None:
        pytest.skip("not built here")
    with pytest.raises(TypeError):
        survey([1])  # type: ignore[list-item]
    with pytest.raises(KeyError):
        survey([{"kind": "model", "target": "", "name": "x"}])
    with pytest.raises(TypeError):
        survey(5)  # type: ignore[arg-type]


@compiled
def test_the_export_writes_the_same_companion_either_way(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    """A real trace exported with the compiled rows and without them: the same bytes."""
    import torch
    import torchlens

    import tlnetron

    model = torch.nn.Sequential(torch.nn.Linear(6, 5), torch.nn.ReLU(), torch.nn.Linear(5, 3), torch.nn.Softmax(-1))
    torch.manual_seed(0)
    log = torchlens.trace(model, torch.randn(2, 6))
    first = tlnetron.export(log, tmp_path / "a.onnx.json", granularity="op")
    monkeypatch.setattr(companion_mod, "COMPILED", None)  # the rows and the survey alike
    again = tlnetron.export(log, tmp_path / "b.onnx.json", granularity="op")
    assert first.companion_bytes is not None and again.companion_bytes is not None
    a, b = json.loads(first.companion_bytes), json.loads(again.companion_bytes)
    assert a["metrics"] == b["metrics"]
    assert sum(r["kind"] == "value" for r in a["metrics"]) >= 7 * 4


# ---------------------------------------------------------------- rows_match (the schema's fast answer)

from tlnetron._generated import validate_companion, validate_node_properties  # noqa: E402
from tlnetron._generated._errors import JsonSchemaValueException  # noqa: E402


class _Str(str):
    pass


_kinds = st.sampled_from(["model", "graph", "node", "value", "tensor", "edge", "", _Str("node")])
_line = st.one_of(st.text(alphabet="ab \n\r\u00e9\u4e00\U0001f600", max_size=6), st.just(_Str("x")))
_scalar = st.one_of(
    st.text(alphabet="a\n", max_size=3),
    st.integers(-(2**70), 2**70),
    st.floats(),
    st.booleans(),
    st.none(),
    st.just(_Str("s")),
)
_row_value = st.one_of(
    _scalar,
    st.lists(_scalar, max_size=3),
    st.lists(st.lists(_scalar, max_size=2), max_size=2),
    st.tuples(_scalar),
    st.dictionaries(st.text(max_size=2), _scalar, max_size=1),
)
_types = st.sampled_from(["ms", "tensor", "graph[]", "", 3, None, _Str("ms")])


@st.composite
def _rows(draw: st.DrawFn) -> list[Any]:
    """Rows near the companion schema: most valid, each of the others off in one way or a few."""
    rows: list[Any] = []
    for _ in range(draw(st.integers(0, 6))):
        row: dict[Any, Any] = {
            "kind": draw(st.sampled_from(["node", "value"])),
            "target": draw(st.text(alphabet="ab_.", max_size=5)),
            "name": draw(st.text(alphabet="ab ", min_size=1, max_size=5)),
            "value": draw(st.one_of(st.floats(allow_nan=False), st.integers(), st.text(max_size=3))),
        }
        for _ in range(draw(st.integers(0, 2))):
            what = draw(st.sampled_from(["kind", "target", "name", "value", "type", "drop", "extra", "key", "not"]))
            if what == "kind":
                row["kind"] = draw(_kinds)
            elif what in ("target", "name"):
                row[what] = draw(st.one_of(_line, _scalar))
            elif what == "value":
                row["value"] = draw(_row_value)
            elif what == "type":
                row["type"] = draw(_types)
            elif what == "drop":
                row.pop(draw(st.sampled_from(["kind", "target", "name", "value"])), None)
            elif what == "extra":
                row[draw(st.sampled_from(["identifier", "Kind", "types"]))] = 1
            elif what == "key":
                row[draw(st.sampled_from([1, _Str("kind"), ("kind",)]))] = "node"
            else:
                rows.append(draw(st.sampled_from([[1], "row", None, ("kind", "node")])))
                break
        else:
            rows.append(row)
    return rows


def _python_accepts(rows: list[Any], monkeypatch: pytest.MonkeyPatch) -> bool:
    with monkeypatch.context() as m:
        m.setattr(validate_companion, "_rows_match", None)
        try:
            validate_companion.validate({"signature": "netron:attachment", "metadata": [], "metrics": rows})
        except JsonSchemaValueException:
            return False
    return True


def _plain(value: Any) -> bool:
    """Built of exact str / int / float / bool / None / list / dict only (what rows_match decides alone)."""
    if isinstance(value, dict):
        return type(value) is dict and all(type(k) is str and _plain(v) for k, v in value.items())
    if isinstance(value, list):
        return type(value) is list and all(_plain(v) for v in value)
    return value is None or type(value) in (str, int, float, bool)


@compiled
@settings(max_examples=1500, deadline=None)
@given(_rows())
def test_rows_match_says_yes_only_to_what_the_schema_accepts(rows: list[Any]) -> None:
    """True means valid; on rows of plain builtins without objects, False means invalid too
    (anything else, a subclass or a tuple, it leaves to the Python loop)."""
    spec = validate_companion._F17
    fast = companion_mod.COMPILED.rows_match(rows, spec)  # type: ignore[union-attr]
    with pytest.MonkeyPatch.context() as monkeypatch:
        slow = _python_accepts(rows, monkeypatch)
    if fast:
        assert slow, rows
    elif all(_plain(r) for r in rows) and not any(
        isinstance(v, dict) for r in rows if isinstance(r, dict) for v in r.values()
    ):
        # exact builtins: its answer is the schema's (an integral float is no special case here)
        assert not slow, rows


@compiled
def test_rows_match_on_a_real_companion(tmp_path: Any) -> None:
    """Every section of a built companion is answered in C (the loop does not run)."""
    import torch
    import torchlens

    import tlnetron

    model = torch.nn.Sequential(torch.nn.Linear(6, 5), torch.nn.ReLU(), torch.nn.Linear(5, 3))
    log = torchlens.trace(model, torch.randn(2, 6))
    result = tlnetron.export(log, tmp_path / "a.onnx.json", granularity="op")
    assert result.companion_bytes is not None
    companion = json.loads(result.companion_bytes)
    rows_match = companion_mod.COMPILED.rows_match  # type: ignore[union-attr]
    for section in ("metadata", "metrics"):
        assert rows_match(companion[section], validate_companion._F17) is True
    broken = [dict(r) for r in companion["metrics"]]
    broken[-1]["target"] = "two\nlines"
    assert rows_match(broken, validate_companion._F17) is False
    with pytest.raises(JsonSchemaValueException, match=r"metrics\[\d+\]\.target must match pattern"):
        validate_companion.validate({**companion, "metrics": broken})


def test_rows_match_refuses_a_malformed_spec() -> None:
    if companion_mod.COMPILED is None:
        pytest.skip("not built here")
    rows_match = companion_mod.COMPILED.rows_match
    check = (1, None, 0, -1, False, None, None, None, None, None)
    assert rows_match([{"a": "x"}], (1, False, {"a": (True, check)})) is True
    nested = (32, None, 0, -1, False, None, None, None, (1, False, {"a": (True, check)}), None)
    assert rows_match([{"o": {"a": "x"}}], (1, False, {"o": (True, nested)})) is True
    for spec in [
        (1, False, {"a": (True, (1, None))}),  # a short check
        (1, False, {"a": (True, (1, None, 0, -1, False, None, None))}),  # the old, shorter check
        (1, False, {"a": (True, (1, [], 0, -1, False, None, None, None, None, None))}),  # an enum that is no frozenset
        (1, False, {"a": (True, (1, None, 0, -1, False, None, None, "^a", None, None))}),  # a pattern that is no search
        (1, False, {"a": (True, (1, None, 0, -1, False, None, None, None, None, "1"))}),  # a minimum that is no number
        (1, False, {"a": (True, (1, None, 0, -1, False, None, None, None, (1, False, {}), None))}),  # a bad nested spec
        (1, False, {"o": (True, nested[:8] + ((1, False, {"a": (True, (1,))}), None))}),  # a bad check inside it
        (1, False, {1: (True, check)}),  # a key that is no string
        (2, False, {"a": (True, check)}),  # more required than the spec's keys say
        (1, False, {"a": True}),
        (1, False, []),
        (1, False),
    ]:
        with pytest.raises(TypeError):
            rows_match([{"a": "x"}], spec)  # type: ignore[arg-type]


_GOOD = {"kind": "value", "target": "linear_1", "name": "min", "value": 0.5}


@compiled
@pytest.mark.parametrize(
    ("change", "valid"),
    [
        ({}, True),
        ({"type": "ms"}, True),
        ({"value": [1, "a", True, 2.5]}, True),
        ({"value": True}, True),
        ({"value": 2**80}, True),
        ({"value": math.nan}, True),  # the schema's number; the cross-reference check refuses it
        ({"target": ""}, True),
        ({"target": "\u4e00\U0001f600"}, True),
        ({"target": "a\rb"}, False),
        ({"target": "a\nb"}, False),
        ({"target": "\u4e00\r"}, False),
        ({"name": "x\U0001f600\n"}, False),
        ({"name": ""}, False),
        ({"name": 3}, False),
        ({"kind": "edge"}, False),
        ({"kind": 1}, False),
        ({"type": "tensor"}, False),
        ({"type": 3}, False),
        ({"identifier": "x"}, False),
        ({"value": None}, False),
        ({"value": {"a": 1}}, False),
        ({"value": [[1]]}, False),
        ({"value": [None]}, False),
    ],
)
def test_rows_match_one_change_at_a_time(change: dict[str, Any], valid: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    rows = [dict(_GOOD), {**_GOOD, **change}]
    assert _python_accepts(rows, monkeypatch) is valid
    assert companion_mod.COMPILED.rows_match(rows, validate_companion._F17) is valid  # type: ignore[union-attr]


@compiled
@pytest.mark.parametrize(
    "row",
    [
        {**_GOOD, "kind": _Str("value")},
        {**_GOOD, "value": (1, 2)},
        {**_GOOD, "value": _Str("x")},
        {"kind": "value", "target": "t", "name": "n"},
        {**_GOOD, 1: "x"},
        ("kind", "value"),
    ],
)
def test_rows_match_leaves_the_rest_to_python(row: Any) -> None:
    """What is not plain JSON-shaped data (or lacks a key) is answered by the Python loop."""
    assert companion_mod.COMPILED.rows_match([row], validate_companion._F17) is False  # type: ignore[union-attr]


# ------------------------------------------------------- node properties: one compiled check for all nodes

_NODE = {
    "role": "op",
    "attributes": {"function": "torch.add", "module_path": "h.0.mlp", "num_params": 3, "multi_output_index": 0},
    "metadata": {"input_names": "['x', 'other']", "observed_duration": "4.1 \u00b5s observed wall time"},
}


def _node_valid(doc: Any) -> bool:
    try:
        validate_node_properties.validate(doc)
    except JsonSchemaValueException:
        return False
    return True


@compiled
@pytest.mark.parametrize(
    ("where", "change", "valid"),
    [
        ("attributes", {}, True),
        ("attributes", {"num_params": 1}, True),
        ("attributes", {"num_params": 0}, False),  # minimum 1
        ("attributes", {"num_params": -(2**70)}, False),
        ("attributes", {"num_params": 2**70}, True),
        ("attributes", {"num_params": True}, False),
        ("attributes", {"num_params": "3"}, False),
        ("attributes", {"multi_output_index": -1}, False),  # minimum 0
        ("attributes", {"buffer_access": "write (fused)"}, True),
        ("attributes", {"buffer_access": "written"}, False),
        ("attributes", {"params": "weight 3\u00d74\nbias 4"}, True),  # text: lines allowed
        ("attributes", {"function": "torch.\nadd"}, False),  # line: one line
        ("attributes", {"function": ""}, False),
        ("attributes", {"nodes": "x"}, False),  # no such attribute
        ("metadata", {}, True),
        ("metadata", {"input_names": "['x']"}, True),
        ("metadata", {"input_names": "[x]"}, False),  # the pattern, by the validator's own search
        ("metadata", {"input_names": "['x']\n"}, False),
        ("metadata", {"input_names": "['x'], ['y']"}, False),
        ("metadata", {"torchlens.diff.status": "changed"}, True),
        ("metadata", {"torchlens.diff.status": "moved"}, False),
        ("metadata", {"inclusive_time": 3}, False),
        ("role", "module_run", True),
        ("role", "block", False),
    ],
)
def test_node_properties_one_change_at_a_time(where: str, change: Any, valid: bool) -> None:
    doc = {**_NODE, where: change if where == "role" else {**_NODE[where], **change}}  # type: ignore[dict-item]
    assert _node_valid(doc) is valid
    assert validate_node_properties.all_match([_NODE, doc]) is valid
    assert validate_node_properties.all_match([doc]) is valid


@compiled
@pytest.mark.parametrize(
    "doc",
    [
        {**_NODE, "attributes": {**_NODE["attributes"], "num_params": 3.0}},  # an integral float: Python decides
        {**_NODE, "metadata": {**_NODE["metadata"], "input_names": _Str("['x']")}},
        {**_NODE, "attributes": (("function", "f"),)},
        {**_NODE, "role": _Str("op")},
    ],
)
def test_node_properties_leaves_the_rest_to_python(doc: Any) -> None:
    assert validate_node_properties.all_match([doc]) is False


def _node_docs() -> Any:
    """Node documents as the exporter builds them, and near misses of them."""
    names = st.sampled_from(["function", "module_path", "num_params", "multi_output_index", "buffer_access", "x"])
    values = st.one_of(
        st.integers(-2, 3),
        st.booleans(),
        st.none(),
        st.sampled_from(["", "a", "a\nb", "read", "['a']", "[a]", "changed", 0.5, 1.0]),
    )
    meta = st.sampled_from(["input_names", "captured_bytes", "torchlens.diff.status", "y"])
    return st.fixed_dictionaries(
        {
            "role": st.sampled_from(["op", "layer", "x"]),
            "attributes": st.one_of(st.dictionaries(names, values, max_size=4), values),
            "metadata": st.dictionaries(meta, values, max_size=3),
        },
        optional={"extra": values},
    )


@compiled
@settings(max_examples=1500, deadline=None)
@given(st.lists(_node_docs(), max_size=3))
def test_node_properties_all_match_says_yes_only_to_what_the_schema_accepts(docs: list[Any]) -> None:
    """True means every document is valid; without integral floats (which the Python decides),
    False means one is not."""
    fast = validate_node_properties.all_match(docs)
    slow = all(_node_valid(d) for d in docs)
    if fast:
        assert slow, docs
    elif not any(v == 1.0 and type(v) is float for d in docs for part in d.values() if isinstance(part, dict)
                 for v in part.values()):  # fmt: skip
        assert not slow, docs


@compiled
@pytest.mark.parametrize("granularity", ["op", "rolled", "module"])
def test_a_real_export_validates_its_nodes_in_one_compiled_check(
    granularity: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    """The nodes of a real export are answered in C; the Python validator is not called."""
    import torch
    import torchlens

    import tlnetron
    from tlnetron.check import schemas

    calls: list[int] = []
    real = schemas._VALIDATORS["node-properties"]
    monkeypatch.setitem(schemas._VALIDATORS, "node-properties", lambda d: calls.append(1) or real(d))
    model = torch.nn.Sequential(torch.nn.Linear(6, 5), torch.nn.ReLU(), torch.nn.Linear(5, 3))
    log = torchlens.trace(model, torch.randn(2, 6))
    tlnetron.export(log, tmp_path / "a.onnx.json", granularity=granularity)
    assert calls == []
    monkeypatch.setattr(validate_node_properties, "_rows_match", None)  # without C, every node is validated
    tlnetron.export(log, tmp_path / "b.onnx.json", granularity=granularity)
    assert len(calls) >= 3  # one per node

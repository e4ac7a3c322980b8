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

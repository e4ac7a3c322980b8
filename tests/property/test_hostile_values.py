"""validate ends in a verdict on any value a valid companion row can be made to hold: nested
deep, integers of any length, lone surrogates in strings (fuzzed; the ci profile runs more)."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tlnetron import TlnetronWarning
from tlnetron.cli import commands, console
from tlnetron._generated.vocab import BufferPolicy, Granularity
from tlnetron.pipeline import export_ir
from tlnetron.ir.trace import ROLE_INPUT, ROLE_OP, ROLE_OUTPUT, OpIR, TraceIR


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    ops = (
        OpIR(
            name="input_1",
            layer="input_1",
            pass_index=1,
            num_passes=1,
            op_type="input",
            role=ROLE_INPUT,
            shape=(2,),
            dtype="float32",
        ),
        OpIR(
            name="relu_1",
            layer="relu_1",
            pass_index=1,
            num_passes=1,
            op_type="relu",
            role=ROLE_OP,
            shape=(2,),
            dtype="float32",
            parents=("input_1",),
            ports=("arg0",),
            duration_s=1e-6,
        ),
        OpIR(
            name="output_1",
            layer="output_1",
            pass_index=1,
            num_passes=1,
            op_type="output",
            role=ROLE_OUTPUT,
            shape=(2,),
            dtype="float32",
            parents=("relu_1",),
        ),
    )
    folder = tmp_path_factory.mktemp("pair")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TlnetronWarning)
        result = export_ir(
            TraceIR(ops=ops),
            folder / "m.onnx.json",
            granularity=Granularity.OP,
            depth=None,
            show_buffers=BufferPolicy.MEANINGFUL,
            attachment=None,
        )
    return result.artifact, result.companion.read_text()


def nested(depth: int, leaf: str) -> str:
    return "[" * depth + leaf + "]" * depth


hostile = st.one_of(
    st.builds(nested, st.integers(1, 3000), st.sampled_from(["1", '"x"', ""])),  # deep values inside a valid row
    st.builds(lambda n, sign: sign + "9" * n, st.integers(300, 20_000), st.sampled_from(["", "-"])),  # long numbers
    st.builds(
        lambda s: json.dumps(s),
        st.text(alphabet=st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF) | st.characters(), max_size=20),
    ),
)


@given(value=hostile)
def test_any_value_in_a_valid_row_gets_a_verdict(
    pair: tuple[Path, str], tmp_path_factory: pytest.TempPathFactory, value: str
) -> None:
    artifact, companion = pair
    text = companion.replace('"value":', '"value":' + value + ',"was":', 1)
    path = tmp_path_factory.mktemp("c") / "m.onnx.attachment.json"
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    problems = commands.validate_files(artifact, path)
    for p in problems:
        console.printable(p.line()).encode("utf-8")

"""The README's recipe for a new per-op metric, followed on a copy of the package.

A metric no field has today (``peak_bytes``) is added the way the README says: the schema
(its table row, and the node-metadata key and companion row it names), its ``OpIR`` field
and the reader's line. Codegen regenerates the copy; an export with it must state the new
metric on every compute op (node metadata and companion), sum it in module calls' facts,
and still validate, with no other file touched.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "src" / "tlnetron"

METRIC = {
    "fact": "peak_bytes",
    "source": "op",
    "format": "bytes",
    "companion_value": "count",
    "op": {"node_meta": "peak_bytes", "text": "{value} at peak", "rows": ["peak bytes"]},
    "passes": None,
    "inclusive": None,
    "total": None,
}

CHECK = """
import json, sys
sys.path.insert(0, sys.argv[2])
import tlnetron
from tlnetron.ir import facts
from zoo import trace

assert "peak_bytes" in [f for f in tlnetron.ir.facts.Facts.__slots__], "codegen gave Facts no field"
log = trace("demo")
out = {}
for view in ("op", "module"):
    res = tlnetron.export(log, sys.argv[1] + f"/{view}.onnx.json", granularity=view)
    art = json.load(open(res.artifact))
    comp = json.load(open(res.companion))
    nodes = art["graph"]["node"] + [n for f in art.get("functions", []) for n in f["node"]]
    out[view] = {
        "node_meta": [{p["key"]: p["value"] for p in n.get("metadataProps", [])} for n in nodes],
        "rows": comp["metrics"],
    }
three = [facts.Facts(peak_bytes=3), facts.Facts(peak_bytes=4), facts.Facts()]
out["sum"] = facts.sum_facts(three, inclusive=True).peak_bytes
out["absent"] = facts.sum_facts([facts.Facts(), facts.Facts()], inclusive=True).peak_bytes
print(json.dumps(out))
"""


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert text.count(old) == 1, f"{path.name}: the recipe's anchor {old!r} moved"
    path.write_text(text.replace(old, new), encoding="utf-8")


def _add_metric(pkg: Path) -> None:
    vocab_path = pkg / "schema" / "vocabularies.schema.json"
    vocab = json.loads(vocab_path.read_text(encoding="utf-8"))
    rows = vocab["definitions"]["companion_row"]
    rows["enum"].append("peak bytes")
    rows["x-members"]["peak bytes"] = "Node metric: peak bytes the op held (a metric added by the recipe test)."
    vocab["x-tlnetron-metrics"]["metrics"].append(METRIC)
    vocab_path.write_text(json.dumps(vocab, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    node_path = pkg / "schema" / "node-properties.schema.json"
    node = json.loads(node_path.read_text(encoding="utf-8"))
    node["properties"]["metadata"]["properties"]["peak_bytes"] = {
        "$ref": "#/definitions/line",
        "description": "Peak bytes the op held.",
    }
    node_path.write_text(json.dumps(node, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    # Its OpIR field, after the positional ones.
    _edit(
        pkg / "ir" / "trace.py",
        "    returned_as: str | None = None\n",
        "    returned_as: str | None = None\n    peak_bytes: int | None = None\n",
    )
    # The reader's line.
    _edit(
        pkg / "read" / "trace.py",
        "            where, stats, returned_as,\n",
        "            where, stats, returned_as,\n"
        "            peak_bytes=count_of(op.activation_memory) if role == ROLE_OP else None,\n",
    )


@pytest.mark.slow
def test_a_new_metric_is_a_schema_row_a_field_and_a_reader_line(tmp_path: Path) -> None:
    pkg = tmp_path / "src" / "tlnetron"
    shutil.copytree(PACKAGE, pkg, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    before = {p.relative_to(pkg): p.read_bytes() for p in pkg.rglob("*") if p.is_file()}
    _add_metric(pkg)
    gen = subprocess.run(
        [
            sys.executable,
            str(ROOT / "codegen" / "generate.py"),
            "--schema-dir",
            str(pkg / "schema"),
            "--out-dir",
            str(pkg / "_generated"),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert gen.returncode == 0, gen.stderr
    changed = sorted(
        str(p.relative_to(pkg))
        for p in pkg.rglob("*")
        if p.is_file() and before.get(p.relative_to(pkg)) != p.read_bytes()
    )
    hand = [c for c in changed if not c.startswith("_generated/")]
    assert hand == [
        "ir/trace.py",
        "read/trace.py",
        "schema/node-properties.schema.json",
        "schema/vocabularies.schema.json",
    ]

    out_dir = tmp_path / "out"
    out_dir.mkdir()
    env = {**os.environ, "PYTHONPATH": str(tmp_path / "src")}
    run = subprocess.run(
        [sys.executable, "-c", CHECK, str(out_dir), str(ROOT / "tests")],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        check=False,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    got = json.loads(run.stdout.strip().splitlines()[-1])

    for view in ("op", "module"):
        metas = got[view]["node_meta"]
        stated = [m for m in metas if "peak_bytes" in m]
        assert stated, f"{view} view: no op node states the new metric"
        # The reader fills it from the bytes it captured, so every op with captured bytes states it, in its words.
        for m in metas:
            if "captured_bytes" in m:
                assert m.get("peak_bytes") == m["captured_bytes"].partition(" captured")[0] + " at peak"
        rows = got[view]["rows"]
        peak = {r["target"]: r["value"] for r in rows if r["name"] == "peak bytes"}
        captured = {r["target"]: r["value"] for r in rows if r["name"] == "captured bytes"}
        assert peak and peak == captured, f"{view} view: the companion's 'peak bytes' rows differ from the bytes read"
    # No inclusive wording in the row: module boxes state nothing new, yet the sums carry it.
    assert got["sum"] == 7 and got["absent"] is None

"""How real-depth models draw in the real Netron: root and opened run, canvas size and draw time.

Each model of ``tests/zoo.py`` ``DEEP`` (GPT-2 24, Llama 32 and 80, BERT and ViT 24, T5 and
Whisper 12+12, Mixtral 8) is traced, exported with the default module view and opened in
Netron 9.3 in headless Chromium the way a person does (drop the model, then the companion).
Per model: the root's draw time (the model's drop until the canvas is drawn; beside it the
whole open: the app's start, the drop and the companion's), its canvas (the SVG viewBox, px
at Netron's default zoom), the boxes, the boxes to drill into and the output nodes; then the first
run box is opened and measured the same way.
``--chains`` also opens Llama-32's and Llama-80's runs drawn as one chain of calls (what
tlnetron would draw without groups), the comparison behind ``tlnetron.views.runs.RUN_CHAIN_MAX``.

    .venv/bin/python benchmarks/legibility.py [--models llama_32,gpt2_24] [--chains] [--rounds 3]

Writes ``benchmarks/results/legibility.json``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests" / "e2e"), str(ROOT / "tests")]

import tlnetron  # noqa: E402
import tlnetron.views.runs  # noqa: E402
from netron_driver import NetronBrowser, NetronPage  # noqa: E402
from zoo import DEEP, trace  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results"


def export(log: Any, path: Path) -> tlnetron.ExportResult:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", tlnetron.TlnetronWarning)
        return tlnetron.export(log, path)


def canvas(page: NetronPage) -> dict[str, Any]:
    box = str(page._js("document.querySelector('#canvas').getAttribute('viewBox')")).split()
    drawn = page.drawn_nodes()
    return {
        "width": float(box[2]),
        "height": float(box[3]),
        "boxes": sum(n["kind"] == "node" for n in drawn),
        "drill_boxes": sum(bool(n["function"]) for n in drawn),
        "outputs": sum(n["kind"] == "output" for n in drawn),
    }


def measure(browser: NetronBrowser, result: tlnetron.ExportResult, rounds: int) -> dict[str, Any]:
    model = json.loads(result.artifact_json)
    run = next((n["name"] for n in model["graph"]["node"] if n["domain"] == "ai.torchlens.run"), None)
    draws, opens, drills = [], [], []
    out: dict[str, Any] = {}
    for _ in range(rounds):
        with browser.new_page() as page:
            t0 = time.monotonic()
            draws.append(page.open_dropped(result.artifact, result.companion))  # type: ignore[arg-type]
            opens.append(time.monotonic() - t0)
            out["root"] = canvas(page)
            if run is not None:
                drills.append(page.drill_into(run))
                out["run"] = {"name": run, **canvas(page)}
    out["draw_s"] = statistics.median(draws)
    out["open_s"] = statistics.median(opens)
    if drills:
        out["drill_s"] = statistics.median(drills)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default=",".join(DEEP))
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--chains", action="store_true", help="also draw Llama's runs as one chain of calls")
    args = parser.parse_args(argv)
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="tlnetron-legibility-") as tmp, NetronBrowser() as browser:
        for name in args.models.split(","):
            log = trace(name)
            results[name] = got = measure(browser, export(log, Path(tmp) / f"{name}.onnx.json"), args.rounds)
            root, run = got["root"], got.get("run", {})
            print(
                f"{name:<11} root {root['width']:>6.0f} x {root['height']:<5.0f} px, {root['boxes']:>2} boxes, "
                f"{root['drill_boxes']} to drill into, {root['outputs']} outputs, drawn in {got['draw_s']:.2f} s "
                f"({got['open_s']:.2f} s with the app's start and the companion)"
                + (
                    f"; run {run['width']:.0f} x {run['height']:.0f} px, {run['boxes']} boxes, {got['drill_s']:.2f} s"
                    if run
                    else ""
                ),
                flush=True,
            )
            if args.chains and name in ("llama_32", "llama_80"):
                kept = tlnetron.views.runs.RUN_CHAIN_MAX
                tlnetron.views.runs.RUN_CHAIN_MAX = 1_000  # no groups: the run opens on one chain
                try:
                    chain = measure(browser, export(log, Path(tmp) / f"{name}.chain.onnx.json"), args.rounds)
                finally:
                    tlnetron.views.runs.RUN_CHAIN_MAX = kept
                results[f"{name} as one chain"] = chain
                run = chain["run"]
                print(
                    f"{name:<11} the run as one chain: {run['width']:.0f} x {run['height']:.0f} px, drilled in "
                    f"{chain['drill_s']:.2f} s"
                )
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "legibility.json").write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Regenerate the documentation screenshots in docs/images/ from the real Netron.

Run with ``nox -s screenshots`` (or ``python tests/e2e/screenshots.py [OUT_DIR]``). Uses the
same headless-Chromium driver as the e2e tests (tests/e2e/netron_driver.py): each artifact
is exported by tlnetron, opened in Netron's unmodified web app the way a person does (drop
the model, then the companion), and the viewport is saved as a PNG:

* demo-module.png     the demo model's default (module) view
* demo-sidebar.png    a node's sidebar with its Metadata and Metrics (after the companion)
* demo-drilldown.png  inside Block -> SelfAttention (two drill-downs)
* demo-op.png         the op view (top of the graph, at Netron's own zoom)
* wrapped-before.png  the wrapped_t5 zoo model at depth=1: one box for the wrapper
* wrapped-after.png   the same model with the default (descends through the wrapper)
* head-root.png       LlamaForCausalLM's default root (the backbone opened, the head a box)
* head-model.png      its Model Properties: the description says the facts in words
* deep-root.png       a 32-layer LlamaForCausalLM's default root: the layers as one run box
* deep-run.png        that run opened: its groups of ten calls
* gpt2-heatmap.png    GPT2LMHeadModel's root in tlnetron serve's page, coloured by observed time

Viewport 1200x800; ``optipng`` is used when installed.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import warnings
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path[:0] = [str(HERE), str(ROOT / "tests")]

import tlnetron  # noqa: E402
from netron_driver import NetronPage, netron_page  # noqa: E402
from zoo import trace  # noqa: E402

VIEWPORT = {"width": 1200, "height": 800}
SIDEBAR_SECTION = "Metadata"
DRILLDOWN_ZOOM_OUT = 3

_SCROLL_TO_SECTION = r"""(() => {
  const content = document.getElementById('sidebar-content');
  const sections = Array.from(content.querySelectorAll('.sidebar-section'));
  const target = sections.find((e) => e.textContent === %s);
  if (!target) { return false; }
  const box = content.closest('#sidebar') || content;
  let scroller = target.parentElement;
  while (scroller && scroller !== box.parentElement && scroller.scrollHeight <= scroller.clientHeight) {
    scroller = scroller.parentElement;
  }
  if (scroller) { scroller.scrollTop = target.offsetTop - 8; }
  return true;
})()"""


def export(log: Any, path: Path, **kwargs: Any) -> tlnetron.ExportResult:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", tlnetron.TlnetronWarning)
        return tlnetron.export(log, path, **kwargs)


def shoot(netron: NetronPage, out: Path) -> Path:
    netron.page.wait_for_timeout(300)  # let the sidebar's slide-in transition finish
    netron.screenshot(out)
    print(f"  {out}  {out.stat().st_size // 1024} KiB")
    return out


def optimise(paths: list[Path]) -> None:
    tool = shutil.which("optipng")
    if tool is None:
        return
    subprocess.run([tool, "-quiet", "-o2", *map(str, paths)], check=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", nargs="?", default=str(ROOT / "docs" / "images"), help="output folder")
    args = parser.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    with tempfile.TemporaryDirectory(prefix="tlnetron-shots-") as tmp_name:
        tmp = Path(tmp_name)
        demo = trace("demo")
        module = export(demo, tmp / "demo.onnx.json")
        op = export(demo, tmp / "demo-op.onnx.json", granularity="op")
        wrapped = trace("wrapped_t5")
        before = export(wrapped, tmp / "wrapped-depth1.onnx.json", depth=1)
        after = export(wrapped, tmp / "wrapped.onnx.json")
        head = export(trace("llama_lm"), tmp / "llama.onnx.json")
        deep = export(trace("llama_32"), tmp / "llama32.onnx.json")
        gpt2 = export(trace("gpt2"), tmp / "gpt2.onnx.json")

        with netron_page() as netron:
            netron.page.set_viewport_size(VIEWPORT)

            netron.open_dropped(module.artifact, module.companion)  # type: ignore[arg-type]
            written.append(shoot(netron, out / "demo-module.png"))

            netron.open_node_properties("blocks.0:1")
            netron._js(_SCROLL_TO_SECTION % f'"{SIDEBAR_SECTION}"')
            written.append(shoot(netron, out / "demo-sidebar.png"))

            netron.drill_into("blocks.0:1")
            netron.drill_into("blocks.0.attn:1")
            for _ in range(DRILLDOWN_ZOOM_OUT):  # the whole SelfAttention body in one screen
                netron.page.click("#zoom-out-button")
            netron.page.mouse.move(VIEWPORT["width"] - 20, 20)  # no hover highlight on the button
            written.append(shoot(netron, out / "demo-drilldown.png"))

            netron.open_dropped(op.artifact, op.companion)  # type: ignore[arg-type]
            written.append(shoot(netron, out / "demo-op.png"))

            netron.open_dropped(before.artifact, before.companion)  # type: ignore[arg-type]
            written.append(shoot(netron, out / "wrapped-before.png"))
            netron.open_dropped(after.artifact, after.companion)  # type: ignore[arg-type]
            written.append(shoot(netron, out / "wrapped-after.png"))

            netron.open_dropped(head.artifact, head.companion)  # type: ignore[arg-type]
            written.append(shoot(netron, out / "head-root.png"))
            netron.open_model_properties()
            written.append(shoot(netron, out / "head-model.png"))

            netron.open_dropped(deep.artifact, deep.companion)  # type: ignore[arg-type]
            written.append(shoot(netron, out / "deep-root.png"))
            netron.drill_into("model.layers")
            written.append(shoot(netron, out / "deep-run.png"))

            from tlnetron.pages.serve import serve_files

            served = serve_files(gpt2.artifact, gpt2.companion, browse=False)  # type: ignore[arg-type]
            try:
                netron.open_url(served.url + "?colour=time", frame="#netron")
                netron.wait_title(" + companion")
                netron.page.wait_for_selector("#tlnetron-legend div")  # the heat map painted its legend
                written.append(shoot(netron, out / "gpt2-heatmap.png"))
            finally:
                served.server.stop()

            errors = netron.console_errors()
            if errors:
                print(f"console errors: {errors}", file=sys.stderr)
                return 1
    optimise(written)
    total = sum(p.stat().st_size for p in written)
    print(f"{len(written)} images, {total // 1024} KiB in {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

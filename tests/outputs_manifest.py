"""Hash every output tlnetron writes for the zoo, to show a refactor changed no byte.

Exports each zoo entry in every view and option that changes what is written (depths,
buffer policies, statistics off, baselines, the ``.html`` page, the real-depth defaults) and
records a SHA-256 per file. Traces carry observed timings, which differ on every run, so each
entry is traced once, saved with ``torchlens.save`` into ``--traces`` and loaded from there by
every later run. Run it before and after a change and compare:

    .venv/bin/python tests/outputs_manifest.py --write /tmp/before.json
    .venv/bin/python tests/outputs_manifest.py --compare /tmp/before.json

Not a test (it takes minutes): a tool for changes that must leave outputs as they were.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import tempfile
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import tlnetron  # noqa: E402
import torchlens  # noqa: E402
from zoo import DEEP_DEFAULT, ZOO, trace  # noqa: E402

# (suffix, export keywords): every option that changes what is written.
VARIANTS: list[tuple[str, dict[str, Any]]] = [
    ("module", {}),
    ("module-d1", {"depth": 1}),
    ("module-d3", {"depth": 3}),
    ("module-always", {"show_buffers": "always"}),
    ("module-never", {"show_buffers": "never"}),
    ("op", {"granularity": "op"}),
    ("op-always", {"granularity": "op", "show_buffers": "always"}),
    ("op-nostats", {"granularity": "op", "activation_stats": False}),
    ("rolled", {"granularity": "rolled"}),
    ("module-nostats", {"activation_stats": False}),
]
BASELINES = [("bn_cnn_train", "bn_cnn_eval"), ("loop_growing", "loop"), ("gpt2", "gpt2"), ("t5", "t5")]
PAGES = ["demo", "gpt2", "loop"]


def _exports(tmp: Path, traces: Path, deep: bool) -> Iterator[tuple[str, Path, tlnetron.ExportResult | None]]:
    cache: dict[str, Any] = {}

    def get(name: str, fresh: bool = False) -> Any:
        if name not in cache or fresh:
            saved = traces / f"{name}.tlspec"
            if not saved.exists():
                traces.mkdir(parents=True, exist_ok=True)
                torchlens.save(trace(name), str(saved))
            if fresh:  # a baseline of the same run must be another object: one trace is refused as its own baseline
                return torchlens.load(str(saved))
            cache[name] = torchlens.load(str(saved))
        return cache[name]

    for name in sorted(ZOO):
        for suffix, kw in VARIANTS:
            path = tmp / f"{name}.{suffix}.onnx.json"
            yield f"{name}.{suffix}", path, tlnetron.export(get(name), path, **kw)
    for new, old in BASELINES:
        for granularity in ("module", "op", "rolled"):
            path = tmp / f"{new}-vs-{old}.{granularity}.onnx.json"
            yield (
                f"{new}-vs-{old}.{granularity}",
                path,
                tlnetron.export(get(new), path, granularity=granularity, baseline=get(old, fresh=new == old)),
            )
        path = tmp / f"{new}-vs-id.onnx.json"
        yield f"{new}-vs-id", path, tlnetron.export(get(new), path, baseline="run-0")
    for name in PAGES:
        path = tmp / f"{name}.html"
        yield f"{name}.html", path, tlnetron.export(get(name), path)
    if deep:
        for name in DEEP_DEFAULT:
            path = tmp / f"{name}.onnx.json"
            yield name, path, tlnetron.export(get(name), path)
            cache.pop(name)


def manifest(traces: Path, deep: bool) -> dict[str, str]:
    out: dict[str, str] = {}
    with tempfile.TemporaryDirectory(prefix="tlnetron-manifest-") as tmp, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for key, path, result in _exports(Path(tmp), traces, deep):
            files = [path] + ([Path(result.companion)] if result is not None and result.companion else [])
            for f in files:
                out[f"{key}:{f.name.split('.')[-2]}"] = hashlib.sha256(f.read_bytes()).hexdigest()
                f.unlink()
            print(f"{key}", file=sys.stderr, flush=True)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--write", type=Path, help="write the manifest here")
    group.add_argument("--compare", type=Path, help="compare with this manifest; exit 1 on any difference")
    parser.add_argument(
        "--traces",
        type=Path,
        default=Path(tempfile.gettempdir()) / "tlnetron-manifest-traces",
        help="saved traces, made on the first run (default: %(default)s)",
    )
    parser.add_argument("--no-deep", action="store_true", help="skip the real-depth models")
    args = parser.parse_args(argv)
    got = manifest(args.traces, deep=not args.no_deep)
    if args.write:
        args.write.write_text(json.dumps(got, indent=0, sort_keys=True) + "\n", encoding="utf-8")
        print(f"{len(got)} files hashed into {args.write}")
        return 0
    want = json.loads(args.compare.read_text(encoding="utf-8"))
    differ = sorted(k for k in set(got) | set(want) if got.get(k) != want.get(k))
    for k in differ:
        print(f"differs: {k} ({'missing' if k not in got else 'new' if k not in want else 'changed'})")
    print(f"{len(got)} files hashed, {len(differ)} differ")
    return 1 if differ else 0


if __name__ == "__main__":
    raise SystemExit(main())

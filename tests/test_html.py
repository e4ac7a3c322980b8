"""``tlnetron html`` without a browser: what the page holds, what it changes in Netron's own
files (only module specifiers, and index.html's head), that it names no remote resource,
its size, and its refusals (each writes nothing).

The page itself is opened in the real Netron in ``tests/e2e/test_html_page.py``.
"""

from __future__ import annotations

import base64
import dataclasses
import datetime as _dt
import gzip
import hashlib
import html
import html.parser
import json
import os
import re
import sys
import warnings
from pathlib import Path
from typing import Any

import pytest

import tlnetron
import tlnetron.pages.html as page_module
from tlnetron.cli import main
from tlnetron.errors import TlnetronError, TlnetronWarning
from tlnetron.pages.app import APP_MODULES, ASSETS, netron_dir
from tlnetron.pages.html import Page, build_page, write_page

GOLDEN = Path(__file__).parent / "golden"
ARTIFACT = GOLDEN / "tiny_op.onnx.json"
COMPANION = GOLDEN / "tiny_op.onnx.attachment.json"
NETRON = netron_dir()
NETRON_LINKS = {"https://github.com/lutzroeder/netron", "https://www.lutzroeder.com"}
"""Netron's logo and about-box links: ``<a href>`` a person may click (a new tab), never loaded."""
MAX_PAGE_BYTES = 2 * 2**20
"""The page of a small model (measured: 1.83 MiB with Netron 9.3.3, nearly all of it the app)."""


class _Parsed(html.parser.HTMLParser):
    """Every start tag (name, attributes) and the text of every <script> and <style>."""

    def __init__(self, text: str) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str]]] = []
        self.scripts: list[tuple[dict[str, str], str]] = []
        self.styles: list[str] = []
        self._open: tuple[str, dict[str, str]] | None = None
        self._text: list[str] = []
        self.feed(text)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attributes = {k: v or "" for k, v in attrs}
        self.tags.append((tag, attributes))
        if tag in ("script", "style"):
            self._open, self._text = (tag, attributes), []

    def handle_data(self, data: str) -> None:
        if self._open is not None:
            self._text.append(data)

    def handle_endtag(self, tag: str) -> None:
        if self._open is not None and tag == self._open[0]:
            text = "".join(self._text)
            if tag == "script":
                self.scripts.append((self._open[1], text))
            else:
                self.styles.append(text)
            self._open = None


def netron_file(name: str) -> str:
    return (NETRON / name).read_text("utf-8")


def decode_js(url: str) -> str:
    prefix = "data:text/javascript;base64,"
    assert url.startswith(prefix), url[:60]
    return base64.b64decode(url[len(prefix) :]).decode("utf-8")


def gunzip64(text: str) -> bytes:
    return gzip.decompress(base64.b64decode(text))


@pytest.fixture(scope="module")
def built() -> Page:
    return build_page(
        (ARTIFACT.name, ARTIFACT.read_bytes()), (COMPANION.name, COMPANION.read_bytes()), page_name="tiny.html"
    )


@pytest.fixture(scope="module")
def parsed(built: Page) -> _Parsed:
    return _Parsed(built.html.decode("utf-8"))


def script(parsed: _Parsed, **attributes: str) -> str:
    found = [text for attrs, text in parsed.scripts if attrs == attributes]
    assert len(found) == 1, (attributes, [a for a, _ in parsed.scripts])
    return found[0]


def page_data(parsed: _Parsed) -> dict[str, Any]:
    return json.loads(script(parsed, type="application/json", id="tlnetron-data"))  # type: ignore[no-any-return]


def import_map(parsed: _Parsed) -> dict[str, str]:
    return json.loads(script(parsed, type="importmap"))["imports"]  # type: ignore[no-any-return]


# --------------------------------------------------------------------------- what the page holds


def test_modules_are_netrons_own_but_for_relative_specifiers(parsed: _Parsed) -> None:
    """Each module is Netron's file, line for line; a line differs only by ``'./`` -> ``'`` in an import."""
    imports = import_map(parsed)
    assert set(imports) == {f"{name}.js" for name in APP_MODULES}
    rewritten = 0
    for key, url in imports.items():
        ours, theirs = decode_js(url).split("\n"), netron_file(key).split("\n")
        assert len(ours) == len(theirs), key
        for line, (new, old) in enumerate(zip(ours, theirs), 1):
            if new != old:
                assert "import" in old and old.replace("'./", "'") == new, f"{key}:{line}: {old!r} -> {new!r}"
                rewritten += 1
        assert not re.search(r"""(from\s*|import\s*\(\s*)['"`]\.""", decode_js(url)), key
    assert rewritten > 20  # view.js alone imports ~30 modules this way


def test_worker_is_netrons_and_dagre_is_held_once(parsed: _Parsed) -> None:
    """The loader replaces worker.js's ``import('./dagre.js')`` by dagre.js's data: URL when it starts it."""
    worker = page_data(parsed)["worker"]
    assert worker["source"] == netron_file("worker.js")
    assert worker["source"].count("import('./dagre.js')") == 2
    assert list(worker["imports"]) == ["./dagre.js"]
    assert decode_js(worker["imports"]["./dagre.js"]) == netron_file("dagre.js")


def test_index_html_is_netrons_but_for_its_head(parsed: _Parsed, built: Page) -> None:
    text = built.html.decode("utf-8")
    index = netron_file("index.html")
    scripts = [text for attrs, text in parsed.scripts if not attrs]
    assert scripts[0] == netron_file("index.js")  # inline, unmodified
    assert scripts[1] == (Path(page_module.__file__).parent / "heatmap.js").read_text("utf-8")  # ours, beside Netron's
    assert scripts[2] == (Path(page_module.__file__).parent / "html_loader.js").read_text("utf-8")
    assert netron_file("grapher.css") in parsed.styles[0]
    # The age gate's date is Netron's own: the page is not made to look newer than its app.
    date = re.search(r'<meta name="date" content="[^"]*">', index)
    assert date is not None and text.count(date.group(0)) == 1
    assert '<meta name="version" content="9.3.3">' in index and built.netron_version == "9.3.3"
    # Everything from <body> on is Netron's, but for the note first in <body>: positioned before
    # Netron's sidebar and toolbar, it is drawn under them and never hides a row.
    body = index[index.index("<body") :]
    ours = text[text.index("<body") :]
    note = re.search(r'<div id="tlnetron-note">.*?</div>\n', ours)
    assert note is not None and ours.replace(note.group(0), "") == body
    assert ours.index(note.group(0)) == ours.index(">") + 2 and re.search(r"#tlnetron-note\{[^}]*z-index", text) is None


def test_files_are_held_byte_for_byte(parsed: _Parsed) -> None:
    data = page_data(parsed)
    assert data["model"]["name"] == ARTIFACT.name
    assert gunzip64(data["model"]["gzip"]) == ARTIFACT.read_bytes()
    assert data["companion"]["name"] == COMPANION.name
    assert gunzip64(data["companion"]["gzip"]) == COMPANION.read_bytes()
    assert set(data["assets"]) == set(ASSETS)
    for name in ASSETS:
        assert gunzip64(data["assets"][name]) == (NETRON / name).read_bytes()
    assert data["modules"] == [f"{name}.js" for name in APP_MODULES]


def test_model_only_page_has_no_companion() -> None:
    page = build_page((ARTIFACT.name, ARTIFACT.read_bytes()))
    data = page_data(_Parsed(page.html.decode("utf-8")))
    assert data["companion"] is None


def test_page_policy_allows_no_connection_and_only_its_own_scripts(parsed: _Parsed) -> None:
    policies = [
        attrs["content"]
        for tag, attrs in parsed.tags
        if tag == "meta" and attrs.get("http-equiv") == "Content-Security-Policy"
    ]
    assert len(policies) == 1  # Netron's own (script-src 'self') is gone: ours replaces it
    directives = {d.split()[0]: d.split()[1:] for d in policies[0].split("; ")}
    assert directives["default-src"] == ["'none'"]
    assert directives["connect-src"] == ["'none'"]
    assert directives["worker-src"] == ["data:"]
    inline = [text for attrs, text in parsed.scripts if attrs.get("type") in (None, "importmap")]
    hashes = ["'sha256-" + base64.b64encode(hashlib.sha256(t.encode()).digest()).decode() + "'" for t in inline]
    assert len(hashes) == 4  # the import map, index.js, the heat map, the loader
    assert sorted(directives["script-src"]) == sorted([*hashes, "data:"])
    assert "'unsafe-inline'" not in directives["script-src"] and "'unsafe-eval'" not in policies[0]


def test_page_names_no_remote_resource(parsed: _Parsed, built: Page) -> None:
    """No src, no <link href>, no import-map entry, no CSS url() names a host; the only
    http(s) URLs in attributes are Netron's own links for a person to click."""
    remote = re.compile(r"^\s*(https?:)?//", re.IGNORECASE)
    for tag, attrs in parsed.tags:
        for name, value in attrs.items():
            if name in ("src", "href", "srcset", "data", "action", "poster", "background"):
                if tag == "a" and name == "href" and value in NETRON_LINKS:
                    continue
                assert not remote.match(value), (tag, name, value)
                assert value.startswith(("data:", "#", "javascript:void(0)")), (tag, name, value[:60])
    assert all(url.startswith("data:text/javascript;base64,") for url in import_map(parsed).values())
    for css in parsed.styles:
        assert all(u.startswith(("#", '"#', "'#")) for u in re.findall(r"url\(\s*([^)]*)\)", css)), css
    data = page_data(parsed)
    assert all(url.startswith("data:text/javascript;base64,") for url in data["worker"]["imports"].values())
    assert not re.search(r"https?:", json.dumps({k: v for k, v in data.items() if k != "worker"}))
    assert not re.search(r"https?:", data["worker"]["source"])
    links = {attrs["href"] for tag, attrs in parsed.tags if tag == "a" and remote.match(attrs.get("href", ""))}
    assert links == NETRON_LINKS


def test_page_size_and_determinism(built: Page) -> None:
    assert len(built.html) < MAX_PAGE_BYTES, f"{len(built.html) / 2**20:.2f} MiB"
    again = build_page(
        (ARTIFACT.name, ARTIFACT.read_bytes()), (COMPANION.name, COMPANION.read_bytes()), page_name="tiny.html"
    )
    assert again.html == built.html


def test_page_says_when_the_age_gate_stops_it(parsed: _Parsed, built: Page) -> None:
    assert built.expires - built.built == _dt.timedelta(days=180)
    assert built.built.date() == _dt.date(2026, 10, 23)
    assert not built.expired(built.expires) and built.expired(built.expires + _dt.timedelta(seconds=1))
    text = built.html.decode("utf-8")
    title = re.search(r"<title>(.*?)</title>", text)
    assert title is not None and f"works until {built.expires:%Y-%m-%d}" in title.group(1)
    note = re.search(r'<div id="tlnetron-note">(.*?)</div>', text)
    assert note is not None
    words = re.sub(r"<[^>]+>", "", note.group(1))
    assert f"until {built.expires:%Y-%m-%d}" in words
    assert "pip install --upgrade netron" in words
    assert f"tlnetron html {ARTIFACT.name} --attachment {COMPANION.name} -o tiny.html" in words


def note_words(page: str) -> str:
    """The words of a page's note, as a person reads them."""
    note = re.search(r'<div id="tlnetron-note">(.*?)</div>', page)
    assert note is not None
    return html.unescape(re.sub(r"<[^>]+>", "", note.group(1)))


def test_regenerate_command_is_quoted_for_a_shell() -> None:
    page = build_page(("my model.onnx.json", ARTIFACT.read_bytes()), page_name="my page.html")
    note = re.search(r'<div id="tlnetron-note">(.*?)</div>', page.html.decode("utf-8"))
    assert note is not None
    assert "tlnetron html 'my model.onnx.json' -o 'my page.html'" in html.unescape(
        re.sub(r"<[^>]+>", "", note.group(1))
    )


# --------------------------------------------------------------------------- writing and the command line


def test_cli_writes_the_page(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "tiny.html"
    assert main(["html", str(ARTIFACT), "--attachment", str(COMPANION), "-o", str(out)]) == 0
    printed = capsys.readouterr().out
    assert f"wrote      {out} (" in printed and "Netron 9.3.3" in printed and "until      2027-04-21" in printed
    assert (
        out.read_bytes()
        == build_page(
            (ARTIFACT.name, ARTIFACT.read_bytes()), (COMPANION.name, COMPANION.read_bytes()), page_name="tiny.html"
        ).html
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tiny.html"]  # no temporary or lock file left


def test_cli_takes_the_companion_beside_the_artifact_and_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The one rule of every command reading an artifact: the companion beside it is taken,
    said on stderr, unless --no-attachment."""
    beside = tmp_path / "beside.html"
    assert main(["html", str(ARTIFACT), "-o", str(beside)]) == 0
    err = capsys.readouterr().err
    assert f"used {COMPANION}, the companion beside the artifact (--no-attachment leaves it out)" in err
    data = page_data(_Parsed(beside.read_text(encoding="utf-8")))
    assert gunzip64(data["companion"]["gzip"]) == COMPANION.read_bytes()
    alone = tmp_path / "alone.html"
    assert main(["html", str(ARTIFACT), "--no-attachment", "-o", str(alone)]) == 0
    assert "companion beside" not in capsys.readouterr().err
    assert page_data(_Parsed(alone.read_text(encoding="utf-8"))).get("companion") is None


def test_an_existing_page_is_replaced_whole(tmp_path: Path) -> None:
    out = tmp_path / "tiny.html"
    out.write_text("old page")
    page = write_page(ARTIFACT, COMPANION, out)
    assert out.read_bytes() == page.html


def test_a_failed_replace_leaves_the_old_page(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "tiny.html"
    out.write_text("old page")

    def refuse(src: Any, dst: Any) -> None:
        raise OSError(28, "No space left on device", str(dst))

    monkeypatch.setattr(os, "replace", refuse)
    with pytest.raises(TlnetronError) as refused:
        write_page(ARTIFACT, COMPANION, out)
    assert refused.value.code == "destination_unwritable"
    assert out.read_text() == "old page"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tiny.html"]


def test_an_expired_netron_is_warned_about(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(Page, "expired", lambda self, now=None: True)
    with pytest.warns(TlnetronWarning) as caught:
        write_page(ARTIFACT, None, tmp_path / "tiny.html")
    assert [w.message.code for w in caught] == ["netron_app_expired"]  # type: ignore[union-attr]


def _refusal(args: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    assert main(args) == 3
    err = capsys.readouterr().err
    assert err.startswith("tlnetron: [") and err.count("\n") == 1, err
    return err[len("tlnetron: [") :].split("]")[0]


@pytest.mark.parametrize(
    ("case", "code"),
    [
        ("artifact missing", "invalid_path"),
        ("artifact is a folder", "invalid_path"),
        ("artifact is the companion", "invalid_path"),
        ("artifact is not json", "invalid_path"),
        ("artifact is not onnx", "invalid_path"),
        ("companion missing", "invalid_path"),
        ("companion without signature", "netron_attachment_invalid"),
        ("companion not named .json", "netron_attachment_invalid"),
        ("output is a folder", "invalid_path"),
        ("output not .html", "invalid_path"),
        ("output folder missing", "destination_unwritable"),
        ("output folder is a file", "destination_unwritable"),
    ],
)
def test_refusals_write_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str], case: str, code: str) -> None:
    artifact, companion, out = str(ARTIFACT), str(COMPANION), tmp_path / "page.html"
    if case == "artifact missing":
        artifact = str(tmp_path / "missing.onnx.json")
    elif case == "artifact is a folder":
        (tmp_path / "dir.onnx.json").mkdir()
        artifact = str(tmp_path / "dir.onnx.json")
    elif case == "artifact is the companion":
        artifact = str(COMPANION)
    elif case == "artifact is not json":
        (tmp_path / "model.onnx").write_bytes(ARTIFACT.read_bytes())
        artifact = str(tmp_path / "model.onnx")
    elif case == "artifact is not onnx":
        (tmp_path / "other.json").write_text('{"nodes": []}')
        artifact = str(tmp_path / "other.json")
    elif case == "companion missing":
        companion = str(tmp_path / "missing.attachment.json")
    elif case == "companion without signature":
        companion = str(ARTIFACT)
    elif case == "companion not named .json":
        (tmp_path / "c.attachment").write_bytes(COMPANION.read_bytes())
        companion = str(tmp_path / "c.attachment")
    elif case == "output is a folder":
        out = tmp_path / "page.html"
        out.mkdir()
    elif case == "output not .html":
        out = tmp_path / "page.json"
    elif case == "output folder missing":
        out = tmp_path / "nowhere" / "page.html"
    elif case == "output folder is a file":
        (tmp_path / "file").write_text("x")
        out = tmp_path / "file" / "page.html"
    before = sorted(p.name for p in tmp_path.iterdir())
    assert _refusal(["html", artifact, "--attachment", companion, "-o", str(out)], capsys) == code
    assert sorted(p.name for p in tmp_path.iterdir()) == before


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0, reason="root writes into read-only folders")
def test_unwritable_folder_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / "ro"
    folder.mkdir()
    folder.chmod(0o500)
    try:
        assert _refusal(["html", str(ARTIFACT), "-o", str(folder / "page.html")], capsys) == "destination_unwritable"
        assert list(folder.iterdir()) == []
    finally:
        folder.chmod(0o700)


def test_netron_not_installed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "netron", None)  # import netron raises ImportError
    assert _refusal(["html", str(ARTIFACT), "-o", str(tmp_path / "page.html")], capsys) == "netron_serve_unavailable"
    assert list(tmp_path.iterdir()) == []


def test_an_unknown_netron_layout_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    """A netron whose modules import one another in a way the page cannot hold is refused, not packed half-working."""
    from tlnetron.pages import app

    real = app._read_file

    def odd(folder: Path, name: str) -> str:
        text = real(folder, name)
        return text.replace("from './base.js'", 'from "../base.js"') if name == "view.js" else text

    monkeypatch.setattr(app, "_read_file", odd)
    with pytest.raises(TlnetronError) as refused:
        build_page((ARTIFACT.name, ARTIFACT.read_bytes()))
    assert refused.value.code == "netron_serve_unavailable" and "view.js" in str(refused.value)


# --------------------------------------------------------------------------- tlnetron.show (the notebook's iframe)


def srcdoc(shown: Any) -> str:
    found = re.fullmatch(r'<iframe srcdoc="([^"]*)" title="[^"]*" style="[^"]*"></iframe>', shown._repr_html_())
    assert found is not None
    return html.unescape(found.group(1))


def test_show_by_path_finds_the_companion_beside_it() -> None:
    import tlnetron

    shown = tlnetron.show(ARTIFACT)
    assert shown.title == f"{ARTIFACT.name} + {COMPANION.name}"
    assert srcdoc(shown) == shown.page.html.decode("utf-8")
    data = page_data(_Parsed(srcdoc(shown)))
    assert gunzip64(data["companion"]["gzip"]) == COMPANION.read_bytes()
    assert "then <code>tlnetron.show(...)</code>" in srcdoc(shown)
    assert repr(shown).startswith(f"<tlnetron page: {ARTIFACT.name} + {COMPANION.name} in Netron 9.3.3")
    assert tlnetron.show(ARTIFACT, attachment=False).title == ARTIFACT.name
    assert (
        tlnetron.show(str(ARTIFACT), attachment=str(COMPANION), height=300)
        ._repr_html_()
        .endswith('height:300px;border:1px solid #ddd;box-sizing:border-box"></iframe>')
    )


def test_show_an_export_result_uses_its_bytes(tmp_path: Path) -> None:
    """Built from the result's bytes, never from the files (which may have changed since)."""
    from types import SimpleNamespace

    import tlnetron

    result = SimpleNamespace(
        artifact=tmp_path / "gone.onnx.json",
        companion=None,
        artifact_bytes=ARTIFACT.read_bytes(),
        companion_bytes=COMPANION.read_bytes(),
    )
    shown = tlnetron.show(result)
    assert shown.title == "gone.onnx.json + gone.onnx.attachment.json"
    data = page_data(_Parsed(srcdoc(shown)))
    assert gunzip64(data["model"]["gzip"]) == ARTIFACT.read_bytes()
    assert tlnetron.show(result, attachment=False).title == "gone.onnx.json"


def test_show_a_trace_shows_its_export_and_leaves_no_file(tmp_path: Path) -> None:
    """A notebook user holding a trace: the page holds the artifact and its companion, the
    export's keywords apply, and the temporary folder is gone."""
    import tempfile

    import torch
    import torchlens

    import tlnetron

    torch.manual_seed(0)
    log = torchlens.trace(torch.nn.Sequential(torch.nn.Linear(3, 3), torch.nn.ReLU()).eval(), torch.randn(1, 3))
    before = {p.name for p in Path(tempfile.gettempdir()).glob("tlnetron-show-*")}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", tlnetron.TlnetronWarning)
        shown = tlnetron.show(log, granularity="op")
        expected = tlnetron.export(log, tmp_path / "trace.onnx.json", granularity="op")
    assert {p.name for p in Path(tempfile.gettempdir()).glob("tlnetron-show-*")} == before
    assert shown.title == "trace.onnx.json + trace.onnx.attachment.json"
    data = page_data(_Parsed(srcdoc(shown)))
    model = json.loads(gunzip64(data["model"]["gzip"]))
    companion = json.loads(gunzip64(data["companion"]["gzip"]))
    assert {n["name"] for n in model["graph"]["node"]} == {
        n["name"] for n in json.loads(expected.artifact_bytes)["graph"]["node"]
    }
    assert any(r["name"] == "observed µs" for r in companion["metrics"])
    with pytest.raises(TlnetronError) as refused:
        tlnetron.show(str(ARTIFACT), granularity="op")
    assert refused.value.code == "invalid_option" and "only apply when show() is given a trace" in str(refused.value)


def test_an_export_as_a_cells_last_line_draws_the_page(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``tlnetron.export(...)`` as a notebook cell's value: a one-line summary, and the page as HTML."""
    import torch
    import torchlens

    log = torchlens.trace(torch.nn.Sequential(torch.nn.Linear(3, 3), torch.nn.ReLU()).eval(), torch.randn(1, 3))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TlnetronWarning)
        result = tlnetron.export(log, tmp_path / "cell.onnx.json")
    text = repr(result)
    assert (
        text.startswith("<tlnetron.ExportResult module view: ")
        and "wrote cell.onnx.json + cell.onnx.attachment.json" in text
    )
    assert len(text) < 200 and "artifact_bytes" not in text
    data = page_data(_Parsed(srcdoc(result)))
    assert gunzip64(data["model"]["gzip"]) == result.artifact_bytes
    assert gunzip64(data["companion"]["gzip"]) == result.companion_bytes
    # Served, the notebook already shows its page: the value links it instead of drawing it twice.
    served = dataclasses.replace(result, url="http://127.0.0.1:9/")
    assert "serving http://127.0.0.1:9/" in repr(served) and "<iframe" not in served._repr_html_()
    assert '<a href="http://127.0.0.1:9/"' in served._repr_html_()
    # Without netron, the summary and the remedy, not a traceback.
    monkeypatch.setitem(sys.modules, "netron", None)
    shown = result._repr_html_()
    assert "<iframe" not in shown and "pip install" in shown and "ExportResult" in shown


@pytest.mark.parametrize(
    ("what", "kwargs", "code", "words"),
    [
        ("missing.onnx.json", {}, "invalid_path", "nothing was shown"),
        (
            str(ARTIFACT),
            {"attachment": "missing.attachment.json"},
            "invalid_path",
            "attachment= 'missing.attachment.json'",
        ),
        (str(ARTIFACT), {"attachment": str(ARTIFACT)}, "netron_attachment_invalid", "not a netron:attachment"),
        (42, {}, "invalid_option", "a trace, what tlnetron.export returned or an artifact's path, not int"),
        (str(ARTIFACT), {"height": "tall"}, "invalid_option", "height="),
    ],
)
def test_show_refusals(what: Any, kwargs: dict[str, Any], code: str, words: str) -> None:
    import tlnetron

    with pytest.raises(TlnetronError) as refused:
        tlnetron.show(what, **kwargs)
    assert refused.value.code == code and words in str(refused.value), str(refused.value)


# ------------------------------------------------------------------ export(log, "model.html")


def test_export_to_a_page_writes_only_the_page(tmp_path: Path) -> None:
    """``tlnetron.export(log, "model.html")``: one page holding the artifact and companion the
    same export would have written, and no other file."""
    import torch
    import torchlens

    torch.manual_seed(0)
    log = torchlens.trace(torch.nn.Sequential(torch.nn.Linear(3, 3), torch.nn.ReLU()).eval(), torch.randn(1, 3))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", tlnetron.TlnetronWarning)
        result = tlnetron.export(log, tmp_path / "model.html")
        (tmp_path / "files").mkdir()
        files = tlnetron.export(log, tmp_path / "files" / "model.onnx.json")
    assert result.page == tmp_path / "model.html" and result.artifact is None and result.companion is None
    assert sorted(p.name for p in tmp_path.iterdir()) == ["files", "model.html"]
    html = result.page.read_text(encoding="utf-8")
    assert "model.onnx.json" in html and "model.onnx.attachment.json" in html
    # The note says how to make the page again in the words of the call that made it, once.
    words = note_words(html)
    assert "then tlnetron.export(trace, 'model.html')" in words and words.count("pip install") == 1, words
    # The page holds what the file export writes, byte for byte (both are deterministic but for
    # observed durations, so compare the structure the ids are derived from).
    assert json.loads(result.artifact_json)["graph"]["node"] == json.loads(files.artifact_json)["graph"]["node"]
    assert result.companion_bytes is not None and result.export_id
    with pytest.raises(tlnetron.TlnetronError) as info:
        tlnetron.export(log, tmp_path / "again.html", serve=True)
    assert info.value.code == "invalid_option" and not (tmp_path / "again.html").exists()


def test_a_companion_of_another_export_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The page holds one pair: a companion written for another export is named, as serve
    and validate name it, and no page is written (nor shown)."""
    from tlnetron.pipeline import export_ir
    from tlnetron.ir.trace import Honesty, OpIR, TraceIR

    ops = (
        OpIR("input_1", "input_1", 1, 1, "input", "input", (3,), "float32"),
        OpIR(
            "exp_1_1",
            "exp_1_1",
            1,
            1,
            "exp",
            "op",
            (3,),
            "float32",
            parents=("input_1",),
            ports=("arg0",),
            duration_s=1e-6,
        ),
        OpIR("output_1", "output_1", 1, 1, "output", "output", (3,), "float32", parents=("exp_1_1",), ports=("arg0",)),
    )
    other = export_ir(TraceIR(ops=ops, honesty=Honesty(capture_status="complete")), tmp_path / "other.onnx.json",
                      granularity="op", depth=None, show_buffers="meaningful", attachment=None)  # fmt: skip
    assert other.companion is not None
    before = sorted(p.name for p in tmp_path.iterdir())
    out = tmp_path / "page.html"
    assert (
        _refusal(["html", str(ARTIFACT), "--attachment", str(other.companion), "-o", str(out)], capsys)
        == "companion_mismatch"
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == before
    with pytest.raises(TlnetronError) as info:
        tlnetron.show(ARTIFACT, attachment=other.companion)
    assert info.value.code == "companion_mismatch" and "another export" in str(info.value)
    # The artifact's own companion still makes a page.
    assert main(["html", str(ARTIFACT), "--attachment", str(COMPANION), "-o", str(out)]) == 0
    assert out.is_file()


def test_an_export_to_a_page_too_large_to_carry_is_refused_and_the_old_page_stays(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The page is built from the export's bytes: past the page limit (lowered here, since a
    real 512 MB artifact is for the heavy profile) the export is refused with where the files
    open instead, and an existing page keeps its bytes, through Python and the CLI alike."""
    import torch
    import torchlens

    import tlnetron.read.files as files

    log = torchlens.trace(torch.nn.Sequential(torch.nn.Linear(3, 3), torch.nn.ReLU()).eval(), torch.randn(1, 3))
    page = tmp_path / "model.html"
    page.write_bytes(b"the page from before")
    monkeypatch.setattr(files, "PAGE_MAX_BYTES", 1000)
    with pytest.raises(TlnetronError) as refused:
        tlnetron.export(log, page)
    assert refused.value.code == "page_too_large" and "no page was made" in str(refused.value)
    assert page.read_bytes() == b"the page from before" and sorted(p.name for p in tmp_path.iterdir()) == ["model.html"]
    saved = tmp_path / "run.tlspec"
    torchlens.save(log, saved)
    capsys.readouterr()
    assert main(["export", str(saved), "-o", str(page)]) == 3
    err = capsys.readouterr().err
    assert "page_too_large" in err and "Netron app" in err and "Traceback" not in err
    assert page.read_bytes() == b"the page from before"

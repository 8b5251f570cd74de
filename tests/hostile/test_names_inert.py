"""Names and paths are data, never control or markup (issue 43, item 2; decision 0890).

Two hostile names, synthetic, on the real MI300X decode capture (425 kernels, counted by hand
in test_mcp.py):
- a folder named with a newline, an ANSI clear-screen and colour, a forged
  "crossview: error: FAKE LINE", a zero-width space and a bidi override;
- the capture's top kernel renamed with a bidi override (U+202E), an isolate (U+2066…U+2069),
  marks and zero-width characters, ESC sequences, BEL, NUL and a newline before a forged
  "crossview: error: FAKE KERNEL".
Each must come out inert — escaped, one line, never obeyed — on the terminal (stdout and
stderr), in the Markdown recap, in the HTML report (names isolated in <bdi>; read back by
headless Chromium where it is installed), in the MCP JSON and in the exports a viewer shows.
"""

from __future__ import annotations

import gzip
import json
import re
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import SHARED_DATA, run_cli, shared_file

TRACE = SHARED_DATA / "kineto" / "tracelens_mi300x_vllm_decode_full_graph.json.gz"
TOP_KERNEL = "_matmul_ogs_NNT_bf16xbf16xmxfp4_16x128x256x1"  # 24 launches, 3.76 ms
EVIL_KERNEL = ("evil\u202egnp.exe\x1b[2J\x1b[31m\x07\x00\u2066iso\u2069\u200b\u200e\u200fz"
               "\ncrossview: error: FAKE KERNEL")
EVIL_FOLDER = "run\n\x1b[2J\x1b[31mcrossview: error: FAKE LINE\x1b[0m\u200b\u202eevil"
# what must never reach an output raw: C0 but newline and tab, DEL, C1, bidi embeddings,
# overrides, isolates and marks, zero-width characters, line/paragraph separators
RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2060-\u2069"
                 "\u2028\u2029\ufeff]")
CHROMIUM = Path("/usr/bin/chromium")


@pytest.fixture(scope="module")
def evil_trace() -> Iterator[Path]:
    src = shared_file(TRACE)
    doc = json.loads(gzip.decompress(src.read_bytes()))
    n = 0
    for e in doc["traceEvents"]:
        if e.get("name") == TOP_KERNEL:
            e["name"] = EVIL_KERNEL
            n += 1
    assert n == 24  # the top kernel's launches (the recap's top row: ×24, 3.76 ms)
    d = Path(tempfile.mkdtemp(prefix="cv-evil-kernel-"))
    out = d / "evil.pt.trace.json"
    out.write_text(json.dumps(doc))
    yield out
    shutil.rmtree(d, ignore_errors=True)


def _no_forged_line(text: str) -> None:
    assert not RAW.search(text), RAW.search(text)
    bad = [ln for ln in text.splitlines() if "FAKE" in ln and "\\n" not in ln]
    assert not bad, bad  # a forged line would stand alone; escaped, it follows `\n`


def test_forged_folder_name_is_inert_on_the_terminal(tmp_path: Path) -> None:
    d = tmp_path / EVIL_FOLDER
    d.mkdir()
    shutil.copyfile(shared_file(TRACE), d / TRACE.name)
    proc = run_cli("--quiet", "analyze", str(d))
    assert proc.returncode == 0, proc.stderr
    _no_forged_line(proc.stdout)
    assert proc.stderr == ""
    sources = next(ln for ln in proc.stdout.splitlines() if "Sources:" in ln)
    shown = "run\\n\\x1b[2J\\x1b[31mcrossview: error: FAKE LINE\\x1b[0m\\u200b\\u202eevil"
    assert f"`{tmp_path}/{shown}/{TRACE.name}`" in sources
    # the same recap as under a plain folder: the name added no line
    plain = tmp_path / "plain"
    plain.mkdir()
    shutil.copyfile(TRACE, plain / TRACE.name)
    ref = run_cli("--quiet", "analyze", str(plain))
    assert len(proc.stdout.splitlines()) == len(ref.stdout.splitlines())
    # JSON on the terminal: still valid, the path decodes to the folder's real name
    js = run_cli("--quiet", "analyze", "--format", "json", str(d))
    assert not RAW.search(js.stdout)
    doc = json.loads(js.stdout)
    assert doc["artifacts"][0]["path"] == str(d / TRACE.name)


def test_hostile_kernel_name_is_inert_in_the_recap(evil_trace: Path, tmp_path: Path) -> None:
    # --detail full: the top-kernels table is behind the first screen (issue 40)
    proc = run_cli("--quiet", "analyze", str(evil_trace), "--detail", "full")
    assert proc.returncode == 0, proc.stderr
    _no_forged_line(proc.stdout)
    shown = ("evil\\u202egnp.exe\\x1b[2J\\x1b[31m\\x07\\x00\\u2066iso\\u2069\\u200b\\u200e"
             "\\u200fz\\ncrossview: error: FAKE KERNEL")
    tree = [ln for ln in proc.stdout.splitlines() if "→ evil" in ln]
    # escaped (about 4× longer), then cut at the tree's 100 characters
    assert tree and shown[:95] in tree[0] and "[3.76 ms, 35.2%]" in tree[0], tree
    # the top-kernels row: one cell, cut at 80 characters, ×24 launches, 3.76 ms
    row = next(ln for ln in proc.stdout.splitlines() if ln.startswith("| `evil"))
    assert "| 24 | 3.76 ms |" in row
    out = tmp_path / "recap.md"
    assert run_cli("--quiet", "analyze", "-o", str(out), str(evil_trace), "--detail", "full"
                   ).returncode == 0
    assert out.read_text(encoding="utf-8") == proc.stdout


def _html_checks(html: str) -> None:
    assert not RAW.search(html), RAW.search(html)
    # every inline name isolated: <code><bdi>…</bdi></code>; the name shown, escaped
    assert "<code><bdi>evil\\u202egnp.exe\\x1b[2J" in html
    assert "<code>evil" not in html
    # the flame graph's data: the page's script draws the escaped text, not the raw name
    assert "evil\\\\u202egnp.exe\\\\u001b[2J" in html


def test_hostile_kernel_name_is_inert_in_html(evil_trace: Path, tmp_path: Path) -> None:
    page = tmp_path / "r.html"
    proc = run_cli("--quiet", "report", "-o", str(page), str(evil_trace))
    assert proc.returncode == 0, proc.stderr
    _html_checks(page.read_text(encoding="utf-8"))
    if not CHROMIUM.exists():
        pytest.skip("/usr/bin/chromium absent (apt-get install -y chromium; .ci/run does): "
                    "the page text was checked, not its rendering")
    sync_api = pytest.importorskip("playwright.sync_api",
                                   reason="playwright not installed (pip install '.[test]')")
    profile = tempfile.mkdtemp(prefix="cv-chromium-")
    try:
        with sync_api.sync_playwright() as p:
            ctx = p.chromium.launch_persistent_context(
                profile, executable_path=str(CHROMIUM), headless=True,
                args=["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                      "--disable-background-networking", "--disable-component-update"])
            view = ctx.new_page()
            view.goto(page.as_uri())
            text = view.evaluate("() => document.body.innerText")
            isolate = view.evaluate(
                "() => [...document.querySelectorAll('code > bdi')].filter("
                "b => b.textContent.startsWith('evil')).map("
                "b => getComputedStyle(b).unicodeBidi)")
            svg = view.evaluate("() => [...document.querySelectorAll('#gpu-fg svg text, "
                                "#gpu-fg svg title')].map(t => t.textContent).join('\\n')")
            ctx.close()
    finally:
        shutil.rmtree(profile, ignore_errors=True)
    assert not RAW.search(text) and "evil\\u202egnp.exe" in text
    assert "\nFAKE" not in text and "\ncrossview: error: FAKE" not in text
    assert isolate and set(isolate) == {"isolate"}, isolate
    assert not RAW.search(svg)


def test_hostile_names_inert_in_exports(evil_trace: Path, tmp_path: Path) -> None:
    for to, name in (("folded", "s.folded"), ("speedscope", "s.speedscope.json"),
                     ("perfetto", "t.json")):
        out = tmp_path / name
        proc = run_cli("--quiet", "export", "--to", to, "-o", str(out), str(evil_trace))
        assert proc.returncode == 0, (to, proc.stderr)
        raw = out.read_text(encoding="utf-8")
        if to == "folded":
            lines = raw.splitlines()
            assert all(re.fullmatch(r".+ \d+", ln) for ln in lines)  # no forged stack line
            assert any("→ evil\\u202egnp.exe\\x1b[2J" in ln for ln in lines)
            assert not RAW.search(raw)
            continue
        doc = json.loads(raw)
        names = ([f["name"] for f in doc["shared"]["frames"]] if to == "speedscope"
                 else [e.get("name", "") for e in doc["traceEvents"]])
        evil = [n.removeprefix("→ ") for n in names if "evil" in n]  # speedscope: "→ k"
        assert evil and all(not RAW.search(n) for n in names), to
        assert evil[0].startswith("evil\\u202egnp.exe\\x1b[2J"), evil[0]


def test_hostile_names_inert_in_mcp_json(evil_trace: Path) -> None:
    pytest.importorskip("mcp", reason="the mcp extra is not installed (pip install '.[mcp]')")
    import anyio
    from mcp import Client

    from crossview.mcp.server import build

    server = build([evil_trace.parent])

    async def go() -> dict[str, str]:
        out = {}
        async with Client(server) as c:
            for tool, args in (("analyze", {"paths": [str(evil_trace)], "detail": "full"}),
                               ("analyze", {"paths": [str(evil_trace)], "format": "md"}),
                               ("flamegraph", {"paths": [str(evil_trace)]}),
                               ("topfunctions", {"paths": [str(evil_trace)], "view": "gpu"})):
                r = await c.call_tool(tool, args)
                assert not r.is_error, r.content[0].text
                out[f"{tool}:{args.get('format', '')}"] = r.content[0].text
        return out

    answers = anyio.run(go)
    for key, text in answers.items():
        assert not RAW.search(text), key  # the JSON text itself: escapes only
    # JSON escapes keep the value: the agent reads the kernel's real name
    doc = json.loads(answers["topfunctions:"])
    assert EVIL_KERNEL in [f["frame"] for f in doc["functions"]]
    # text an agent shows as is (the Markdown recap, folded stacks): escaped, one line each
    md = json.loads(answers["analyze:md"])["markdown"]
    _no_forged_line(md)
    assert "evil\\u202egnp.exe\\x1b[2J" in md
    folded = json.loads(answers["flamegraph:"])["folded"]
    assert all(re.fullmatch(r".+ \d+", ln) for ln in folded.splitlines())
    assert not RAW.search(folded)


@pytest.mark.parametrize("doc", [
    "plain ascii\n\twith a tab\n",
    "µs › frames — printable non-ASCII\n",
    "evil\u202egnp.exe\x1b[2J\x07\x00\u2066iso\u2069\u200b\u200e\u200fz",
    "DEL \x7f and C1 \x85 and NBSP \xa0 and LS \u2028",
    "emoji 😀 and a private-use \ue000 and unassigned \U000e0041",
])
def test_encoded_bytes_are_made_inert_as_text(doc: str) -> None:
    """`inert.encoded` (the JSON renderer's UTF-8 bytes, not decoded) gives the bytes of
    `inert.text` on the same document, and returns a clean document as it is (synthetic
    strings: the names the hostile fixtures forge, plus C1, DEL, separators, emoji)."""
    from crossview.core import inert

    raw = doc.encode("utf-8")
    got = inert.encoded(raw)
    assert got == inert.text(doc).encode("utf-8")
    if inert.text(doc) == doc:
        assert got is raw
    # a byte that is no UTF-8 (a name read from a non-UTF-8 path): escaped, never raw
    assert inert.encoded(raw + b"\xff") == inert.text(doc + "\udcff").encode("utf-8")


def test_json_written_as_bytes_is_the_same_document(evil_trace: Path, tmp_path: Path) -> None:
    """The CLI writes the JSON renderer's bytes (no decode and re-encode): stdout, -o and a
    second look from the answer cache all hold the same inert document, and it decodes to the
    kernel's real name."""
    cache = tmp_path / "cache"
    first = run_cli("--quiet", "--cache-dir", str(cache), "analyze", "--format", "json",
                    str(evil_trace))
    assert first.returncode == 0, first.stderr
    assert not RAW.search(first.stdout)
    again = run_cli("--quiet", "--cache-dir", str(cache), "analyze", "--format", "json",
                    str(evil_trace))
    assert again.stdout == first.stdout  # the kept answer: the same bytes
    out = tmp_path / "recap.json"
    assert run_cli("--quiet", "--no-cache", "analyze", "--format", "json", "-o", str(out),
                   str(evil_trace)).returncode == 0
    assert out.read_text(encoding="utf-8") == first.stdout

    def strings(x: object) -> Iterator[str]:
        if isinstance(x, str):
            yield x
        elif isinstance(x, dict):
            for v in x.values():
                yield from strings(v)
        elif isinstance(x, list):
            for v in x:
                yield from strings(v)

    assert EVIL_KERNEL in set(strings(json.loads(first.stdout)))  # its escapes decode back

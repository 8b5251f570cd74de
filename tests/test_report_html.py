"""`crossview report` / `analyze --format html`: the self-contained HTML report.

Real captures from ../shared/data (skip when absent). Numbers are checked against the trace
itself, decoded here independently with Python's json module (kernel events: `cat` ==
"kernel", `dur` in µs), and against the data README (H100 trace: 1,465 kernels, ~92% busy).
The synthesis ledger and the A/B JSON have no public sample: they are SYNTHETIC fixtures in the
documented shapes (the A/B one is written by `crossview ab` itself from synthetic trials).
The browser test opens the page in Debian's chromium (installed by .ci/run) via playwright.
"""

from __future__ import annotations

import gzip
import json
import os
import re
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from conftest import SHARED_DATA
from crossview.cli import app
from crossview.render.html.esc import data_script
from crossview.render.html.flame import count_nodes, flame_data
from crossview.views.host.calltree import CallTree, TreeNode

runner = CliRunner()
DATA = SHARED_DATA
KINETO = DATA / "kineto"
H100 = KINETO / "tracelens_h100_hf_qwen1.5_0.5b_forward.json.gz"
SKIP = "../shared/data not present: real-capture report tests need it"
needs_data = pytest.mark.skipif(not H100.exists(), reason=SKIP)
SIZE_BUDGET = 2_000_000  # bytes: the report of any shared trace (docs/architecture.md)
# Debian's chromium (.ci/run installs it); CROSSVIEW_CHROMIUM names another build
CHROMIUM = Path(os.environ.get("CROSSVIEW_CHROMIUM") or "/usr/bin/chromium")
NO_CHROMIUM = (f"{CHROMIUM} absent (apt-get install -y chromium, as .ci/run does, or set "
               "CROSSVIEW_CHROMIUM to a chromium binary)")


def _script(html: str, elem_id: str) -> Any:
    m = re.search(rf'<script type="application/json" id="{elem_id}">(.*?)</script>', html, re.S)
    assert m, elem_id
    return json.loads(m.group(1))


def _kernels(path: Path) -> list[tuple[int, int]]:
    """(start_ns, end_ns) of every kernel event, read with plain json."""
    with gzip.open(path, "rt", encoding="utf-8") as f:
        doc = json.load(f)
    out = []
    for e in doc["traceEvents"]:
        if e.get("cat") == "kernel" and e.get("ph") == "X":
            s = round(float(e["ts"]) * 1000)
            out.append((s, s + round(float(e["dur"]) * 1000)))
    return out


@pytest.fixture(scope="module")
def h100_report(tmp_path_factory: pytest.TempPathFactory) -> str:
    if not H100.exists():
        pytest.skip(SKIP)
    out = tmp_path_factory.mktemp("rep") / "report.html"
    r = runner.invoke(app, ["report", str(H100), "-o", str(out)])
    assert r.exit_code == 0, r.output
    return out.read_text(encoding="utf-8")


@needs_data
def test_report_is_self_contained(h100_report: str) -> None:
    html = h100_report
    assert html.startswith("<!DOCTYPE html>")
    # nothing loaded at view time: no external script/style/image, no @import, no url(...)
    assert not re.search(r"<(script|img|iframe)[^>]*\ssrc=", html)
    assert "<link" not in html and "@import" not in html and "url(" not in html
    # the only URL is the SVG namespace string the drawing script passes to createElementNS
    assert set(re.findall(r"https?://[^\s\"'<>)]+", html)) == {"http://www.w3.org/2000/svg"}
    for sid in ("metrics", "gpu", "cpu", "families", "timeline", "recap"):
        assert f'id="{sid}"' in html, sid


@needs_data
def test_report_numbers_match_the_trace(h100_report: str) -> None:
    html = h100_report
    k = _kernels(H100)
    assert len(k) == 1465  # data README
    kernel_ns = sum(e - s for s, e in k)
    # GPU flamegraph: total = kernel time; aggregation into "(other)" loses no time
    gpu = _script(html, "gpu-data")
    assert abs(gpu["total_ns"] - kernel_ns) <= len(k)  # ≤ 1 ns rounding per kernel
    assert sum(r[2] for r in gpu["roots"]) == gpu["total_ns"]
    # timeline: the device lane's busy = the union of kernel intervals, and its slices sum to it
    union, end = 0, None
    for s, e in sorted(k):
        if end is None or s > end:
            union += e - s
            end = e
        elif e > end:
            union += e - end
            end = e
    lanes = _script(html, "timeline-data")["lanes"]
    dev = [ln for ln in lanes if ln["device"]]
    assert len(dev) == 1 and abs(dev[0]["busy"] - union) <= 2 * len(k)
    assert sum(dev[0]["b"]) == dev[0]["busy"] and len(dev[0]["b"]) == 600
    assert 91.0 < 100 * union / (max(e for _, e in k) - min(s for s, _ in k)) < 92.0
    # server-rendered (no JS needed): the metrics card's busy %, the family table, the lanes
    assert '<div class="k">Kernel busy</div><div class="v">91.5%</div>' in html
    assert "1,465" in html and "45.43 ms" in html
    assert re.search(r"elementwise</td><td class=num>733</td><td class=num>16.19 ms", html)


@needs_data
def test_analyze_format_html_is_the_same_page(tmp_path: Path) -> None:
    out = tmp_path / "a.html"
    r = runner.invoke(app, ["analyze", "-f", "html", str(H100), "-o", str(out)])
    assert r.exit_code == 0, r.output
    html = out.read_text(encoding="utf-8")
    assert 'id="gpu-fg"' in html and '<div class="v">91.5%</div>' in html


@needs_data
def test_size_budget_on_every_shared_trace(tmp_path: Path) -> None:
    """Budget: ≤ 2 MB per report. Measured: B200 vLLM prefill 0.55 MB (the largest), H100
    0.31 MB, V100 DDP (19,370 kernels) 0.08 MB."""
    sizes = {}
    for trace in sorted(KINETO.glob("*.json.gz")):
        out = tmp_path / (trace.name + ".html")
        r = runner.invoke(app, ["report", str(trace), "-o", str(out)])
        assert r.exit_code == 0, (trace, r.output)
        sizes[trace.name] = out.stat().st_size
    assert sizes and max(sizes.values()) < SIZE_BUDGET, sizes


def test_tiny_frames_are_aggregated() -> None:
    """SYNTHETIC: 100,000 one-ns leaves under one parent next to a big frame: the leaves
    (each far under 0.1%) become one "(other)" node carrying their time."""
    leaves = [TreeNode(f"k{i}", "kernel", time_ns=1, count=1, family="gemm")
              for i in range(100_000)]
    big = TreeNode("big", "kernel", time_ns=10_000_000, count=1, family="gemm")
    parent = TreeNode("op", "op", time_ns=10_100_000, count=100_001, children=[big, *leaves])
    data = flame_data(CallTree(10_100_000, [parent]), "t")
    assert count_nodes(data) == 3
    other = data["roots"][0][5][1]
    assert other[0] == "(other) 100,000 frames" and other[2] == 100_000


def test_data_script_is_safe_for_hostile_names() -> None:
    s = data_script("x", {"name": "</script><script>alert(1)</script><!--"})
    assert s.count("</script>") == 1 and "<!--" not in s
    body = s[len('<script type="application/json" id="x">'):-len("</script>")]
    assert json.loads(body)["name"].startswith("</script>")


def _trial(throughput: float) -> dict[str, object]:
    return {"date": "20260714-081253", "backend": "vllm", "model_id": "m", "num_prompts": 200,
            "hostname": "node7", "gpu": "NVIDIA H200", "request_rate": "inf",
            "max_concurrency": 64, "completed": 200, "total_input_tokens": 409600,
            "total_output_tokens": 25600, "request_throughput": 4.8,
            "output_throughput": throughput, "median_ttft_ms": 80.0}


@needs_data
def test_ledger_and_ab_panels(tmp_path: Path) -> None:
    """SYNTHETIC synthesis file and A/B trials; the trace is the real MI300X capture."""
    bundle = tmp_path / "bundle"
    (bundle / "findings").mkdir(parents=True)
    shutil.copy(KINETO / "tracelens_mi300x_vllm_decode_full_graph.json.gz", bundle)
    (bundle / "findings" / "synthesis-20260714T0900.json").write_text(json.dumps({
        "ledger": [{"rank": 1, "lever": "--max-num-seqs 256", "type": "config",
                    "expected_effect": "+15 % output tok/s", "evidence_artifacts": ["a.json"],
                    "source_refs": ["vllm docs"], "sol_rigor": "L2", "confidence": "DRAFT"}],
        "contradictions": [], "experiments": ["A/B max-num-seqs 128 vs 256"], "frontier": []}))
    trials = {}
    for arm, vals in (("base", (1000.0, 1004.0, 998.0)), ("var", (1100.0, 1103.0, 1098.0))):
        trials[arm] = []
        for i, v in enumerate(vals):
            p = tmp_path / f"{arm}-{i}.json"
            p.write_text(json.dumps(_trial(v)))
            trials[arm].append(p)
    ab_json = tmp_path / "ab.json"
    r = runner.invoke(app, ["ab", *[a for p in trials["base"] for a in ("--baseline", str(p))],
                            *[a for p in trials["var"] for a in ("--variant", str(p))],
                            "--metric", "output_throughput", "-f", "json", "-o", str(ab_json)])
    assert r.exit_code == 0, r.output
    out = tmp_path / "r.html"
    r = runner.invoke(app, ["report", str(bundle), "--ab", str(ab_json), "-o", str(out)])
    assert r.exit_code == 0, r.output
    html = out.read_text(encoding="utf-8")
    assert 'id="ledger"' in html and "--max-num-seqs 256" in html and "+15 % output tok/s" in html
    assert 'id="ab"' in html and "output_throughput" in html
    assert "+10.00 %" in html  # median 1100 vs 1000 tok/s
    assert "A/B max-num-seqs 128 vs 256" in html


@needs_data
def test_bad_optional_inputs_give_one_line_and_the_rest_is_written(tmp_path: Path) -> None:
    bundle = tmp_path / "bundle"
    (bundle / "findings").mkdir(parents=True)
    shutil.copy(KINETO / "tracelens_mi300x_vllm_decode_full_graph.json.gz", bundle)
    bad = bundle / "findings" / "synthesis-1.json"
    bad.write_text('{"ledger": [')  # truncated
    ab = tmp_path / "ab.json"
    ab.write_text("")
    out = tmp_path / "r.html"
    r = runner.invoke(app, ["report", str(bundle), "--ab", str(ab), "-o", str(out)])
    assert r.exit_code == 2
    lines = [ln for ln in r.output.splitlines() if ln.startswith("crossview: error:")]
    assert len(lines) == 2 and "Traceback" not in r.output
    assert str(bad) in lines[0] and "not valid JSON" in lines[0]
    assert str(ab) in lines[1] and "empty file" in lines[1]
    html = out.read_text(encoding="utf-8")
    assert 'id="gpu-fg"' in html and 'id="ledger"' not in html


def _artifact_dir() -> Path:
    d = Path(os.environ.get("CROSSVIEW_TEST_ARTIFACTS")
             or Path(__file__).resolve().parent / "artifacts")
    d.mkdir(parents=True, exist_ok=True)
    return d


@needs_data
@pytest.mark.skipif(not CHROMIUM.exists(), reason=NO_CHROMIUM)
def test_report_in_headless_chromium(h100_report: str, tmp_path: Path) -> None:
    sync_api = pytest.importorskip("playwright.sync_api",
                                   reason="playwright not installed (pip install '.[test]')")
    page_file = tmp_path / "report.html"
    page_file.write_text(h100_report, encoding="utf-8")
    errors: list[str] = []
    profile = tempfile.mkdtemp(prefix="cv-chromium-")
    try:
        with sync_api.sync_playwright() as p:
            ctx = p.chromium.launch_persistent_context(
                profile, executable_path=str(CHROMIUM), headless=True,
                viewport={"width": 1400, "height": 1000},
                args=["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                      "--no-first-run", "--disable-background-networking",
                      "--disable-component-update", "--disable-sync"])
            page = ctx.new_page()
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.goto(page_file.as_uri())
            drawn = page.locator("#gpu-fg svg g").count()
            assert drawn > 100, drawn
            assert page.locator("#cpu-fg svg g").count() > 100
            assert page.locator("#timeline-draw canvas").count() == 1
            # a kernel that is in the trace (the top GEMM, 241 launches): search highlights it
            page.fill("#gpu .fg-search", "sm90_xmma_gemm_bf16bf16")
            hit = page.locator("#gpu-fg g.match").count()
            assert hit > 0
            assert page.locator("#gpu-fg").get_attribute("data-highlighted") == str(hit)
            assert "match" in page.locator("#gpu .fg-status").inner_text()
            # click-to-zoom on the first frame under "all", then reset
            page.fill("#gpu .fg-search", "")
            page.locator("#gpu-fg svg g").nth(1).click()
            assert page.locator("#gpu .fg-status").inner_text().startswith("zoomed")
            page.locator("#gpu .fg-reset").click()
            assert page.locator("#gpu .fg-status").inner_text() == ""
            shot = _artifact_dir() / "report_h100.png"
            page.screenshot(path=str(shot), full_page=True)
            ctx.close()
    finally:
        shutil.rmtree(profile, ignore_errors=True)
    assert not errors, errors
    assert shot.stat().st_size > 10_000


# Every descendant of a card (.panel) that sticks out of it on the right, unless a scroller
# inside the card holds it (a wide block scrolls: that is allowed, clipping is not).
_OVERFLOW_JS = """() => {
  const out = [];
  for (const card of document.querySelectorAll('main .panel')) {
    const right = card.getBoundingClientRect().right + 1;
    for (const el of card.querySelectorAll('*')) {
      let inScroller = false;
      for (let p = el.parentElement; p && p !== card; p = p.parentElement) {
        const o = getComputedStyle(p).overflowX;
        if (o === 'auto' || o === 'scroll') { inScroller = true; break; }
      }
      if (inScroller) continue;
      const r = el.getBoundingClientRect();
      if (r.width && r.right > right)
        out.push(card.id + ' ' + el.tagName + '.' + el.className + ' '
                 + Math.round(r.right - right));
    }
  }
  return out;
}"""

# Table first columns narrower than this while holding a long name: "one token per line"
_SQUEEZED_JS = """() => [...document.querySelectorAll('main td:first-child')]
  .filter(td => td.innerText.length > 24 && td.getBoundingClientRect().width < 150)
  .map(td => td.innerText.slice(0, 40))"""


def _report_of(paths: list[Path], out: Path) -> Path:
    r = runner.invoke(app, ["report", *map(str, paths), "-o", str(out)])
    assert r.exit_code == 0, r.output
    return out


@needs_data
@pytest.mark.skipif(not CHROMIUM.exists(), reason=NO_CHROMIUM)
def test_layout_findings_first_badges_no_overflow(h100_report: str, tmp_path: Path) -> None:
    """Issue 14: findings right after the metrics and on the first screen (1400×900),
    severity badges with a box and a word, no element wider than its card, table columns
    that keep their width; the summary + ncu report lists its inputs by what they hold."""
    sync_api = pytest.importorskip("playwright.sync_api",
                                   reason="playwright not installed (pip install '.[test]')")
    h100 = tmp_path / "h100.html"
    h100.write_text(h100_report, encoding="utf-8")
    mixed = _report_of([DATA / "nsys" / "llm-perf-opt_rtx5090_deepseek-ocr",
                        DATA / "ncu" / "llm-perf-opt_rtx5090_deepseek-ocr",
                        DATA / "ncu" / "cudacode_rtx2080ti_two_kernels.ncu-rep"],
                       tmp_path / "mixed.html")
    html = mixed.read_text(encoding="utf-8")
    assert "timed events" not in html.split("<main>")[0]  # inputs by what they hold
    assert "113 rows (totals per name, no timeline)" in html  # all-stage kern_sum: 113 rows
    assert "No GPU timeline" not in html and "Summary-only evidence (nsys stats)" in html
    profile = tempfile.mkdtemp(prefix="cv-chromium-")
    try:
        with sync_api.sync_playwright() as p:
            ctx = p.chromium.launch_persistent_context(
                profile, executable_path=str(CHROMIUM), headless=True,
                viewport={"width": 1400, "height": 900},
                args=["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                      "--no-first-run", "--disable-background-networking",
                      "--disable-component-update", "--disable-sync"])
            page = ctx.new_page()
            page.goto(h100.as_uri())
            ids = page.eval_on_selector_all("main > section.panel, main > .panel",
                                            "els => els.map(e => e.id)")
            assert ids[:2] == ["metrics", "findings"], ids
            badges = page.locator("#findings .badge")
            assert badges.count() >= 1
            for i in range(badges.count()):
                box = badges.nth(i).bounding_box()
                assert box and box["width"] > 20 and box["height"] > 8, box
                assert badges.nth(i).inner_text() in ("RED", "YELLOW")
            assert page.locator("#recap .badge.red").count() == 0  # findings: one panel
            top = page.locator("#findings .finding h3").first.bounding_box()
            assert top and top["y"] + top["height"] <= 900, top  # on the first screen
            page.screenshot(path=str(_artifact_dir() / "report_h100_first_screen.png"))
            assert page.evaluate(_OVERFLOW_JS) == []
            assert page.evaluate(_SQUEEZED_JS) == []
            page.goto(mixed.as_uri())
            assert page.evaluate(_OVERFLOW_JS) == []
            assert page.evaluate(_SQUEEZED_JS) == []
            page.screenshot(path=str(_artifact_dir() / "report_summary_ncu.png"),
                            full_page=True)
            ctx.close()
    finally:
        shutil.rmtree(profile, ignore_errors=True)


# Issue 40, the page a newcomer reads, checked in the browser on every shared capture:
# - tofu: each distinct non-ASCII character of the page drawn on a canvas in the page's body
#   and monospace fonts equals the drawing of a code point no font has (U+10FFFD) → a box;
# - a backtick in visible text outside <code>/<pre> is Markdown left unrendered;
# - a table wider than its card's content box (a horizontal scroller hides its last columns);
# - a repeated section: an <h2> twice, or two tables whose first column lists the same rows
#   (the recap repeating the steps / account / roofline tables of the panels).
_NEWCOMER_JS = r"""() => {
  const out = {tofu: [], backticks: [], wide: [], repeated: []};
  const text = document.body.innerText;
  const chars = [...new Set([...text].filter(c => c.codePointAt(0) > 127 && !/\s/.test(c)))];
  const cv = document.createElement('canvas'); cv.width = 40; cv.height = 40;
  const g = cv.getContext('2d', {willReadFrequently: true});
  const draw = (c, font) => { g.clearRect(0, 0, 40, 40); g.font = font; g.fillText(c, 4, 30);
    return g.getImageData(0, 0, 40, 40).data.join(','); };
  const mono = document.querySelector('pre, code') || document.body;
  for (const el of [document.body, mono]) {
    const font = '24px ' + getComputedStyle(el).fontFamily, none = draw('\u{10FFFD}', font);
    for (const c of chars) if (draw(c, font) === none && !out.tofu.includes(c)) out.tofu.push(c);
  }
  const walk = document.createTreeWalker(document.querySelector('main'), NodeFilter.SHOW_TEXT);
  for (let n = walk.nextNode(); n; n = walk.nextNode()) {
    if (n.parentElement.closest('code, pre, script, style')) continue;
    if (n.textContent.includes('`')) out.backticks.push(n.textContent.trim().slice(0, 80));
  }
  const seen = new Set();
  for (const t of document.querySelectorAll('main table')) {
    const card = t.closest('.panel'), cs = getComputedStyle(card);
    const room = card.clientWidth - parseFloat(cs.paddingLeft) - parseFloat(cs.paddingRight);
    const w = t.getBoundingClientRect().width;
    if (w > room + 1) out.wide.push(`${card.id}: ${Math.round(w)} px > ${Math.round(room)} px`);
    const first = [...t.querySelectorAll('tbody tr')].map(r => r.cells[0].innerText.trim());
    const key = first.join('\n');
    if (first.length >= 2 && seen.has(key)) out.repeated.push(`${card.id}: table of ${first[0]}`);
    seen.add(key);
  }
  const heads = [...document.querySelectorAll('main h2')].map(h => h.innerText);
  out.repeated.push(...heads.filter((h, i) => heads.indexOf(h) !== i));
  return out;
}"""


def _shared_captures() -> list[Path]:
    """Every capture of ../shared/data a report can read here (an .nsys-rep needs `nsys`)."""
    files = [p for p in DATA.rglob("*") if p.is_file() and p.suffix not in {".md", ".yaml"}
             and p.suffix != ".nsys-rep" and not p.name.endswith("_cmd.txt")]
    return sorted({p.parent if p.suffix == ".csv" or p.parent.name.startswith("megatron")
                   else p for p in files})


@needs_data
@pytest.mark.skipif(not CHROMIUM.exists(), reason=NO_CHROMIUM)
def test_every_shared_report_reads_in_the_browser(tmp_path: Path) -> None:
    """Issue 40: on every shared capture's report (1400 px wide): no tofu glyph, no literal
    backtick, no table wider than its card, no section shown twice."""
    sync_api = pytest.importorskip("playwright.sync_api",
                                   reason="playwright not installed (pip install '.[test]')")
    pages = [_report_of([c], tmp_path / f"{i}.html") for i, c in enumerate(_shared_captures())]
    assert len(pages) >= 15
    bad: dict[str, dict[str, list[str]]] = {}
    profile = tempfile.mkdtemp(prefix="cv-chromium-")
    try:
        with sync_api.sync_playwright() as p:
            ctx = p.chromium.launch_persistent_context(
                profile, executable_path=str(CHROMIUM), headless=True,
                viewport={"width": 1400, "height": 900},
                args=["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                      "--no-first-run", "--disable-background-networking",
                      "--disable-component-update", "--disable-sync"])
            page = ctx.new_page()
            for capture, f in zip(_shared_captures(), pages, strict=True):
                page.goto(f.as_uri())
                found = {k: v for k, v in page.evaluate(_NEWCOMER_JS).items() if v}
                if found:
                    bad[str(capture.relative_to(DATA))] = found
            ctx.close()
    finally:
        shutil.rmtree(profile, ignore_errors=True)
    assert not bad, bad

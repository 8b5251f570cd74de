"""Issue 40, what a newcomer meets, on the real captures of ../shared/data:

- the verdict on the first screen: the default recap of every shared capture fits 60 lines,
  workers0's first 🔴 is within its first 25 lines, the tables wait for `--detail full`;
- filters refuse what is not there: a window outside the capture, an annotation no range
  carries (each one error line naming what exists and the option that reaches it); the
  2021-format trace's `ProfilerStep#N` (operator events) reached by `--annotation` as `--step`;
- unrelated captures never merged: in a folder of two shared traces of different GPUs the
  larger run is analyzed and the other is a rejected input naming `--each` (exit 2), and
  `--each` gives one recap each; the 8 Megatron ranks stay one job;
- a trace beside a counter file of another GPU: the counters are said, not cross-checked;
- the small ones: help at 80 columns, "no such folder", the version.

Expected numbers are read from the trace JSON here with gzip + json (the data README gives the
same: workers0 holds ProfilerStep#16–#21), independent of crossview's readers.
"""

from __future__ import annotations

import gzip
import json
import re
import shutil
from functools import cache
from pathlib import Path

import pytest
from typer.testing import CliRunner

from conftest import SHARED_DATA, SHARED_DATA_ABSENT, run_cli
from crossview.cli import app

KINETO = SHARED_DATA / "kineto"
W0 = KINETO / "kineto_v100_resnet50_workers0.pt.trace.json.gz"
H100 = KINETO / "tracelens_h100_hf_qwen1.5_0.5b_forward.json.gz"
MEGATRON = KINETO / "megatron_tp8_a100"
T4 = SHARED_DATA / "metrics" / "dcgm-exporter_t4.prom"
pytestmark = pytest.mark.skipif(not W0.is_file(), reason=SHARED_DATA_ABSENT)
runner = CliRunner()
MAX_LINES = 60  # the first screen (knowledge/trees.yaml summary_max_lines)


def analyze(*args: str | Path) -> tuple[int, str, str]:
    r = runner.invoke(app, ["analyze", *map(str, args)])
    return r.exit_code, r.stdout, r.stderr


@cache
def _span_ns(trace: Path) -> tuple[int, int]:
    """First start and last end (ns) of the trace's timed events, the profiler's own
    `Trace` span aside."""
    with gzip.open(trace, "rt") as f:
        ev = [e for e in json.load(f)["traceEvents"]
              if e.get("ph") == "X" and e.get("cat") != "Trace"]
    return (round(min(float(e["ts"]) for e in ev) * 1000),
            round(max(float(e["ts"]) + float(e["dur"]) for e in ev) * 1000))


def _shared_captures() -> list[Path]:
    files = [p for p in SHARED_DATA.rglob("*") if p.is_file() and p.suffix not in {".md",
             ".yaml"} and p.suffix != ".nsys-rep" and not p.name.endswith("_cmd.txt")]
    return sorted({p.parent if p.suffix == ".csv" or p.parent.name.startswith("megatron")
                   else p for p in files}) if SHARED_DATA.exists() else []


# ----------------------------------------------------------------------- the first screen


@pytest.mark.parametrize("capture", _shared_captures(),
                         ids=lambda p: str(p.relative_to(SHARED_DATA)))
def test_default_recap_of_every_shared_capture_fits_the_screen(capture: Path) -> None:
    rc, out, err = analyze(capture)
    assert rc == 0, err
    lines = out.splitlines()
    assert len(lines) <= MAX_LINES, (len(lines), capture)
    assert any(ln.startswith("**Key findings**") for ln in lines)
    # the verdict leads: key findings and the issues come before any view or table
    key = next(i for i, ln in enumerate(lines) if ln.startswith("**Key findings**"))
    views = [i for i, ln in enumerate(lines) if ln.startswith(("**Observed call tree",
                                                               "**CPU cross-check**"))]
    assert views and key < min(views)
    assert "--detail full" in lines[-1]


def test_workers0_verdict_within_25_lines_tables_behind_detail() -> None:
    rc, out, _ = analyze(W0)
    assert rc == 0
    lines = out.splitlines()
    red = next(i for i, ln in enumerate(lines) if ln.startswith("## 🔴"))
    assert red < 25 and lines[red + 1].startswith("### 1. DataLoader-starved")
    fix = next(i for i, ln in enumerate(lines) if ln.startswith("**Fix:**"))
    effect = next(i for i, ln in enumerate(lines) if ln.startswith("**Expected effect:**"))
    assert red < fix < effect < 25
    for table in ("**Steps**", "**Time account", "**Top kernels**", "**Per-op roofline",
                  "**GPU metrics**"):
        assert table not in out, table
    rc, full, _ = analyze(W0, "--detail", "full")
    assert rc == 0 and full.startswith(out[: out.index("**Observed call tree")])
    order = [full.index(s) for s in ("**CPU cross-check**", "**GPU metrics**", "**Steps**",
                                     "**Time account", "**Top kernels**", "**Per-op roofline")]
    assert order == sorted(order)  # metrics first, then the GPU view's tables
    assert full.count("| `ProfilerStep#16` |") == 1


# ----------------------------------------------------------------------- filters refuse


def test_window_outside_the_capture_is_refused_naming_its_span() -> None:
    lo, hi = _span_ns(W0)
    rc, out, err = analyze(W0, "--window", "1:1000")
    assert rc == 2 and out == ""
    (line,) = err.splitlines()
    assert line.startswith("crossview: error: --window 1:1000: no event of the capture")
    a, b = (int(x) for x in re.search(r"span (\d+)–(\d+) ns", line).groups())  # type: ignore[union-attr]
    assert abs(a - lo) <= 1000 and abs(b - hi) <= 1000  # µs timestamps: ≤ 1 µs apart
    assert f"--window {a}:{b}" in line and "--step" in line
    # after the capture, same refusal; a window inside it still answers
    assert analyze(W0, "--window", f"{hi + 10**9}:{hi + 2 * 10**9}")[0] == 2
    rc, out, _ = analyze(W0, "--window", f"{lo}:{lo + 200_000_000}")
    assert rc == 0 and "**Key findings**" in out


def test_window_with_host_work_only_is_a_gpu_idle_selection() -> None:
    """Inside step 20's DataLoader gap (its 37.02 ms idle gap from 11.59 ms into the step,
    `--detail full`'s longest gaps): host events, no GPU op — never a CPU-only capture."""
    _, out, _ = analyze(W0, "--step", "20", "--format", "json")
    note = json.loads(out)["filter"]["notes"][0]
    start = int(re.search(r"window (\d+)–", note).group(1))  # type: ignore[union-attr]
    rc, out, _ = analyze(W0, "--window", f"{start + 13_000_000}:{start + 40_000_000}")
    assert rc == 0
    assert "CPU-only" not in out and "No GPU op in this selection" in out
    assert "kernel time itself" not in out


def test_unknown_annotation_names_what_exists_and_the_option() -> None:
    rc, out, err = analyze(W0, "--annotation", "ProfilerStep#99")
    assert rc == 2 and out == ""
    (line,) = err.splitlines()
    assert line.startswith("crossview: error: --annotation 'ProfilerStep#99': no such range")
    # the 2021 trace has no user annotation; its steps #16–#21 and the options that reach them
    assert "no user annotation or NVTX range" in line
    assert "ProfilerStep#16–ProfilerStep#21" in line and "`--step 16:21`" in line
    rc, _, err = analyze(H100, "--annotation", "nope")
    (line,) = err.splitlines()
    assert rc == 2 and "annotation ranges: ProfilerStep#6" in line


def test_old_format_step_annotation_selects_the_step() -> None:
    """`ProfilerStep#17` is an operator event in the 2021 format: `--annotation` selects it
    as `--step 17` does — the same window, the same numbers."""
    with gzip.open(W0, "rt") as f:
        step = next(e for e in json.load(f)["traceEvents"] if e.get("name") == "ProfilerStep#17")
    assert step["cat"] == "Operator"  # not a user_annotation
    rc, by_ann, err = analyze(W0, "--annotation", "ProfilerStep#17", "--format", "json")
    assert rc == 0, err
    rc, by_step, _ = analyze(W0, "--step", "17", "--format", "json")
    a, s = json.loads(by_ann), json.loads(by_step)
    assert a["filter"]["window_ns"] == s["filter"]["window_ns"]
    assert a["metrics"]["kernel_count"] == s["metrics"]["kernel_count"] > 0
    assert a["metrics"]["kernel_busy_pct"] == s["metrics"]["kernel_busy_pct"]
    assert any("selected as `--step 17`" in n for n in a["filter"]["notes"])
    w0 = round(float(step["ts"]) * 1000)
    assert a["filter"]["window_ns"][0] >= w0 - 1000


# ----------------------------------------------------------------------- one run per recap


def test_folder_of_two_unrelated_shared_traces_one_set_apart_then_each(tmp_path: Path) -> None:
    folder = tmp_path / "two"
    folder.mkdir()
    for t in (W0, H100):
        shutil.copyfile(t, folder / t.name)
    rc, out, err = analyze(folder, "--format", "json")
    assert rc == 2  # an input left out: exit 2, as for a rejected file
    (line,) = err.splitlines()
    assert line.startswith(f"crossview: error: {folder / H100.name}: not one run with "
                           f"{W0.name} (Tesla V100-DGXS-32GB)")  # the larger run is analyzed
    assert "(different GPUs)" in line and "--each" in line
    doc = json.loads(out)
    assert doc["filter"]["artifacts"] == [str(folder / W0.name)]  # never merged
    assert doc["metrics"]["kernel_count"] == 8772  # data README: workers0 alone
    assert {a["status"] for a in doc["artifacts"]} == {"ok", "other-run"}
    rc, out, err = analyze(folder, "--each")
    assert rc == 0, err
    heads = [ln for ln in out.splitlines() if ln.startswith("# ")]
    assert len(heads) == 2 and W0.name in heads[0] and H100.name in heads[1]
    rc, out, _ = analyze(folder, "--each", "--format", "json")
    docs = json.loads(out)
    assert [len(d["filter"]["artifacts"]) for d in docs] == [1, 1]
    assert docs[0]["metrics"]["kernel_count"] == 8772  # data README: workers0
    assert docs[1]["metrics"]["kernel_count"] == 1465  # data README: the H100 forward


def test_mcp_sets_runs_apart_once_per_read() -> None:
    """The MCP server's cache reads once and answers every filter from that store: the runs
    are set apart when it reads, so the answer never depends on which call came first."""
    from crossview.mcp.cache import AnalysisCache, FilterArg
    from crossview.mcp.safety import Refused, Roots

    cache = AnalysisCache(Roots([KINETO.resolve()]))
    paths = [str(W0), str(H100)]
    one = cache.get(paths, FilterArg(artifact=W0.name))
    every = cache.get(paths, None)
    for e in (one, every):
        assert e.analysis.views is not None
        assert e.analysis.views.metrics.kernel_count == 8772  # data README: workers0 alone
        (apart,) = e.scope()["rejected"]
        assert apart["path"] == str(H100) and "--each" in apart["problems"][0]
    with pytest.raises(Refused, match="no such artifact"):  # one at a time: pass it alone
        cache.get(paths, FilterArg(artifact=H100.name))
    assert cache.get([str(H100)], None).analysis.views.metrics.kernel_count == 1465
    assert cache.reads == 2


def test_megatron_ranks_stay_one_job() -> None:
    rc, out, err = analyze(MEGATRON, "--format", "json")
    assert rc == 0, err
    doc = json.loads(out)
    assert len(doc["filter"]["artifacts"]) == 8
    assert doc["rank_analysis"]["ranks_present"] == list(range(8))


def test_counters_of_another_gpu_are_not_cross_checked() -> None:
    """A V100 trace beside a dcgm-exporter scrape of Tesla T4s: the T4 counters are shown as
    what they are, never compared with the V100's busy %."""
    rc, out, err = analyze(W0, T4, "--detail", "full")
    assert rc == 0, err
    assert "Cross-check with the trace" not in out
    said = [ln for ln in out.splitlines() if ln.startswith("- Not cross-checked")]
    assert said and all("another GPU model (Tesla T4) than the trace's (Tesla "
                        "V100-DGXS-32GB)" in ln for ln in said)
    rc, out, _ = analyze(W0, T4, "--format", "json")
    devs = json.loads(out)["gpu_metrics"]["devices"]
    assert devs and all("Tesla T4" in d["apart"] for d in devs)


# ----------------------------------------------------------------------- the small ones


def test_help_reads_at_80_columns() -> None:
    r = run_cli("ab", "--help", env={"COLUMNS": "80"})
    assert r.returncode == 0
    assert all(len(ln) <= 80 for ln in r.stdout.splitlines()), r.stdout
    for opt in ("--higher-is-better", "--lower-is-better", "--exclude-cold"):
        assert opt in r.stdout  # whole, never cut with "…"


def test_missing_bundle_folder_says_no_such_folder(tmp_path: Path) -> None:
    r = run_cli("synthesize", tmp_path / "nope")
    assert r.returncode == 2
    assert r.stderr.strip() == (f"crossview: error: {tmp_path / 'nope'}: no such folder (a "
                                "bundle is a folder of artifacts)")


def test_version_from_the_package() -> None:
    import tomllib

    import crossview

    want = tomllib.loads((Path(__file__).parents[1] / "pyproject.toml").read_text())
    assert crossview.__version__ == want["project"]["version"]
    assert run_cli("--version").stdout.strip() == f"crossview {crossview.__version__}"
    pytest.importorskip("mcp", reason="the mcp extra is not installed (pip install '.[mcp]')")
    from crossview.mcp.server import build

    assert build([SHARED_DATA]).version == crossview.__version__  # initialize's serverInfo

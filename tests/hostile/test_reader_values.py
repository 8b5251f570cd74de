"""Values a reader would read silently wrong are said (issue 43, item 3): booleans or text
where Kineto times belong, per-thread clocks that disagree with the kernels they launch,
kernels overlapping on one stream, nsys names whose string ids do not resolve, an ncu CSV
cut mid-row, a Prometheus histogram bound that is not a number. Each bad file beside the
good MI300X trace: one warning line on stderr naming it (or, for the bucket bound, the bad
samples skipped), the same words in the recap, the good trace still analyzed (425 kernels,
counted by hand in test_mcp.py).

Synthetic inputs (tests/hostile/corpus_readers.py) except where a real capture is the base
(the clock shift: HTA's A100 DDP trace; StringIds: the nvfuser H200 export; the ncu CSV and
the Prometheus scrape: llm-perf-opt's RTX 5090 details page and vLLM's idle /metrics).
"""

from __future__ import annotations

import gzip
import json
import sqlite3
import subprocess
from pathlib import Path

import pytest

from conftest import run_cli
from hostile.corpus import GOOD_KINETO, by_name
from hostile.corpus_readers import NCCL_KINETO, NCU_CSV

pytestmark = pytest.mark.skipif(not GOOD_KINETO.is_file(), reason="../shared/data absent")


def _beside_good(case: str, tmp: Path) -> tuple[Path, subprocess.CompletedProcess[str]]:
    try:
        bad = by_name(case).make(tmp)
    except FileNotFoundError:
        pytest.skip("its real base capture is absent")
    good = tmp / GOOD_KINETO.name
    good.write_bytes(GOOD_KINETO.read_bytes())
    return bad, run_cli("--quiet", "analyze", str(bad), str(good), timeout=120)


def _one_warning(bad: Path, proc: subprocess.CompletedProcess[str]) -> str:
    """The one stderr line naming the bad file, the good trace analyzed; the words of the
    reader's warning, which the recap repeats. A bad trace whose clock is not the good one's
    is another run (issue 40): set apart in one error line (exit 2) that carries the reader's
    doubt too; alone, it is read with the warning."""
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, lines
    assert f"Capture `{GOOD_KINETO.name}`" in proc.stdout  # the good trace analyzed too
    if lines[0].startswith(f"crossview: error: {bad}: not one run with"):
        assert proc.returncode == 2 and "--each" in lines[0], proc.stderr
        proc = run_cli("--quiet", "analyze", str(bad), timeout=120)
        lines = proc.stderr.splitlines()
    assert proc.returncode == 0, proc.stderr
    assert len(lines) == 1 and lines[0].startswith(f"crossview: warning: {bad}: "), lines
    said = lines[0][len(f"crossview: warning: {bad}: "):]
    assert f"⚠️ Read with a warning `{bad}`" in proc.stdout
    assert said.removeprefix("partial: ") in proc.stdout  # the same words in the recap
    return said


def test_boolean_ts_skipped_and_counted(tmp_path: Path) -> None:
    """3 events have `ts: true` (DuckDB would read 1.0 µs): skipped, counted, said."""
    bad, proc = _beside_good("k_ts_bool", tmp_path)
    n = sum(e["ts"] is True for e in json.loads(bad.read_text())["traceEvents"])
    assert n == 3
    said = _one_warning(bad, proc)
    assert said.startswith("partial: ") and \
        f"{n} event(s) whose `ts` or `dur` is a boolean or a text, not a number" in said


def test_text_dur_skipped(tmp_path: Path) -> None:
    bad, proc = _beside_good("k_dur_text", tmp_path)
    assert "1 event(s) whose `ts` or `dur` is a boolean or a text" in _one_warning(bad, proc)


def test_boolean_ts_alone_not_a_276_us_span(tmp_path: Path) -> None:
    """Without the check the boolean events land at t = 1 µs; with it the span is the
    numeric events' own: kernels at 1,000 and 2,000 µs, 5 µs each → 1,005 µs."""
    from crossview.analysis import analyze

    bad = by_name("k_ts_bool").make(tmp_path)
    v = analyze([bad]).views
    assert v is not None and v.metrics.kernel_count == 2
    assert v.metrics.kernel_span_ns == 1_005_000


def _links(doc: dict) -> tuple[int, int]:
    """(GPU ops launched by a runtime call, those whose clock the corpus shifted): the
    runtime events of thread 2919752 moved −1 h, stream 40's kernels +1 h (so a launch from
    the shifted thread, or onto stream 40, is an hour or more off)."""
    launcher = {e["args"]["correlation"]: e["tid"] for e in doc["traceEvents"]
                if e.get("cat") == "cuda_runtime" and "correlation" in e.get("args", {})}
    total = bad = 0
    for e in doc["traceEvents"]:
        if e.get("cat") not in ("kernel", "gpu_memcpy", "gpu_memset"):
            continue
        tid = launcher.get(e.get("args", {}).get("correlation"))
        if tid is None:
            continue
        total += 1
        bad += tid == 2919752 or e["args"].get("stream") == 40
    return total, bad


def test_thread_clocks_that_disagree_are_warned(tmp_path: Path) -> None:
    if not NCCL_KINETO.is_file():
        pytest.skip("HTA A100 DDP trace absent")
    bad, proc = _beside_good("k_clock_shift", tmp_path)
    total, shifted = _links(json.loads(gzip.decompress(NCCL_KINETO.read_bytes())))
    said = _one_warning(bad, proc)
    assert said.startswith(f"clocks disagree: {shifted:,} of {total:,} GPU op(s) start before "
                           "the call that launched them or more than 60 s after it"), said
    assert "thread 2910249/2919752" in said and "stream 0/40: 21 of 21" in said


def test_kernels_overlapping_on_one_stream_are_warned(tmp_path: Path) -> None:
    """Kernels at 1,000 / 1,020 / 1,040 µs, 100 µs each, on stream 7: the 2nd and 3rd each
    overlap the one before by 80 µs (80% of their duration)."""
    bad, proc = _beside_good("k_stream_overlap", tmp_path)
    said = _one_warning(bad, proc)
    assert said.startswith("2 GPU op(s) overlap the one before them on the same stream by "
                           "more than 50% of their duration (device/stream 0/7)"), said


def test_real_captures_raise_no_doubt() -> None:
    """The shared traces hold no shifted clock and no damaged stream: B200's programmatic
    dependent launch overlaps kernels by ≤ 16% (3.7 µs of 59 µs), under the 50% bound."""
    from crossview.analysis import analyze

    data = GOOD_KINETO.parents[1]
    for f in [*sorted((data / "kineto").glob("*.json.gz")),
              *sorted((data / "nsys").glob("*.sqlite"))]:
        a = analyze([f])
        assert [(r.status, r.problems) for r in a.artifacts] == [("ok", [])], f


def test_empty_string_ids_are_warned(tmp_path: Path) -> None:
    bad, proc = _beside_good("nsys_strings_empty", tmp_path)
    con = sqlite3.connect(f"file:{bad}?mode=ro", uri=True)
    (kernels,) = con.execute("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL").fetchone()
    con.close()
    said = _one_warning(bad, proc)
    assert said.startswith(f"{kernels:,} of ") and "name a string id missing from StringIds" \
        in said, said


def test_ncu_csv_cut_mid_row_is_warned(tmp_path: Path) -> None:
    bad, proc = _beside_good("ncu_csv_cut", tmp_path)
    assert not NCU_CSV.read_bytes().endswith(bad.read_bytes()[-10:])  # cut inside a row
    said = _one_warning(bad, proc)
    assert said == ("partial: the file ends inside a row (no final newline): that row was "
                    "dropped; the export is truncated")


def test_prometheus_le_not_a_number_beside_a_good_trace(tmp_path: Path) -> None:
    """One bucket's `le` became "abc": that sample is skipped (one line for the file), the
    serving view and the trace beside it are analyzed (was: ValueError, every command
    aborted)."""
    bad, proc = _beside_good("prom_le_text", tmp_path)
    said = _one_warning(bad, proc)
    assert said == ("partial: 1 histogram bucket sample(s) whose `le` bound is missing or not "
                    "a number were skipped")
    json_proc = run_cli("--quiet", "analyze", "--format", "json", str(bad),
                        str(tmp_path / GOOD_KINETO.name), timeout=120)
    assert json_proc.returncode == 0 and '"kernel_count": 425' in json_proc.stdout


def test_inventory_json_carries_a_readers_doubt(tmp_path: Path) -> None:
    """Over MCP there is no stderr: the inventory's entry of a file read whole with a doubt
    says it under `warnings` (the overlapping-kernels trace beside the good one)."""
    try:
        bad = by_name("k_stream_overlap").make(tmp_path)
    except FileNotFoundError:
        pytest.skip("its real base capture is absent")
    (tmp_path / GOOD_KINETO.name).write_bytes(GOOD_KINETO.read_bytes())
    proc = run_cli("--quiet", "inventory", str(tmp_path), "--format", "json", timeout=120)
    assert proc.returncode == 0, proc.stderr
    arts = {a["path"]: a for a in json.loads(proc.stdout)["artifacts"]}
    (said,) = arts[bad.name]["warnings"]
    assert "overlap the one before them on the same stream" in said
    assert "warnings" not in arts[GOOD_KINETO.name]

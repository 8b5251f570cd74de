"""The Parquet perf-lake (`crossview ingest`, `--lake`) and its fan-out (process pool, Dask).

Real inputs: three Kineto captures from ../shared/data. The reference is crossview's own
in-process analysis of the same files (its numbers are pinned against the data README and HTA
in test_real_traces.py); the kernel counts per capture below are the README's (A100 DDP:
2,700 kernels; H100 HF Qwen forward: 1,465). The corrupt file is a truncated copy of a real
capture, built in tmp_path.
"""

from __future__ import annotations

import gzip
import json
import os
import re
import subprocess
from pathlib import Path

import duckdb
import pytest

from conftest import SHARED_DATA, run_cli
from crossview.analysis import analyze_store
from crossview.errors import UsageError
from crossview.lake import manifest
from crossview.lake.fanout import Engine
from crossview.lake.ingest import ingest
from crossview.lake.query import open_lake
from crossview.lake.query import reports as lake_reports
from crossview.lake.task import ID_COLUMNS, NOT_IDS
from crossview.scope.filter import Filter
from crossview.store.schema import TABLES

KINETO = SHARED_DATA / "kineto"
A100 = KINETO / "hta_a100_ddp_resnet_nccl.json.gz"
H100 = KINETO / "tracelens_h100_hf_qwen1.5_0.5b_forward.json.gz"
MI300X = KINETO / "tracelens_mi300x_vllm_decode_full_graph.json.gz"
TRACES = [A100, H100, MI300X]
README_KERNELS = {A100.name: 2700, H100.name: 1465}


def real() -> list[Path]:
    if not all(p.is_file() for p in TRACES):
        pytest.skip("../shared/data not present: real-capture lake tests need it")
    return TRACES


def cli(*args: str | Path) -> subprocess.CompletedProcess[str]:
    proc = run_cli(*args, timeout=600)
    assert "Traceback" not in proc.stderr + proc.stdout, proc.stderr[-3000:]
    return proc


def analyze_json(*args: str | Path) -> dict:
    proc = cli("analyze", *args, "--format", "json")
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout)


def parquet_files(lake: Path) -> list[Path]:
    return sorted(p for p in lake.rglob("*.parquet"))


def test_every_id_column_is_classified() -> None:
    """A new id-like column in TABLES must be offset per artifact (ID_COLUMNS) or declared
    per-artifact (NOT_IDS): otherwise ids would collide across artifacts in a lake."""
    for table, spec in TABLES.items():
        for col in spec.replace("\n", " ").split(","):
            if not col.strip():
                continue
            name, typ = col.split()[:2]
            # integer ids only: string ids (ncu_id, launch_key) are labels, kept as read
            idlike = typ in ("BIGINT", "INTEGER") and name != "artifact_id" and (
                name.endswith(("id", "node")) or name in ("parent", "parent_node"))
            if idlike:
                assert name in ID_COLUMNS.get(table, ()) or name in NOT_IDS, (table, name)


def test_dask_lake_equals_in_process(tmp_path: Path) -> None:
    pytest.importorskip("distributed", reason="Dask is in the test extra: pip install -e .[test]")
    traces = real()
    lake = tmp_path / "lake"
    s = ingest(traces, lake, "c1", "r1", Engine(2, dask="local"))
    assert [e.path for e in s.added] == list(map(str, traces)) and not s.rejected
    assert len({r.pid for r in s.results}) >= 1
    # issue 40: three unrelated captures are never one recap; per capture (--artifact) the
    # lake's analysis equals the in-process one
    for t in traces:
        ref = analyze_json(*traces, "--artifact", t.name)
        got = analyze_json("--lake", lake, "--campaign", "c1", "--run", "r1", "--artifact",
                           t.name)
        m, r = got["metrics"], ref["metrics"]
        for k in ("kernel_count", "kernel_time_ns", "kernel_busy_ns", "kernel_busy_pct",
                  "kernel_span_ns"):
            assert m[k] == r[k], k
        assert got["kernel_families"] == ref["kernel_families"]
        assert got == ref  # the whole document: the lake changes nothing but where rows live
    # all three at once: refused in one line naming each run (a lake cannot set one apart)
    proc = cli("analyze", "--lake", lake, "--campaign", "c1", "--run", "r1")
    assert proc.returncode == 2 and "3 captures that are not one run" in proc.stderr
    # the refusal changes nothing (the lake's artifacts rows are a loaded table, the rest
    # views: none is dropped): the same store then answers for one capture
    store = open_lake(lake, "c1", "r1")
    reps = lake_reports(store)
    with pytest.raises(UsageError, match="3 captures that are not one run"):
        analyze_store(store, reps)
    one = analyze_store(store, reps, Filter(artifact=H100.name))
    assert one.views is not None
    assert one.views.metrics.kernel_count == README_KERNELS[H100.name]
    assert [r.status for r in reps] == ["ok"] * 3
    # partitions as the issue asks, and the README's kernel counts per capture
    con = duckdb.connect()
    rows = con.execute(
        f"SELECT a.path, count(*), any_value(g.campaign), any_value(g.run), any_value(g.source)"
        f" FROM read_parquet('{lake}/gpu_ops/*/*/*/*.parquet', hive_partitioning=true) g"
        f" JOIN read_parquet('{lake}/artifacts/*/*/*/*.parquet') a USING (artifact_id)"
        f" WHERE g.kind = 'kernel' GROUP BY a.path").fetchall()
    by_name = {Path(p).name: (n, c, ru, so) for p, n, c, ru, so in rows}
    for name, n in README_KERNELS.items():
        assert by_name[name] == (n, "c1", "r1", "kineto")
    # ids never collide across artifacts
    for table, col in (("gpu_ops", "gpu_op_id"), ("host_ops", "op_id"),
                       ("frames", "node_id")):
        n, distinct = con.execute(f"SELECT count(*), count(DISTINCT {col}) FROM "
                                  f"read_parquet('{lake}/{table}/*/*/*/*.parquet')").fetchall()[0]
        assert n == distinct > 0, table


def test_idempotent_and_corrupt_member_with_process_pool(tmp_path: Path) -> None:
    traces = real()
    bad = tmp_path / "rank3.json"
    text = gzip.decompress(A100.read_bytes())
    bad.write_bytes(text[: len(text) // 2])  # truncated mid-array
    lake = tmp_path / "lake"
    proc = cli("ingest", *traces[:2], bad, "--lake", lake, "--workers", "2", "--run", "r1")
    errors = [ln for ln in proc.stderr.splitlines() if ln.startswith("crossview: error:")]
    assert proc.returncode == 2
    assert len(errors) == 1 and str(bad) in errors[0], proc.stderr
    assert "2 added, 0 skipped" in proc.stdout
    entries = manifest.read(lake)
    assert sorted(Path(e.path).name for e in entries) == sorted(p.name for p in traces[:2])
    assert {e.artifact_id for e in entries} == {1, 2}
    files = parquet_files(lake)
    # second ingest of the same files (one under another name): nothing added
    copy = tmp_path / "same_content.json.gz"
    copy.write_bytes(traces[0].read_bytes())
    again = cli("ingest", *traces[:2], copy, "--lake", lake, "--workers", "2", "-f", "json")
    assert again.returncode == 0, again.stderr
    out = json.loads(again.stdout)
    assert out["added"] == [] and len(out["skipped"]) == 3
    assert all(re.match(r"already in the lake as artifact [12] ", k["reason"])
               for k in out["skipped"])
    assert parquet_files(lake) == files and len(manifest.read(lake)) == 2
    # the lake analysis of each good capture equals the in-process one (issue 40: the two
    # are different runs, never one recap)
    for t in traces[:2]:
        assert (analyze_json("--lake", lake, "--artifact", t.name)
                == analyze_json(*traces[:2], "--artifact", t.name))


def test_selection_and_bad_lake(tmp_path: Path) -> None:
    traces = real()
    lake = tmp_path / "lake"
    ingest([traces[0]], lake, run="a", engine=Engine(0))
    ingest([traces[1]], lake, run="b", engine=Engine(0))
    a = analyze_json("--lake", lake, "--run", "a")
    assert a["metrics"]["kernel_count"] == README_KERNELS[A100.name]
    proc = cli("analyze", "--lake", lake, "--run", "zz")
    assert proc.returncode == 2
    assert proc.stderr.strip() == (f"crossview: error: {lake}: no artifacts for run=zz "
                                   "(the lake holds: campaign=default run=a, "
                                   "campaign=default run=b)")
    proc = cli("analyze", "--lake", tmp_path / "nolake")
    assert proc.returncode == 2 and "not a crossview lake" in proc.stderr
    proc = cli("diff", "a", "b", "--lake", lake, "--format", "json")
    assert proc.returncode == 0, proc.stderr
    d = json.loads(proc.stdout)
    assert json.dumps(d).count(str(A100)) >= 1
    with pytest.raises(UsageError):
        ingest([traces[0]], lake, campaign="../x", engine=Engine(0))
    for bad in (["--memory-limit", "lots"], ["--workers", "-1"], ["--campaign", "a/b"]):
        proc = cli("ingest", traces[0], "--lake", lake, *bad)
        assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
        assert proc.stderr.startswith("crossview: error: ")
    missing = tmp_path / "gone.json"
    proc = cli("ingest", missing, "--lake", lake)
    assert proc.returncode == 2
    assert proc.stderr.strip() == (f"crossview: error: {missing}: cannot read: "
                                   "No such file or directory")


def test_export_and_report_over_lake(tmp_path: Path) -> None:
    """export/report read a lake like files: the folded export is byte-identical."""
    trace = real()[2]
    lake = tmp_path / "lake"
    ingest([trace], lake, engine=Engine(0))
    a, b = tmp_path / "file.folded", tmp_path / "lake.folded"
    assert cli("export", trace, "--to", "folded", "-o", a).returncode == 0
    assert cli("export", "--lake", lake, "--to", "folded", "-o", b).returncode == 0
    assert a.read_bytes() == b.read_bytes() and a.stat().st_size > 0
    html = tmp_path / "r.html"
    proc = cli("report", "--lake", lake, "-o", html)
    assert proc.returncode == 0, proc.stderr
    assert html.read_text().startswith("<!DOCTYPE html>") or "<html" in html.read_text()[:500]
    proc = cli("analyze", trace, "--lake", lake)
    assert proc.returncode == 2 and "not both" in proc.stderr


def test_schema_growth_reads_as_null(tmp_path: Path) -> None:
    """A lake written before a column existed still opens: the column reads as NULL.
    (Synthetic: the column is dropped from a real lake's file to stand for an older one.)"""
    traces = real()
    lake = tmp_path / "lake"
    ingest([traces[2]], lake, engine=Engine(0))
    f = next((lake / "gpu_ops").rglob("*.parquet"))
    con = duckdb.connect()
    con.execute(f"COPY (SELECT * EXCLUDE (collective) FROM read_parquet('{f}')) "
                f"TO '{f}.tmp' (FORMAT parquet)")
    os.replace(f"{f}.tmp", f)
    from crossview.lake.query import open_lake

    store = open_lake(lake)
    n, nulls = store.sql("SELECT count(*), count(*) FILTER (collective IS NULL) FROM gpu_ops"
                         ).fetchall()[0]
    assert n == nulls > 0


def test_duckdb_progress_bar_off_on_every_connection() -> None:
    """DuckDB prints a progress bar to stdout on queries over 2 s even into a pipe; a big
    ingest or `analyze -f json > out` would be corrupted (seen in bench_lake.py's first run)."""
    from crossview.store.store import Store

    store = Store()
    for con in (store.con, store.con.cursor()):  # the Kineto reader's second connection
        assert con.execute("SELECT current_setting('enable_progress_bar')").fetchall() == [
            (False,)]


def _square_or_die(x: int) -> int:
    if x < 0:
        os._exit(9)  # stands for a worker killed for memory
    return x * x


def test_dead_worker_is_one_failed_task_not_a_crash() -> None:
    """Synthetic tasks: a worker process that dies becomes that task's error result; the
    tasks done before it keep their results (ingest commits them; a re-run does the rest)."""
    from crossview.lake.fanout import fan_out

    out = fan_out(_square_or_die, [3, 4, -1], Engine(1), lambda t, why: f"{t}: {why}")
    assert out[:2] == [9, 16]
    assert out[2].startswith("-1: its worker process died")

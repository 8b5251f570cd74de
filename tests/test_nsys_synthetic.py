"""nsys reader edge cases on SYNTHETIC variants of a real export, plus bad inputs.

No public nsys export has OSRT rows, API backtraces, CUDA-graph kernels, synchronous copies or
an old (EXPORT_META_DATA, no demangledName) schema (data README), so these tests copy the real
3.16 export (../shared/data/nsys/nvfuser_h200_nsys2024.6.sqlite) into tmp_path and edit it
with plain SQL to the documented schema (formats.md). Expected numbers come from SQL on the
edited copy, never from crossview. Bad inputs are written here (empty, junk, truncated,
not-nsys, StringIds dropped) and must each give one error line while the rest is analyzed.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import SHARED_DATA, run_cli
from crossview.analysis import analyze
from crossview.render import json as json_out

DATA = SHARED_DATA / "nsys"
BASE = DATA / "nvfuser_h200_nsys2024.6.sqlite"
REP = DATA / "nvfuser_h200_nsys2024.6.nsys-rep"
SKIP = "../shared/data/nsys not present: these fixtures are built from a real export"
# the launch of the first kernel in the 3.16 export (checked with sqlite3 by hand):
# correlation 158, cudaLaunchKernel_v7000 on globalTid 281980910466508
CORR = 158


def copy_base(tmp: Path, name: str = "variant.sqlite") -> Path:
    if not BASE.is_file():
        pytest.skip(SKIP)
    out = tmp / name
    shutil.copyfile(BASE, out)
    out.chmod(stat.S_IRUSR | stat.S_IWUSR)
    return out


def edit(path: Path, *sql: str) -> None:
    con = sqlite3.connect(path)
    for s in sql:
        con.execute(s)
    con.commit()
    con.close()


def q(path: Path, sql: str) -> list[tuple]:
    con = sqlite3.connect(path)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def add_string(path: Path, value: str) -> int:
    nid = q(path, "SELECT max(id) + 1 FROM StringIds")[0][0]
    edit(path, f"INSERT INTO StringIds VALUES ({nid}, '{value}')")
    return nid


def cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return run_cli("analyze", *args, env=env, timeout=120)


# ------------------------------------------------------------------ schema differences


def test_old_schema_shortname_textid_export_meta_data(tmp_path: Path) -> None:
    p = copy_base(tmp_path)
    ranges = q(p, "SELECT count(*) FROM NVTX_EVENTS WHERE eventType = 59 AND end IS NOT NULL")
    top = q(p, "SELECT text, count(*) FROM NVTX_EVENTS GROUP BY 1 ORDER BY 2 DESC LIMIT 1")[0]
    sid = add_string(p, top[0])
    edit(p,
         "ALTER TABLE META_DATA_EXPORT RENAME TO EXPORT_META_DATA",
         "UPDATE EXPORT_META_DATA SET value = '3.1.0' WHERE name = 'EXPORT_SCHEMA_VERSION'",
         "ALTER TABLE CUPTI_ACTIVITY_KIND_KERNEL DROP COLUMN demangledName",
         "ALTER TABLE CUPTI_ACTIVITY_KIND_KERNEL DROP COLUMN mangledName",
         "ALTER TABLE CUPTI_ACTIVITY_KIND_KERNEL DROP COLUMN greenContextId",
         f"UPDATE NVTX_EVENTS SET text = NULL, textId = {sid} WHERE text = '{top[0]}'",
         "DROP TABLE CUPTI_ACTIVITY_KIND_MEMSET")
    short = sorted(n for (n,) in q(p, "SELECT s.value FROM CUPTI_ACTIVITY_KIND_KERNEL k"
                                      " JOIN StringIds s ON s.id = k.shortName"))
    a = analyze([p])
    st = a.views.store
    assert sorted(n for (n,) in st.sql(
        "SELECT name FROM gpu_ops WHERE kind = 'kernel'").fetchall()) == short
    assert st.sql("SELECT count(*) FROM host_ops WHERE kind = 'annotation'"
                  ).fetchall()[0][0] == ranges[0][0]
    assert st.sql("SELECT count(*) FROM host_ops WHERE kind = 'annotation' AND name = $n",
                  {"n": top[0]}).fetchall()[0][0] == top[1]
    notes = a.artifacts[0].notes
    assert "no memset recorded (CUPTI_ACTIVITY_KIND_MEMSET absent)" in notes
    assert st.sql("SELECT count(*) FROM gpu_ops WHERE kind = 'memset'").fetchall()[0][0] == 0
    assert not any(c.kind == "memset" for c in a.views.metrics.copies)


def test_osrt_backtrace_graph_node(tmp_path: Path) -> None:
    p = copy_base(tmp_path)
    tid, s, e = q(p, f"SELECT globalTid, start, end FROM CUPTI_ACTIVITY_KIND_RUNTIME"
                     f" WHERE correlationId = {CORR}")[0]
    frames = ["main", "my_step", "libcudart_launch"]  # outermost first
    ids = [add_string(p, f) for f in frames]
    ioctl = add_string(p, "ioctl")
    mod = add_string(p, "/usr/lib/libcudart.so.12")
    edit(p,
         "CREATE TABLE SAMPLING_CALLCHAINS (id INTEGER, symbol INTEGER, module INTEGER,"
         " kernelMode INTEGER, thumbCode INTEGER, unresolved INTEGER, specialEntry INTEGER,"
         " originalIP INTEGER, unwindMethod INTEGER, stackDepth INTEGER)",
         *[f"INSERT INTO SAMPLING_CALLCHAINS VALUES (77, {sid}, {mod}, 0, 0, 0, NULL, 0, 1,"
           f" {len(ids) - 1 - i})" for i, sid in enumerate(ids)],
         f"UPDATE CUPTI_ACTIVITY_KIND_RUNTIME SET callchainId = 77 WHERE correlationId = {CORR}",
         "CREATE TABLE OSRT_API (start INTEGER, end INTEGER, eventClass INTEGER,"
         " globalTid INTEGER, correlationId INTEGER, nameId INTEGER, returnValue INTEGER,"
         " nestingLevel INTEGER, callchainId INTEGER)",
         f"INSERT INTO OSRT_API VALUES ({s + 10}, {s + 20}, 27, {tid}, 1, {ioctl}, 0, 0, NULL)",
         f"INSERT INTO OSRT_API VALUES ({e + 5_000}, {e + 9_000}, 27, {tid}, 2, {ioctl}, 0, 0,"
         " NULL)",
         "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET graphNodeId = 5 WHERE correlationId = 186")
    nvtx = [t for (t,) in q(p, f"SELECT text FROM NVTX_EVENTS WHERE eventType = 59 AND"
                               f" globalTid = {tid} AND start <= {s} AND end >= {e}"
                               " ORDER BY start, end DESC")]
    kname = q(p, "SELECT d.value FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds d"
                 f" ON d.id = k.demangledName WHERE k.correlationId = {CORR}")[0][0]
    a = analyze([p])
    d = json_out.as_dict(a)
    node = {"children": d["gpu_view"]["roots"]}
    for frame in [*nvtx, *frames, "cudaLaunchKernel", kname]:
        node = next(c for c in node["children"] if c["frame"] == frame)
    assert node["kind"] == "kernel" and node["count"] == 1
    st = a.views.store
    osrt = st.sql("SELECT h.name, p.name FROM host_ops h LEFT JOIN host_ops p"
                  " ON p.op_id = h.parent WHERE h.kind = 'osrt' ORDER BY h.start_ns").fetchall()
    assert osrt[0] == ("ioctl", "cudaLaunchKernel")  # inside the launch call: nested under it
    assert len(osrt) == 2 and osrt[1][0] == "ioctl"
    # the nested ioctl's frame path runs through the backtrace frames too (re-interned)
    path = st.sql("""
        WITH RECURSIVE up(n, name, d) AS (
            SELECT f.node_id, f.name, 0 FROM frames f JOIN host_ops h ON h.node_id = f.node_id
            WHERE h.kind = 'osrt' AND h.parent IS NOT NULL
            UNION ALL SELECT f.parent_node, p.name, d + 1 FROM up JOIN frames f ON f.node_id = up.n
            JOIN frames p ON p.node_id = f.parent_node)
        SELECT name FROM up ORDER BY d DESC""").fetchall()
    assert [n for (n,) in path][-5:] == [*frames, "cudaLaunchKernel", "ioctl"]
    assert d["metrics"]["launch"]["kernels_via_graph"] == 1
    assert not any("OS runtime calls not collected" in n for n in a.artifacts[0].notes)


def test_nvtx_unclosed_and_cross_thread_ranges(tmp_path: Path) -> None:
    p = copy_base(tmp_path)
    tid, s = q(p, "SELECT globalTid, min(start) FROM NVTX_EVENTS")[0]
    edit(p,
         "INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid)"
         f" VALUES ({s}, NULL, 59, 'never closed', {tid})",
         "INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid, endGlobalTid)"
         f" VALUES ({s}, {s + 100}, 60, 'other thread', {tid}, {tid + 1})")
    notes = analyze([p]).artifacts[0].notes
    assert "1 NVTX ranges never closed (no end time): left out" in notes
    assert any(n.startswith("1 NVTX start/end ranges end on another thread") for n in notes)


# ------------------------------------------------------- nsys expert-rule equivalents


def test_sync_memcpy_and_sync_memset(tmp_path: Path) -> None:
    p = copy_base(tmp_path)
    edit(p,
         "UPDATE StringIds SET value = 'cudaMemcpy_v3020' WHERE value = 'cudaMemcpyAsync_v3020'",
         "UPDATE StringIds SET value = 'cudaMemset_v3020' WHERE value = 'cudaMemsetAsync_v3020'",
         "UPDATE CUPTI_ACTIVITY_KIND_MEMSET SET memKind = 1")  # pinned host memory
    cp_host = q(p, "SELECT count(*), sum(r.end - r.start) FROM CUPTI_ACTIVITY_KIND_MEMCPY m"
                   " JOIN CUPTI_ACTIVITY_KIND_RUNTIME r USING (correlationId)"
                   " WHERE m.copyKind <> 8")[0]
    ms_host = q(p, "SELECT count(*), sum(r.end - r.start) FROM CUPTI_ACTIVITY_KIND_MEMSET m"
                   " JOIN CUPTI_ACTIVITY_KIND_RUNTIME r USING (correlationId)")[0]
    d = json_out.as_dict(analyze([p]))
    f = {x["pattern"]: x for x in d["findings"]}
    assert f["sync-memcpy"]["title"].startswith(f"{cp_host[0]:,} synchronous memcpy calls")
    assert f"{cp_host[1] / 1e3:,.1f} µs" in f["sync-memcpy"]["title"]
    assert "`cudaMemcpy` DtoH (Device -> Pinned)" in f["sync-memcpy"]["observation"]
    assert f["sync-memset"]["title"].startswith(f"{ms_host[0]:,} synchronous memsets")
    assert "CUPTI_ACTIVITY_KIND_MEMSET" in f["sync-memset"]["evidence"][0]
    # the unedited export has async copies only: neither rule fires
    clean = json_out.as_dict(analyze([BASE]))
    assert not {"sync-memcpy", "sync-memset"} & {x["pattern"] for x in clean["findings"]}


def test_filters_reach_samples(tmp_path: Path) -> None:
    sampled = DATA / "jacc_a100_cpu_sampling_nsys2026.2.sqlite"
    if not sampled.is_file():
        pytest.skip(SKIP)
    main_tid = q(sampled, "SELECT globalTid & 16777215, count(*) FROM COMPOSITE_EVENTS"
                          " GROUP BY 1 ORDER BY 2 DESC LIMIT 1")[0]
    from crossview.scope.filter import Filter
    a = analyze([sampled], Filter(tid=str(main_tid[0])))
    assert a.views.cpu.samples == main_tid[1]  # 5,067 of 5,094 on the Julia main thread
    lo = q(sampled, "SELECT min(start) FROM COMPOSITE_EVENTS")[0][0]
    n = q(sampled, f"SELECT count(*) FROM COMPOSITE_EVENTS WHERE start < {lo + 1_000_000_000}")
    a = analyze([sampled], Filter(window_ns=(lo, lo + 1_000_000_000)))
    assert a.views.cpu.samples == n[0][0]


# ---------------------------------------------------------------------- bad inputs


def test_bad_inputs_one_line_each_rest_analyzed(tmp_path: Path) -> None:
    good = copy_base(tmp_path, "good.sqlite")
    other = tmp_path / "other.sqlite"
    edit(other, "CREATE TABLE t (a INTEGER)")
    nostr = copy_base(tmp_path, "nostr.sqlite")
    edit(nostr, "DROP TABLE StringIds")
    trunc = tmp_path / "trunc.sqlite"
    trunc.write_bytes(BASE.read_bytes()[:200_000])
    empty = tmp_path / "empty.sqlite"
    empty.write_bytes(b"")
    junk = tmp_path / "junk.sqlite"
    junk.write_bytes(b"\x00\x13not a database at all" * 10)
    bad = {other: "not an Nsight Systems export", nostr: "lacks the StringIds table",
           trunc: "SQLite", empty: "empty file", junk: "not a database"}
    proc = cli(*map(str, bad), str(good))
    assert "Traceback" not in proc.stderr + proc.stdout
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == len(bad), proc.stderr
    for path, words in bad.items():
        line = next(x for x in lines if f"{path}:" in x)
        assert line.startswith("crossview: error: ") and words in line, line
    assert "good.sqlite" in proc.stdout and "**Key findings**" in proc.stdout


def test_nsys_rep_without_and_with_cli(tmp_path: Path) -> None:
    if not REP.is_file():
        pytest.skip(SKIP)
    env = dict(os.environ, PATH=str(tmp_path / "empty-bin"))
    proc = cli(str(REP), env=env)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.strip().splitlines() == [
        f"crossview: error: {REP}: an Nsight Systems report needs the `nsys` CLI to convert, "
        "and none is on PATH: run `nsys export --type sqlite --output "
        "nvfuser_h200_nsys2024.6.sqlite nvfuser_h200_nsys2024.6.nsys-rep` where Nsight "
        "Systems is installed, then analyze the .sqlite"]
    # a stand-in `nsys` (SYNTHETIC: it copies the matching real export to --output) proves the
    # conversion path: the artifact keeps the report's path and says it was converted
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "nsys"
    fake.write_text(f"#!{sys.executable}\nimport shutil, sys\n"
                    "out = [a.split('=', 1)[1] for a in sys.argv if a.startswith('--output=')][0]\n"
                    f"shutil.copyfile({str(BASE)!r}, out)\n")
    fake.chmod(0o755)
    env = dict(os.environ, PATH=f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")
    proc = cli(str(REP), "--format", "json", env=env)
    assert proc.returncode == 0, proc.stderr
    import json
    d = json.loads(proc.stdout)
    assert d["artifacts"][0]["path"] == str(REP)
    assert d["artifacts"][0]["notes"][0].startswith("converted with")
    assert d["metrics"]["kernel_count"] == q(BASE, "SELECT count(*) FROM"
                                                   " CUPTI_ACTIVITY_KIND_KERNEL")[0][0]

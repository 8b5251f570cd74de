"""Bounded-memory host nesting for Nsight Systems exports (sources/nesting_batches.py, shared
with Kineto; nsys/host.py, nsys/host_chains.py).

Batched results must not depend on the batch size: on the real nvFuser exports in
../shared/data/nsys (runtime API + NVTX rows) host_ops and frames from tiny batches (1, 16 rows:
hundreds of cuts) equal the default batches, and equal the pre-batching algorithm, recomputed
here with one `nest` + `intern_paths` over every event. No public export has API backtraces,
so the backtrace case edits a copy of the real 3.16 export (SYNTHETIC: callchainIds set on
every 7th runtime row, two made-up chains, plus two one-frame chains placed so a whole pass and
tiny batches meet them in opposite orders) and checks batch-size independence and that every
chained call's frame path runs through its chain.
"""

from __future__ import annotations

import shutil
import sqlite3
import stat
from pathlib import Path

import msgspec
import numpy as np
import pytest

from conftest import SHARED_DATA
from crossview.knowledge.thresholds import defaults
from crossview.sources.kineto.nesting import intern_paths, nest
from crossview.sources.nsys import host
from crossview.sources.registry import read_all
from crossview.store.store import Store

DATA = SHARED_DATA / "nsys"
REAL = ["nvfuser_h200_nsys2025.1.sqlite", "nvfuser_h200_nsys2024.6.sqlite"]
HOST = ("SELECT op_id, pid, tid, kind, name, start_ns, dur_ns, depth, parent, correlation,"
        " node_id, self_ns FROM host_ops ORDER BY op_id")
FRAMES = "SELECT node_id, parent_node, name, kind, depth FROM frames ORDER BY node_id"


def real(name: str) -> Path:
    path = DATA / name
    if not path.exists():
        pytest.skip(f"real export {path} absent (../shared/data not mounted)")
    return path


def ingest(path: Path, batch: int | None, monkeypatch: pytest.MonkeyPatch) -> Store:
    if batch is not None:
        t = msgspec.structs.replace(defaults(), kineto_nest_batch_rows=batch)
        monkeypatch.setattr(host, "defaults", lambda: t)
    store = Store(threads=1)  # one thread: DuckDB's parallel sort may swap exact ties
    (rep,) = read_all([path], store)
    monkeypatch.undo()
    assert rep.status == "ok", rep
    return store


@pytest.mark.parametrize("name", REAL)
def test_tiny_batches_equal_default_batches(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    path = real(name)
    whole = ingest(path, None, monkeypatch)
    n = whole.sql("SELECT count(*) FROM host_ops").fetchall()[0][0]
    nvtx = whole.sql("SELECT count(*) FROM host_ops WHERE kind = 'annotation'").fetchall()[0][0]
    assert n > 1_000 and nvtx > 0  # runtime calls nested under NVTX ranges
    for batch in (1, 16):
        tiny = ingest(path, batch, monkeypatch)
        assert whole.sql(HOST).fetchall() == tiny.sql(HOST).fetchall()
        assert whole.sql(FRAMES).fetchall() == tiny.sql(FRAMES).fetchall()


def test_batched_equals_whole_column_pass(monkeypatch: pytest.MonkeyPatch) -> None:
    """The pre-batching algorithm, by hand: thread = dense rank of (pid, tid) (gtid order),
    label = dense rank of (kind, name), rows in op order (the sort key), one `nest` +
    `intern_paths` over every event, nodes from the first frame id (no backtraces here)."""
    store = ingest(real(REAL[0]), 16, monkeypatch)
    rows = store.sql(
        "SELECT op_id, dense_rank() OVER (ORDER BY CAST(pid AS BIGINT), CAST(tid AS BIGINT))"
        " - 1, dense_rank() OVER (ORDER BY kind, name) - 1, start_ns, dur_ns, depth,"
        " coalesce(parent, -1), node_id, self_ns FROM host_ops ORDER BY op_id"
    ).fetchnumpy()
    cols = [np.asarray(c, dtype=np.int64) for c in rows.values()]
    op, thread, label, start, dur = cols[:5]
    assert np.all(np.diff(op) == 1)
    ref = nest(thread, start, dur)
    assert ref.depth.max() >= 2  # NVTX range > nested range or call: real nesting to check
    first = int(store.sql("SELECT min(node_id) FROM frames").fetchall()[0][0])
    node, node_parent, node_label = intern_paths(ref.depth, ref.parent, label, None, first)
    assert np.array_equal(cols[5], ref.depth)
    assert np.array_equal(cols[6], np.where(ref.parent >= 0, ref.parent + op[0], -1))
    assert np.array_equal(cols[7], node)
    assert np.array_equal(cols[8], ref.self_ns)
    fr = store.sql("SELECT coalesce(parent_node, -1) FROM frames ORDER BY node_id").fetchnumpy()
    assert np.array_equal(np.asarray(fr[next(iter(fr))], dtype=np.int64), node_parent)


def _chained_copy(tmp: Path) -> tuple[Path, int]:
    src = real(REAL[1])
    p = tmp / "chained.sqlite"
    shutil.copyfile(src, p)
    p.chmod(stat.S_IRUSR | stat.S_IWUSR)
    con = sqlite3.connect(p)
    base = con.execute("SELECT max(id) + 1 FROM StringIds").fetchone()[0]
    names = ["main", "step_a", "step_b", "libcudart_x"]
    for i, nm in enumerate(names):
        con.execute("INSERT INTO StringIds VALUES (?, ?)", (base + i, nm))
    con.execute("CREATE TABLE SAMPLING_CALLCHAINS (id INTEGER, symbol INTEGER, module INTEGER,"
                " kernelMode INTEGER, thumbCode INTEGER, unresolved INTEGER,"
                " specialEntry INTEGER, originalIP INTEGER, unwindMethod INTEGER,"
                " stackDepth INTEGER)")
    # chain 77: main > step_a > libcudart_x; chain 78: main > step_b > libcudart_x
    for cid, mid in ((77, 1), (78, 2)):
        for depth, sid in enumerate((3, mid, 0)):  # stackDepth 0 = innermost
            con.execute("INSERT INTO SAMPLING_CALLCHAINS VALUES (?, ?, ?, 0, 0, 0, NULL, 0, 1,"
                        " ?)", (cid, base + sid, base + 3, depth))
    con.execute("UPDATE CUPTI_ACTIVITY_KIND_RUNTIME SET callchainId ="
                " CASE WHEN rowid % 14 = 0 THEN 77 ELSE 78 END WHERE rowid % 7 = 0")
    # one-frame chains 79 ("zz_deep") on a call inside >= 3 NVTX ranges and 80 ("aa_late") on
    # a later call outside any: met in opposite orders by one whole pass (depth first) and by
    # tiny batches (row order), so frame labels must not be numbered in order met
    deep, late = (base + 4, "zz_deep"), (base + 5, "aa_late")
    con.executemany("INSERT INTO StringIds VALUES (?, ?)", [deep, late])
    for cid, (sid, _) in ((79, deep), (80, late)):
        con.execute("INSERT INTO SAMPLING_CALLCHAINS VALUES (?, ?, ?, 0, 0, 0, NULL, 0, 1, 0)",
                    (cid, sid, base + 3))
    inside = ("(SELECT count(*) FROM NVTX_EVENTS v WHERE v.eventType = 59 AND v.globalTid ="
              " r.globalTid AND v.start <= r.start AND v.end >= r.end)")
    d_row, d_start = con.execute(f"SELECT rowid, start FROM CUPTI_ACTIVITY_KIND_RUNTIME r"
                                 f" WHERE {inside} >= 3 ORDER BY start LIMIT 1").fetchone()
    l_row, l2_row = (r for (r,) in con.execute(
        f"SELECT rowid FROM CUPTI_ACTIVITY_KIND_RUNTIME r WHERE {inside} = 0 AND start > ?"
        " AND rowid % 7 <> 0 ORDER BY start LIMIT 2", (d_start,)).fetchall())
    # and 79 again on the call after: its zz_deep node is then a sibling of aa_late's (both
    # roots), ordered by label — a label numbered in order met would swap their node ids
    for cid, row in ((79, d_row), (80, l_row), (79, l2_row)):
        con.execute("UPDATE CUPTI_ACTIVITY_KIND_RUNTIME SET callchainId = ? WHERE rowid = ?",
                    (cid, row))
    chained = con.execute("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME"
                          " WHERE callchainId IN (77, 78)").fetchone()[0]
    con.commit()
    con.close()
    return p, chained


def test_backtrace_frames_batch_independent(tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    path, chained = _chained_copy(tmp_path)
    whole = ingest(path, None, monkeypatch)
    for batch in (1, 5):
        tiny = ingest(path, batch, monkeypatch)
        assert whole.sql(HOST).fetchall() == tiny.sql(HOST).fetchall()
        assert whole.sql(FRAMES).fetchall() == tiny.sql(FRAMES).fetchall()
    # every chained runtime call sits right under libcudart_x > step_a|step_b > main
    got = whole.sql(
        "SELECT p2.name, count(*) FROM host_ops h JOIN frames f ON f.node_id = h.node_id"
        " JOIN frames p0 ON p0.node_id = f.parent_node"
        " JOIN frames p1 ON p1.node_id = p0.parent_node"
        " JOIN frames p2 ON p2.node_id = p1.parent_node"
        " WHERE h.kind = 'runtime' AND p0.name = 'libcudart_x' AND p2.name = 'main'"
        " GROUP BY p2.name").fetchall()
    assert got == [("main", chained)]
    for frame, calls in (("zz_deep", 2), ("aa_late", 1)):  # right above its calls
        assert whole.sql("SELECT count(*) FROM host_ops h JOIN frames f ON f.node_id ="
                         " h.node_id JOIN frames p ON p.node_id = f.parent_node"
                         " WHERE h.kind = 'runtime' AND p.name = $f", {"f": frame}
                         ).fetchall()[0][0] == calls
    # unused un-chained paths were dropped: every frame is some event's node or an ancestor
    orphans = whole.sql(
        "SELECT count(*) FROM frames f WHERE NOT EXISTS (SELECT 1 FROM host_ops h"
        " WHERE h.node_id = f.node_id) AND NOT EXISTS (SELECT 1 FROM frames c"
        " WHERE c.parent_node = f.node_id)").fetchall()[0][0]
    assert orphans == 0

"""The nsys launch link (sources/nsys/launch_link.py): numpy keys and the SQL join.

A GPU op links to the runtime call with the same correlationId in its process; several calls
sharing one (process, id): the outermost wins, then the first, and the op is a graph replay
when any of them launches a graph. Hand-built `_host` / `_nestres` / `_labels` rows with the
expected op ids worked out below; both paths must give them. On the real exports in
../shared/data/nsys (3.17: ids repeat across two processes) the numpy path's gpu_ops equal the
SQL path's, and the linked kernel count equals SQLite's own join.
"""

from __future__ import annotations

import sqlite3

import numpy as np
import pytest

from conftest import SHARED_DATA
from crossview.sources.nsys import launch_link
from crossview.sources.registry import read_all
from crossview.store.store import Store

OP_BASE = 100
# (pid, label, correlation, depth) per `_host` row, rowid = position
HOST = [(7, 2, None, 0),  # an NVTX range: no correlation
        (7, 0, 5, 1), (7, 0, 5, 2),  # (7, 5): the outer call (rid 1) wins
        (7, 1, 6, 3), (7, 0, 6, 1),  # (7, 6): rid 4 (depth 1) wins; a graph launch shares it
        (9, 0, 5, 0),  # (9, 5): the same id in another process
        (9, 0, 8, 0), (9, 0, 8, 0)]  # (9, 8): a tie on depth, the first (rid 6) wins
LABELS = [(0, "runtime", "cudaLaunchKernel"), (1, "runtime", "cudaGraphLaunch"),
          (2, "annotation", "step")]
# GPU ops (rid, corr, pid) and the expected link: rid → (op id, graph)
GPU = [(0, 5, 7), (1, 6, 7), (2, 5, 9), (3, 8, 9), (4, 7, 7), (5, None, 7), (6, 5, 3)]
EXPECTED = [(0, OP_BASE + 1, False), (1, OP_BASE + 4, True), (2, OP_BASE + 5, False),
            (3, OP_BASE + 6, False)]


def key_limit(monkeypatch: pytest.MonkeyPatch, limit: int) -> None:
    """Keys of process rank · id span at or above `limit` take the SQL join."""
    monkeypatch.setattr(launch_link, "_KEY_LIMIT", limit)


def staged() -> Store:
    store = Store(threads=1)
    con = store.con
    con.execute("CREATE TABLE _host (gtid BIGINT, label BIGINT, correlation BIGINT)")
    con.execute("CREATE TABLE _nestres (depth INTEGER)")
    con.execute("CREATE TABLE _labels (label BIGINT, kind VARCHAR, name VARCHAR)")
    for pid, label, corr, depth in HOST:
        con.execute("INSERT INTO _host VALUES (?, ?, ?)", [(pid << 24) | 3, label, corr])
        con.execute("INSERT INTO _nestres VALUES (?)", [depth])
    con.executemany("INSERT INTO _labels VALUES (?, ?, ?)", LABELS)
    con.execute("CREATE TABLE gpu (rid BIGINT, corr BIGINT, pid BIGINT)")
    con.executemany("INSERT INTO gpu VALUES (?, ?, ?)", GPU)
    return store


@pytest.mark.parametrize("limit", [1 << 62, 0], ids=["numpy", "sql"])
def test_outermost_then_first_within_the_process(limit: int,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    key_limit(monkeypatch, limit)
    store = staged()
    con = store.con
    launches = launch_link.stage(con, OP_BASE, "_labels")
    assert (launches is None) == (limit == 0)
    launch_link.link(con, "gpu", launches)
    assert con.execute("SELECT * FROM _nsys_link").fetchall() == EXPECTED


def test_no_runtime_call_links_nothing() -> None:
    store = staged()
    con = store.con
    con.execute("DELETE FROM _labels WHERE kind = 'runtime'")
    launch_link.link(con, "gpu", launch_link.stage(con, OP_BASE, "_labels"))
    assert con.execute("SELECT count(*) FROM _nsys_link").fetchall() == [(0,)]


@pytest.mark.parametrize("name", ["nvfuser_h200_nsys2025.1.sqlite",
                                  "nvfuser_h200_nsys2024.6.sqlite"])
def test_real_exports_numpy_equals_sql(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    path = SHARED_DATA / "nsys" / name
    if not path.exists():
        pytest.skip(f"real export {path} absent (../shared/data not mounted)")
    got = {}
    for limit in (1 << 62, 0):
        key_limit(monkeypatch, limit)
        store = Store(threads=1)
        (rep,) = read_all([path], store)
        assert rep.status == "ok", rep
        got[limit] = store.sql("SELECT gpu_op_id, kind, launch_op_id, via_graph FROM gpu_ops"
                               " ORDER BY gpu_op_id").fetchall()
    assert got[1 << 62] == got[0]
    con = sqlite3.connect(f"file:{path}?mode=ro&immutable=1", uri=True)
    linked = con.execute(
        "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL k WHERE EXISTS (SELECT 1 FROM"
        " CUPTI_ACTIVITY_KIND_RUNTIME r WHERE r.correlationId = k.correlationId"
        " AND (r.globalTid >> 24) & 16777215 = (k.globalPid >> 24) & 16777215)").fetchone()[0]
    con.close()
    assert linked > 0
    numpy = got[1 << 62]
    assert sum(1 for _, kind, op, _ in numpy if kind == "kernel" and op is not None) == linked


def test_ids_beyond_the_key_take_the_sql_join(monkeypatch: pytest.MonkeyPatch) -> None:
    """Ids 5 … 8 in two processes: keys up to 2 · 4 = 8, not below a limit of 8."""
    key_limit(monkeypatch, 8)
    store = staged()
    con = store.con
    assert launch_link.stage(con, OP_BASE, "_labels") is None
    launch_link.link(con, "gpu", None)
    assert con.execute("SELECT * FROM _nsys_link").fetchall() == EXPECTED


@pytest.mark.parametrize("runs", [True, False], ids=["stable", "in-place"])
def test_winners_do_not_depend_on_the_calls_order(runs: bool) -> None:
    """Either sort of `_winners`: calls in thread runs or shuffled, many sharing a (process,
    id), give the same winners as a per-key min / any worked out in Python."""
    rng = np.random.default_rng(7)
    n = 5000
    pid = rng.choice(np.array([3, 11], np.int64), n)
    corr = rng.integers(100, 1600, n, dtype=np.int64)
    best = rng.integers(0, 1 << 40, n, dtype=np.int64)
    graph = rng.random(n) < 0.1
    want: dict[tuple[int, int], tuple[int, bool]] = {}
    for p, c, b, g in zip(pid.tolist(), corr.tolist(), best.tolist(), graph.tolist(),
                          strict=True):
        old = want.get((p, c), (b, False))
        want[(p, c)] = (min(old[0], b), old[1] or g)
    for order in (np.lexsort((corr, pid)), rng.permutation(n)):
        t = launch_link._winners(Store(threads=1).con, pid[order], corr[order], best[order],
                                 graph[order], runs=runs)
        assert t is not None
        at, hit = t.find(np.array([p for p, _ in want], np.int64),
                         np.array([c for _, c in want], np.int64))
        assert hit.all()
        assert list(zip(t.best[at].tolist(), t.graph[at].tolist(), strict=True)) == list(
            want.values())

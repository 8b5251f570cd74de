"""The nsys host path from numpy arrays equals the bounded-batch path (sources/nsys/host_arrays.py).

Up to `nsys_host_in_memory_rows` host events the reader nests, links and inserts host_ops from
arrays; past it `_nestres` batches and the SQL insert stay. On every real export in
../shared/data/nsys (and the backtrace copy of tests/test_nsys_batches.py) both paths must give
the same host_ops, frames and gpu_ops (the launch link is found from the arrays too), row by
row in id order, also with tiny nesting batches. Independent numbers: the runtime-call count
and their summed duration (ns) are computed here with `sqlite3` from the export, and the number
of kernels with a launch call is checked against a correlationId join done in SQLite.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import msgspec
import pytest

from conftest import SHARED_DATA
from crossview.knowledge.thresholds import defaults
from crossview.sources.nsys import host, host_arrays, launch_link
from crossview.sources.registry import read_all
from crossview.store.store import Store
from test_nsys_batches import _chained_copy

DATA = SHARED_DATA / "nsys"
REAL = ["nvfuser_h200_nsys2025.1.sqlite", "nvfuser_h200_nsys2024.6.sqlite",
        "jacc_a100_cpu_sampling_nsys2026.2.sqlite"]
QUERIES = {
    "host_ops": "SELECT * EXCLUDE (artifact_id) FROM host_ops ORDER BY op_id",
    "frames": "SELECT * FROM frames ORDER BY node_id",
    "gpu_ops": "SELECT * EXCLUDE (artifact_id) FROM gpu_ops ORDER BY gpu_op_id",
}


def real(name: str) -> Path:
    path = DATA / name
    if not path.exists():
        pytest.skip(f"real export {path} absent (../shared/data not mounted)")
    return path


def read(path: Path, in_memory: bool, monkeypatch: pytest.MonkeyPatch,
         batch: int | None = None, direct: bool | None = None
         ) -> dict[str, list[tuple[object, ...]]]:
    t = msgspec.structs.replace(
        defaults(), nsys_host_in_memory_rows=10**9 if in_memory else -1,
        kineto_nest_batch_rows=batch or defaults().kineto_nest_batch_rows)
    used: list[bool] = []  # per read of the arrays: straight from the sort (no `_host`)
    real_read = host_arrays.read

    def spy(con: object, rows: str) -> host_arrays.HostCols:
        used.append(not rows.endswith("FROM _host"))  # else straight from the sort
        return real_read(con, rows)  # type: ignore[arg-type]

    with monkeypatch.context() as m:
        m.setattr(host, "defaults", lambda: t)
        m.setattr(host_arrays, "read", spy)
        store = Store(threads=1)  # one thread: DuckDB's parallel sort may swap exact ties
        (rep,) = read_all([path], store)
    assert rep.status == "ok", rep
    assert bool(used) == in_memory  # the path asked for was the one taken
    if direct is not None:
        assert used == [direct]
    return {t: store.sql(q).fetchall() for t, q in QUERIES.items()}


def runtime_truth(path: Path) -> tuple[int, int, int]:
    """(runtime calls, their summed duration ns, kernels whose correlationId has a runtime
    call in the same process), straight from the export."""
    con = sqlite3.connect(f"file:{path}?mode=ro&immutable=1", uri=True)
    try:
        have = {r[0] for r in con.execute("SELECT name FROM sqlite_master")}
        if "CUPTI_ACTIVITY_KIND_RUNTIME" not in have:
            return 0, 0, 0
        n, ns = con.execute('SELECT count(*), coalesce(sum("end" - start), 0)'
                            " FROM CUPTI_ACTIVITY_KIND_RUNTIME").fetchone()
        linked = 0
        if "CUPTI_ACTIVITY_KIND_KERNEL" in have:
            linked = con.execute(
                "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL k WHERE EXISTS (SELECT 1"
                " FROM CUPTI_ACTIVITY_KIND_RUNTIME r WHERE r.correlationId = k.correlationId"
                " AND (r.globalTid >> 24) & 16777215 = (k.globalPid >> 24) & 16777215)"
            ).fetchone()[0]
        return int(n), int(ns), int(linked)
    finally:
        con.close()


def counts(r: dict[str, list[tuple[object, ...]]]) -> tuple[int, int, int]:
    # host_ops without artifact_id: (op_id, pid, tid, kind, name, start, dur, …)
    rt = [row for row in r["host_ops"] if row[3] == "runtime"]
    # gpu_ops without artifact_id: (id, device, stream, kind, …, launch_op_id at 9)
    linked = sum(1 for row in r["gpu_ops"] if row[3] == "kernel" and row[9] is not None)
    return len(rt), sum(int(row[6]) for row in rt), linked


@pytest.mark.parametrize("name", REAL)
def test_arrays_equal_batches_on_real_exports(name: str,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    path = real(name)
    batches = read(path, False, monkeypatch)
    arrays = read(path, True, monkeypatch, direct=True)  # no backtrace: no `_host` table
    for t in QUERIES:
        assert arrays[t] == batches[t], t
    assert counts(arrays) == counts(batches) == runtime_truth(path)
    assert read(path, True, monkeypatch, batch=7) == arrays  # hundreds of nesting cuts


def test_arrays_equal_batches_with_backtraces(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    path, chained = _chained_copy(tmp_path)
    assert chained > 0
    batches = read(path, False, monkeypatch)
    assert read(path, True, monkeypatch, direct=False) == batches  # `_host` for the chains
    assert read(path, True, monkeypatch, batch=5) == batches


def test_ids_too_wide_for_one_key_link_in_sql(monkeypatch: pytest.MonkeyPatch) -> None:
    """Past the int64 key (`_KEY_LIMIT`), both paths group the launch calls in SQL
    (`_nsys_launch`) and link the same GPU ops as the numpy key does."""
    path = real(REAL[0])
    keyed = read(path, True, monkeypatch)
    monkeypatch.setattr(launch_link, "_KEY_LIMIT", 1)
    assert read(path, True, monkeypatch) == keyed
    assert read(path, False, monkeypatch) == keyed

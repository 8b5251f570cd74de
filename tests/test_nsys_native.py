"""The nsys reader's two fetch paths give the same store (sources/nsys/native.py, fetch.py).

On every real export in ../shared/data/nsys, the store read through the ADBC SQLite driver
(Arrow batches) equals the one read through Python's `sqlite3` (CROSSVIEW_NSYS_NATIVE=0),
table by table, row by row in id order; a driver failure mid-read falls back to `sqlite3` with
the same result; gpu_ops inserted in tiny batches equals one batch. Independent numbers: the
kernel count and the summed kernel time (ns) are computed here straight from the SQLite
tables with the `sqlite3` module, and each path must match them.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import msgspec
import pytest

from crossview.knowledge import thresholds
from crossview.sources.nsys import fetch, gpu, native, prefetch
from crossview.sources.registry import read_all
from crossview.store.store import Store

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "nsys"
REAL = ["nvfuser_h200_nsys2025.1.sqlite", "nvfuser_h200_nsys2024.6.sqlite",
        "jacc_a100_cpu_sampling_nsys2026.2.sqlite"]
TABLES = {
    "gpu_ops": "gpu_op_id", "host_ops": "op_id", "frames": "node_id",
    "samples": "ts_ns, tid, node_id", "devices": "device",
}


def real(name: str) -> Path:
    path = DATA / name
    if not path.exists():
        pytest.skip(f"real export {path} absent (../shared/data not mounted)")
    return path


def rows(path: Path, native_on: bool, monkeypatch: pytest.MonkeyPatch
         ) -> dict[str, list[tuple[object, ...]]]:
    monkeypatch.setenv(native.ENV, "1" if native_on else "0")
    store = Store(threads=1)  # one thread: DuckDB's parallel sort may swap exact ties
    (rep,) = read_all([path], store)
    assert rep.status == "ok", rep
    return {t: store.sql(f"SELECT * {'' if t == 'frames' else 'EXCLUDE (artifact_id)'}"
                         f" FROM {t} ORDER BY {key}").fetchall() for t, key in TABLES.items()}


def kernel_truth(path: Path) -> tuple[int, int]:
    con = sqlite3.connect(f"file:{path}?mode=ro&immutable=1", uri=True)
    try:
        has = con.execute("SELECT count(*) FROM sqlite_master WHERE name ="
                          " 'CUPTI_ACTIVITY_KIND_KERNEL'").fetchone()[0]
        if not has:
            return 0, 0
        n, ns = con.execute('SELECT count(*), coalesce(sum("end" - start), 0)'
                            " FROM CUPTI_ACTIVITY_KIND_KERNEL").fetchone()
        return int(n), int(ns)
    finally:
        con.close()


def kernels(r: dict[str, list[tuple[object, ...]]]) -> tuple[int, int]:
    ks = [row for row in r["gpu_ops"] if row[3] == "kernel"]  # (id, device, stream, kind, …)
    return len(ks), sum(int(row[7]) for row in ks)  # dur_ns


@pytest.mark.parametrize("name", REAL)
def test_native_and_sqlite3_give_the_same_store(name: str,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("adbc_driver_sqlite")
    path = real(name)
    fallback = rows(path, False, monkeypatch)
    arrow = rows(path, True, monkeypatch)
    for t in TABLES:
        assert arrow[t] == fallback[t], t
    assert kernels(arrow) == kernels(fallback) == kernel_truth(path)


def test_native_is_used_when_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("adbc_driver_sqlite")
    path = real(REAL[0])
    calls: list[str] = []
    real_insert = native.insert

    def spy(con: object, sql: str, *a: object, **k: object) -> int:
        calls.append(sql)
        return real_insert(con, sql, *a, **k)  # type: ignore[arg-type]

    monkeypatch.setattr(native, "insert", spy)
    rows(path, True, monkeypatch)
    assert any("CUPTI_ACTIVITY_KIND_KERNEL" in s for s in calls)
    calls.clear()
    rows(path, False, monkeypatch)
    assert calls == []  # CROSSVIEW_NSYS_NATIVE=0: the stdlib path only


def test_driver_failure_falls_back_to_sqlite3(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("adbc_driver_sqlite")
    path = real(REAL[0])
    fallback = rows(path, False, monkeypatch)

    def broken(*a: object, **k: object) -> int:
        raise RuntimeError("driver failed mid-stream")

    monkeypatch.setattr(native, "insert", broken)
    assert rows(path, True, monkeypatch) == fallback


def test_gpu_ops_in_tiny_batches_equal_one_batch(monkeypatch: pytest.MonkeyPatch) -> None:
    path = real(REAL[0])
    whole = rows(path, False, monkeypatch)
    monkeypatch.setattr(gpu, "INSERT_ROWS", 5)  # 18 kernels + copies: several batches
    assert rows(path, False, monkeypatch) == whole


@pytest.mark.parametrize("ahead", [False, True], ids=["inline", "prefetched"])
@pytest.mark.parametrize("where", ["first", "late"])
def test_value_not_stored_as_integer_takes_the_checked_select(
        where: str, ahead: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The raw fetch (values as stored, time check in DuckDB) is used only while every value
    is an integer or NULL: a text start in the driver's first batch types the column as text,
    one in a later batch fails the stream; either way the casts-and-typeof() SELECT reads the
    table and the store equals the sqlite3 path's (the text row skipped on both)."""
    pytest.importorskip("adbc_driver_sqlite")
    path = tmp_path / "text_start.sqlite"
    path.write_bytes(real(REAL[0]).read_bytes())
    con = sqlite3.connect(path)
    table = "CUPTI_ACTIVITY_KIND_KERNEL"
    rowid = con.execute(f"SELECT {'min' if where == 'first' else 'max'}(rowid) FROM {table}"
                        ).fetchone()[0]
    con.execute(f"UPDATE {table} SET start = start || ' ns' WHERE rowid = ?", (rowid,))
    con.commit()
    n = con.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
    con.close()
    monkeypatch.setattr(native, "BATCH_ROWS", 4)  # the last row in a later batch
    if ahead:  # the kernel table fetched on a second thread (one DuckDB thread: no ties)
        monkeypatch.setattr(prefetch, "MIN_THREADS", 1)
    tried: list[bool] = []
    real_insert = native.insert

    def spy(*a: object, **k: object) -> int:
        if table in str(a[1]):
            tried.append(bool(k.get("strict")))
        return real_insert(*a, **k)  # type: ignore[arg-type]

    monkeypatch.setattr(native, "insert", spy)
    fallback = rows_partial(path, False, monkeypatch)
    tried.clear()
    arrow = rows_partial(path, True, monkeypatch)
    assert tried == [True, False]  # the kernel table: raw, then the checked SELECT
    assert arrow == fallback
    assert sum(1 for r in arrow["gpu_ops"] if r[3] == "kernel") == n - 1


def rows_partial(path: Path, native_on: bool, monkeypatch: pytest.MonkeyPatch
                 ) -> dict[str, list[tuple[object, ...]]]:
    monkeypatch.setenv(native.ENV, "1" if native_on else "0")
    store = Store(threads=1)
    (rep,) = read_all([path], store)
    assert rep.status == "partial" and "1 row(s)" in rep.problems[0], rep
    return {t: store.sql(f"SELECT * {'' if t == 'frames' else 'EXCLUDE (artifact_id)'}"
                         f" FROM {t} ORDER BY {key}").fetchall() for t, key in TABLES.items()}


def prefetched(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Let the kernel prefetch run on one DuckDB thread (exact ties keep their order) and
    record the scratch table of each prefetch that was taken."""
    monkeypatch.setattr(prefetch, "MIN_THREADS", 1)
    taken: list[str] = []
    real_take = prefetch.Prefetch.take

    def spy(self: prefetch.Prefetch, duck: object) -> tuple[str, int] | None:
        got = real_take(self, duck)  # type: ignore[arg-type]
        if got is not None:
            taken.append(got[0])
        return got

    monkeypatch.setattr(prefetch.Prefetch, "take", spy)
    return taken


@pytest.mark.parametrize("name", REAL)
def test_kernels_prefetched_on_a_second_thread_give_the_same_store(
        name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("adbc_driver_sqlite")
    path = real(name)
    fallback = rows(path, False, monkeypatch)
    taken = prefetched(monkeypatch)
    ahead = rows(path, True, monkeypatch)
    has_kernels = kernel_truth(path)[0] > 0
    assert taken == (["memory.main._nsys_k"] if has_kernels else [])
    assert ahead == fallback
    assert kernels(ahead) == kernel_truth(path)


def test_prefetch_failure_or_budget_leaves_the_fetch_to_the_reader(
        monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("adbc_driver_sqlite")
    path = real(REAL[0])
    fallback = rows(path, False, monkeypatch)
    taken = prefetched(monkeypatch)
    real_fetch = fetch.native_fetch

    def broken(con: object, duck: object, table: str, dest: str, *a: object) -> int | None:
        if dest.startswith("memory."):  # the prefetch thread's fetch only
            raise RuntimeError("driver failed on the second thread")
        return real_fetch(con, duck, table, dest, *a)  # type: ignore[arg-type]

    monkeypatch.setattr(fetch, "native_fetch", broken)
    assert rows(path, True, monkeypatch) == fallback
    assert taken == []
    monkeypatch.setattr(fetch, "native_fetch", real_fetch)
    none = msgspec.structs.replace(thresholds.defaults(), nsys_prefetch_max_mib=0)
    monkeypatch.setattr(prefetch, "defaults", lambda: none)
    assert rows(path, True, monkeypatch) == fallback
    assert taken == []  # 18 kernels · 11 columns · 8 B > 0 MiB: not prefetched

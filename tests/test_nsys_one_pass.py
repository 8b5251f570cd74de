"""The nsys reader reads each large table once (decision 0500), and what that relies on.

- No separate pass over the export: no PRAGMA quick_check, no count of rows with impossible
  times; the kernel table is touched by its compile check (LIMIT 0) and its fetch only.
- Rows left out for impossible times are counted in DuckDB, and the GPU ops that remain keep
  consecutive op ids (the staged rowids stay 0 … n-1).
- `Store.scratch`: a compressed store keeps a reader's scratch tables in its uncompressed
  catalog, found unqualified by every cursor.
Real export: ../shared/data/nsys/nvfuser_h200_nsys2025.1.sqlite (skipped when absent); the
expected counts are computed here from the SQLite file with the `sqlite3` module.
"""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest

from crossview.sources.nsys import native, sqlite_reader
from crossview.sources.registry import read_all
from crossview.store.store import SCRATCH_DB, Store, cursor_of

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "nsys"
REAL = DATA / "nvfuser_h200_nsys2025.1.sqlite"
KERNEL = "CUPTI_ACTIVITY_KIND_KERNEL"


def real() -> Path:
    if not REAL.exists():
        pytest.skip(f"real export {REAL} absent (../shared/data not mounted)")
    return REAL


def statements(path: Path, native_on: bool, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every statement the reader runs on its sqlite3 connection."""
    seen: list[str] = []
    opened = sqlite_reader.connect

    def traced(p: Path) -> sqlite3.Connection:
        con = opened(p)
        con.set_trace_callback(seen.append)
        return con

    monkeypatch.setattr(sqlite_reader, "connect", traced)
    monkeypatch.setenv(native.ENV, "1" if native_on else "0")
    (rep,) = read_all([path], Store(threads=1))
    assert rep.status == "ok", rep
    return seen


@pytest.mark.parametrize("native_on", [True, False], ids=["adbc", "sqlite3"])
def test_no_extra_pass_over_the_export(native_on: bool,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    if native_on:
        pytest.importorskip("adbc_driver_sqlite")
    seen = statements(real(), native_on, monkeypatch)
    assert not [s for s in seen if "quick_check" in s or "integrity_check" in s]
    on_kernels = [s for s in seen if KERNEL in s and not s.startswith("PRAGMA")]
    assert not [s for s in on_kernels if "count(" in s.lower()]
    assert sum(s.endswith("LIMIT 0") for s in on_kernels) == 1  # the compile check
    if native_on:  # the rows come through ADBC: nothing else on the sqlite3 connection
        assert len(on_kernels) == 1, on_kernels
    else:  # rowid bounds (each subquery alone reads the b-tree end) and one chunk
        assert len(on_kernels) == 3, on_kernels


@pytest.mark.parametrize("native_on", [True, False], ids=["adbc", "sqlite3"])
def test_bad_time_rows_counted_and_gpu_op_ids_stay_consecutive(
        native_on: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if native_on:
        pytest.importorskip("adbc_driver_sqlite")
    path = tmp_path / "bad_times.sqlite"
    shutil.copyfile(real(), path)
    con = sqlite3.connect(path)
    con.execute(f"UPDATE {KERNEL} SET start = start || ' ns' WHERE rowid % 3 = 0")
    con.commit()
    n_bad, n_all = con.execute(f"SELECT sum(typeof(start) = 'text'), count(*) FROM {KERNEL}"
                               ).fetchone()
    n_other = sum(con.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in (
        "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET",
        "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION"))
    con.close()
    assert 0 < n_bad < n_all
    monkeypatch.setenv(native.ENV, "1" if native_on else "0")
    store = Store(threads=1)
    (rep,) = read_all([path], store)
    assert rep.status == "partial"
    assert rep.problems[0].startswith(f"partial: {n_bad:,} row(s) of {KERNEL} skipped")
    lo, hi, n, k = store.sql("SELECT min(gpu_op_id), max(gpu_op_id), count(*),"
                             " count(*) FILTER (kind = 'kernel') FROM gpu_ops").fetchall()[0]
    assert k == n_all - n_bad
    assert n == k + n_other and hi - lo + 1 == n  # no gap where the bad rows were


def test_scratch_tables_stay_outside_the_compressed_catalog() -> None:
    store = Store(compress=True)
    name = store.scratch("_probe")
    assert name == f"{SCRATCH_DB}.main._probe"
    store.sql(f"CREATE TABLE {name} AS SELECT range AS x FROM range(3)")
    store.sql("CREATE TABLE _beside AS SELECT 1 AS y")  # unqualified: the compressed one
    where = dict(store.sql("SELECT table_name, database_name FROM duckdb_tables()"
                           " WHERE table_name IN ('_probe', '_beside')").fetchall())
    assert where == {"_probe": SCRATCH_DB, "_beside": "cv"}
    other = cursor_of(store.con)  # a second cursor finds both unqualified
    assert other.execute("SELECT sum(x) FROM _probe").fetchall() == [(3,)]
    assert other.execute("SELECT y FROM _beside").fetchall() == [(1,)]
    store.compact()
    assert Store(compress=False).scratch("_probe") == "_probe"

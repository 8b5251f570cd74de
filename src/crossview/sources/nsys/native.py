"""Native SQLite → Arrow fetch for nsys exports: the ADBC SQLite driver (optional extra
`crossview[nsys-native]`, package `adbc-driver-sqlite`), chosen at run time.

The driver runs the same SELECT as the stdlib path inside C and hands out Arrow record
batches, so no Python object is made per row (1 M kernels + 1 M API rows: the stdlib fetch is
the reader's largest step; see bench/README.md). DuckDB's own sqlite extension would be
faster still, but the registry's `duckdb-ext-sqlite` exists only for DuckDB releases older
than ours and DuckDB refuses an extension built for another version (decision 0340).

Absent driver, `CROSSVIEW_NSYS_NATIVE=0`, or any driver error: the caller falls back to
Python's `sqlite3` (sources/nsys/fetch.py), which gives the same store.
"""

from __future__ import annotations

import contextlib
import contextvars
import os
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa

from crossview.sources.nsys.schema_probe import CHECK_PAGES

ENV = "CROSSVIEW_NSYS_NATIVE"
BATCH_ROWS = 65_536  # rows per Arrow batch the driver hands out (its default is 1,024)

# the open native connection of the export being read (one reader per context: the MCP
# server reads in worker threads)
_CON: contextvars.ContextVar[Connection | None] = contextvars.ContextVar(
    "nsys_native", default=None)


def wanted() -> bool:
    """The native path is on unless CROSSVIEW_NSYS_NATIVE=0."""
    return os.environ.get(ENV, "1") != "0"


class Connection:
    """An open ADBC SQLite database and connection (the driver manager's low-level API: its
    DB-API module imports `pyarrow.dataset`, 0.1–0.25 s of start-up per read)."""

    def __init__(self, db: Any, con: Any) -> None:
        self.db = db
        self.con = con

    def query(self, sql: str, batch_rows: int | None = None) -> tuple[Any, pa.RecordBatchReader]:
        """Run `sql`; the statement (close it after the reader) and its Arrow batches."""
        # lazy: optional dependency (adbc_driver_manager: extra `nsys-native`)
        from adbc_driver_manager import AdbcStatement

        stmt = AdbcStatement(self.con)
        try:
            if batch_rows:
                stmt.set_options(**{"adbc.sqlite.query.batch_rows": str(batch_rows)})
            stmt.set_sql_query(sql)
            handle, _ = stmt.execute_query()
            return stmt, pa.RecordBatchReader.from_stream(handle)
        except BaseException:
            stmt.close()
            raise

    def close(self) -> None:
        try:
            self.con.close()
        finally:
            self.db.close()


def connect(path: Path) -> Connection | None:
    """Open `path` read-only and immutable through ADBC; None when the driver is absent,
    turned off, or cannot open the file (the stdlib path then reads it)."""
    if not wanted():
        return None
    try:
        # lazy: optional dependency (adbc_driver_sqlite: extra `nsys-native`)
        import adbc_driver_sqlite
        from adbc_driver_manager import AdbcConnection
    except ImportError:
        return None
    uri = f"file:{Path(path).resolve().as_posix()}?mode=ro&immutable=1"
    try:
        db = adbc_driver_sqlite.connect(uri)
    except Exception:  # noqa: BLE001 — any driver failure means: use the stdlib path
        return None
    try:
        con = Connection(db, AdbcConnection(db))
    except Exception:  # noqa: BLE001
        db.close()
        return None
    try:
        stmt, reader = con.query(CHECK_PAGES)  # corrupt pages fail the fetch, as in sqlite3
        reader.close()
        stmt.close()
    except Exception:  # noqa: BLE001
        con.close()
        return None
    return con


def current() -> Connection | None:
    return _CON.get()


def use(con: Connection | None) -> contextvars.Token[Connection | None]:
    return _CON.set(con)


def reset(token: contextvars.Token[Connection | None]) -> None:
    con = _CON.get()
    _CON.reset(token)
    if con is not None:
        with contextlib.suppress(Exception):  # closing a read-only handle: nothing to report
            con.close()


class NotIntegers(ValueError):
    """A column of the raw fetch holds something other than integers or NULL."""


def insert(con: Connection, sql: str, duck: duckdb.DuckDBPyConnection, dest: str, width: int,
           null: int, ok: str | None = None, strict: bool = False) -> int:
    """Stream the rows of `sql` (integer columns named c0 … c{width-1}, NULL sent as `null`)
    into DuckDB table `dest`, one Arrow batch at a time. Returns the row count.

    `ok`: a DuckDB expression over c0 … (NULL already restored) appended as the last column
    (the time check of a raw fetch). `strict`: the columns are raw SQLite values, not cast;
    unless every one arrives as int64 (the driver types a column from its first batch and
    fails on a later value of another type) this raises, and the caller fetches with casts."""
    stmt, reader = con.query(sql, BATCH_ROWS)
    try:
        if strict and any(f.type not in (pa.int64(), pa.null()) for f in reader.schema):
            raise NotIntegers(str(reader.schema))
        cols = ", ".join(f"nullif(c{i}, {null}) AS c{i}" for i in range(width))
        src = f"SELECT {cols} FROM _nsys_native"
        if ok:
            src = f"SELECT *, {ok} FROM ({src})"
        before = _count(duck, dest)
        duck.register("_nsys_native", reader)
        try:
            duck.execute(f"INSERT INTO {dest} {src}")
        finally:
            duck.unregister("_nsys_native")
        return _count(duck, dest) - before
    finally:
        reader.close()  # the stream before its statement
        stmt.close()


def _count(duck: duckdb.DuckDBPyConnection, table: str) -> int:
    return int(duck.execute(f"SELECT count(*) FROM {table}").fetchall()[0][0])

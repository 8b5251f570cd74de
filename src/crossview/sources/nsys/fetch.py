"""SQLite → DuckDB staging in rowid chunks, without a Python object per row for integer data.

Python's `sqlite3` hands rows out as tuples; `numpy.fromiter` over the chained cursor consumes
them one value at a time, so a chunk of integer columns becomes one int64 array without any
list of rows (measured: ~0.7 M rows/s of 13 columns on this machine, ~2× slower than the ADBC
SQLite driver). When that driver is installed (sources/nsys/native.py) integer-only tables
go through it instead, as Arrow batches; this path stays the fallback. Text columns (NVTX
`text`) are the exception: they come in `fetchmany` batches. NULL travels as a sentinel and
becomes an Arrow null again. DuckDB's own sqlite extension is not used: it downloads itself at
run time (design.md), and the registry has none for our DuckDB version (decision 0340).
"""

from __future__ import annotations

import contextvars
import itertools
import sqlite3

import duckdb
import numpy as np
import pyarrow as pa

from crossview.sources.nsys import native

NULL = -(2**63)  # SQLite integers are int64; this value is never a timestamp or an id
CHUNK_ROWS = 1_000_000
# A row's times are believed when both are stored as integers (typeof, before any cast: text
# '123' or a blob would otherwise cast to a number), start ≥ 0, end ≥ start and both below
# 2^62 ns (146 years: room for sums of durations in int64). NVTX marks have no end.
_TIME_OK = ("typeof(start) = 'integer' AND start >= 0 AND start < 4611686018427387904"
            ' AND (("end" IS NULL) OR (typeof("end") = \'integer\' AND "end" >= start'
            ' AND "end" < 4611686018427387904))')
# the same check in DuckDB over a raw fetch's columns, where every value arrived as an
# integer or NULL (native.insert strict): typeof() is then 'integer' wherever not NULL
_TIME_OK_DUCK = ("coalesce({s} >= 0 AND {s} < 4611686018427387904 AND ({e} IS NULL"
                 " OR ({e} >= {s} AND {e} < 4611686018427387904)), false)::BIGINT")
# rows left out per table by the check above, for the reader to report (one reader per
# context: the MCP server reads in worker threads)
_SKIPPED: contextvars.ContextVar[dict[str, int] | None] = contextvars.ContextVar(
    "nsys_skipped", default=None)


def collect_skipped() -> dict[str, int]:
    """Start counting rows left out for bad times; returns the dict stage() fills."""
    d: dict[str, int] = {}
    _SKIPPED.set(d)
    return d


def _drop_bad_times(duck: duckdb.DuckDBPyConnection, table: str, dest: str,
                    cols: list[str]) -> int:
    """Count the staged rows whose times fail `_TIME_OK` (column `_ok` = 0) for the reader to
    report, keep the others in order (their rowids stay 0 … n-1: GPU op ids are numbered by
    them) and drop `_ok`; returns that count. One SQLite pass: the check is a fetched column.
    `dest`: a temp table, or a qualified scratch table (a prefetch) that stays one."""
    bad = int(duck.execute(f"SELECT count(*) FROM {dest} WHERE _ok = 0").fetchall()[0][0])
    if bad:
        d = _SKIPPED.get()
        if d is not None:
            d[table] = d.get(table, 0) + bad
        keep = ", ".join(f'"{c}"' for c in cols)
        temp = "" if "." in dest else "TEMP "
        duck.execute(f"CREATE OR REPLACE {temp}TABLE {dest} AS SELECT {keep} FROM {dest}"
                     " WHERE _ok <> 0 ORDER BY rowid")
    else:
        duck.execute(f"ALTER TABLE {dest} DROP COLUMN _ok")
    return bad


def timed_ints(ints: dict[str, str]) -> tuple[dict[str, str], bool]:
    """`ints` plus the time check `_ok` when they are a timed activity table's (start, end):
    rows failing it are staged with _ok = 0, counted, then dropped."""
    if ints.get("s") == "start" and ints.get("e") == "end":
        return {**ints, "_ok": f"coalesce({_TIME_OK}, 0)"}, True
    return ints, False


def stage(
    src: sqlite3.Connection,
    duck: duckdb.DuckDBPyConnection,
    table: str,
    dest: str,
    ints: dict[str, str],
    texts: dict[str, str] | None = None,
    where: str = "",
    prefetched: tuple[str, int] | None = None,
) -> int:
    """Copy ``SELECT <ints>, <texts> FROM table [WHERE where]`` into DuckDB temp table ``dest``.

    ``ints``/``texts`` map an output column to a SQLite expression. Returns the row count.
    ``prefetched``: (scratch table, rows) the same SELECT already filled on another thread
    (sources/nsys/prefetch.py); it then stays the staging table, found as ``dest``.
    """
    texts = texts or {}
    names = [*ints, *texts]
    ints, timed = timed_ints(ints)
    if prefetched is not None:
        dest, n = prefetched
    else:
        n = _stage(src, duck, table, dest, ints, texts, where)
    return n - _drop_bad_times(duck, table, dest, names) if timed else n


def compile_check(src: sqlite3.Connection, table: str, ints: dict[str, str],
                  texts: dict[str, str] | None = None, where: str = "") -> None:
    """Compile the fetch's SELECT (LIMIT 0): a column the table lacks (a view in its place)
    fails here, as a sqlite3 error, whichever path then fetches the rows."""
    exprs = _exprs(ints, texts or {})
    src.execute(f'SELECT {", ".join(exprs)} FROM "{table}"'
                + (f" WHERE {where}" if where else "") + " LIMIT 0").fetchall()


def _exprs(ints: dict[str, str], texts: dict[str, str]) -> list[str]:
    return ([f"coalesce(CAST(({e}) AS INTEGER), {NULL})" for e in ints.values()]
            + [f"CAST(({e}) AS TEXT)" for e in texts.values()])


def create(duck: duckdb.DuckDBPyConnection, dest: str, ints: dict[str, str],
           texts: dict[str, str] | None = None) -> None:
    """The empty staging table: BIGINT per int column, VARCHAR per text column; TEMP unless
    `dest` is qualified (a scratch table another cursor fills)."""
    cols = ", ".join([f'"{name}" BIGINT' for name in ints]
                     + [f'"{name}" VARCHAR' for name in texts or {}])
    temp = "" if "." in dest else "TEMP "
    duck.execute(f"CREATE OR REPLACE {temp}TABLE {dest} ({cols})")


def native_fetch(con: native.Connection, duck: duckdb.DuckDBPyConnection, table: str, dest: str,
                 ints: dict[str, str], where: str = "") -> int | None:
    """Integer columns through the ADBC connection `con` into the empty table `dest`; None
    when the driver could not read them (`dest` emptied: the stdlib path then reads them).
    First the raw values with the time check in DuckDB (SQLite evaluating typeof() and a cast
    per value was a third of the fetch); a value not stored as an integer sends the table to
    the checked SELECT, whose casts and typeof() decide as before."""
    tail = f' FROM "{table}"' + (f" WHERE {where}" if where else "") + " ORDER BY rowid"
    raw = [e for name, e in ints.items() if name != "_ok"]
    names = [name for name in ints if name != "_ok"]
    ok = (_TIME_OK_DUCK.format(s=f"c{names.index('s')}", e=f"c{names.index('e')}")
          if "_ok" in ints else None)
    exprs = _exprs(ints, {})
    for sql, width, check, strict in (
            (", ".join(f"{e} AS c{i}" for i, e in enumerate(raw)), len(raw), ok, True),
            (", ".join(f"{e} AS c{i}" for i, e in enumerate(exprs)), len(exprs), None, False)):
        try:
            return native.insert(con, f"SELECT {sql}{tail}", duck, dest, width, NULL,
                                 ok=check, strict=strict)
        except Exception:  # noqa: BLE001 — not integers, or any driver failure: the next
            duck.execute(f"DELETE FROM {dest}")  # SELECT, then the stdlib path
    return None


def _stage(src: sqlite3.Connection, duck: duckdb.DuckDBPyConnection, table: str, dest: str,
           ints: dict[str, str], texts: dict[str, str], where: str) -> int:
    create(duck, dest, ints, texts)
    exprs = _exprs(ints, texts)
    cond = f" AND ({where})" if where else ""
    compile_check(src, table, ints, texts, where)
    con = native.current()
    if con is not None and not texts:
        n = native_fetch(con, duck, table, dest, ints, where)
        if n is not None:
            return n
    # two subqueries: SQLite reads min() or max() alone off the b-tree, both in one
    # SELECT by scanning the whole table
    lo, hi = src.execute(f'SELECT (SELECT min(rowid) FROM "{table}"),'
                         f' (SELECT max(rowid) FROM "{table}")').fetchone()
    if lo is None:
        return 0
    sql = (f'SELECT {", ".join(exprs)} FROM "{table}" WHERE rowid >= ? AND rowid < ?{cond}')
    n = 0
    for a in range(int(lo), int(hi) + 1, CHUNK_ROWS):
        cur = src.execute(sql, (a, a + CHUNK_ROWS))
        part = _ints(cur, list(ints)) if not texts else _mixed(cur, list(ints), list(texts))
        if part.num_rows:
            duck.register("_nsys_chunk", part)
            duck.execute(f"INSERT INTO {dest} SELECT * FROM _nsys_chunk")
            duck.unregister("_nsys_chunk")
            n += part.num_rows
    return n


def _ints(cur: sqlite3.Cursor, names: list[str]) -> pa.Table:
    flat = np.fromiter(itertools.chain.from_iterable(cur), dtype=np.int64)
    arr = flat.reshape(-1, len(names))
    return pa.table({n: _col(arr[:, i]) for i, n in enumerate(names)})


def _mixed(cur: sqlite3.Cursor, ints: list[str], texts: list[str]) -> pa.Table:
    k = len(ints)
    parts: list[pa.Table] = []
    while True:
        rows = cur.fetchmany(100_000)
        if not rows:
            break
        cols = list(zip(*rows, strict=True))
        data = {n: _col(np.asarray(cols[i], dtype=np.int64)) for i, n in enumerate(ints)}
        data.update({n: pa.array(cols[k + j], pa.string()) for j, n in enumerate(texts)})
        parts.append(pa.table(data))
    if not parts:
        return pa.table({**{n: pa.array([], pa.int64()) for n in ints},
                         **{n: pa.array([], pa.string()) for n in texts}})
    return pa.concat_tables(parts)


def _col(a: np.ndarray) -> pa.Array:
    a = np.ascontiguousarray(a)
    null = a == NULL
    return pa.array(a, mask=null) if null.any() else pa.array(a)


def strings(src: sqlite3.Connection, duck: duckdb.DuckDBPyConnection) -> int:
    """StringIds → DuckDB temp table `_nsys_str(id, value)` (the names dictionary)."""
    return stage(src, duck, "StringIds", "_nsys_str", {"id": "id"}, {"value": "value"})

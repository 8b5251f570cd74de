"""Host events of the parsed table `ev` as `_host`: integers only, sorted for the nesting.

`_host` holds one row per host event: thread and label ids, start and duration in ns, the
correlation id and `er`, the event's rowid in `ev` (its strings and recorded inputs stay in
`ev` and are fetched by it only where some exist). Sorted (thread, start, longest first; label
and correlation break ties, so the order, hence nesting and op ids, is the same on every run).
Sorting integers instead of the events' strings is what keeps this step cheap
(docs/decisions/0560-kineto-integer-host-table.md). Thread ids number the distinct (pid, tid)
in order, label ids the distinct (kind, name), as `_threads` and `_labels` list them.
Up to `kineto_host_sort_rows` host events the order is computed in numpy from the file's own,
nearly sorted order (host_order.py) and the sorted columns are kept for the nesting, which
then needs no read back, and for the few queries that read `_host` (an Arrow table registered
on the connection, `HostTable.rows_sql`); past it DuckDB sorts (it can spill, numpy cannot).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import duckdb
import numpy as np
import numpy.typing as npt
import pyarrow as pa

from crossview.knowledge.thresholds import defaults
from crossview.sources.kineto import categories as C
from crossview.sources.kineto.host_order import host_order
from crossview.store.store import scratch_of

_HOST = C.IS_HOST
# the host events' distinct (pid, tid, cat, name): a few thousand rows at most in a real trace
_KEYS_SQL = (
    "CREATE OR REPLACE TEMP TABLE _keys AS SELECT coalesce(pid, '') AS pid,"
    " coalesce(tid, '') AS tid, cat, coalesce(name, '') AS name, count(*) AS n"
    f" FROM ev WHERE {_HOST} GROUP BY ALL"
)
_THREADS_SQL = (
    "CREATE OR REPLACE TABLE __SCRATCH___threads AS SELECT pid, tid,"
    " CAST(row_number() OVER (ORDER BY pid, tid) - 1 AS BIGINT) AS thread"
    " FROM (SELECT DISTINCT pid, tid FROM _keys)"
)
_LABELS_SQL = (
    "CREATE OR REPLACE TABLE __SCRATCH___labels AS SELECT kind, name,"
    " CAST(row_number() OVER (ORDER BY kind, name) - 1 AS BIGINT) AS label"
    f" FROM (SELECT DISTINCT {C.HOST_KIND_SQL} AS kind, name FROM _keys)"
)
_KEYMAP_SQL = (
    "CREATE OR REPLACE TEMP TABLE _keymap AS SELECT k.pid, k.tid, k.cat, k.name, t.thread,"
    " l.label FROM _keys k JOIN _threads t USING (pid, tid)"
    f" JOIN _labels l ON l.kind = {C.HOST_KIND_SQL.replace('cat', 'k.cat')} AND l.name = k.name"
)
# a host event with recorded inputs (record_shapes=True, collective sizes) to keep
ARGS_SQL = ('args."Input Dims" IS NOT NULL OR args."Input type" IS NOT NULL'
            ' OR TRY_CAST(args."In msg nelems" AS BIGINT) IS NOT NULL'
            ' OR TRY_CAST(args."Group size" AS INTEGER) IS NOT NULL OR args.dtype IS NOT NULL')


def _scratch(con: duckdb.DuckDBPyConnection, sql: str) -> str:
    """`_threads` / `_labels` made in the store's scratch catalog (the GPU insert's cursor
    reads them; no checkpoint compresses them)."""
    return sql.replace("__SCRATCH__", scratch_of(con, "")) if "__SCRATCH__" in sql else sql


I64 = npt.NDArray[np.int64]
_ORDER = "thread, start_ns, dur_ns DESC, label, correlation NULLS LAST, er"
_NP = "_host_np"  # the numpy path's sorted rows, an Arrow table registered on the connection


@dataclass(frozen=True)
class Sorted:
    """`_host`'s columns the nesting reads, in its row order (the numpy path only)."""
    thread: I64
    start: I64
    dur: I64
    label: I64
    corr: I64  # the correlation id, any value where `no_corr`
    no_corr: npt.NDArray[np.bool_]  # the correlation id is NULL


@dataclass(frozen=True)
class HostTable:
    n: int  # rows of `_host`
    threads: list[tuple[str, str]]  # (pid, tid) by thread id
    labels: list[tuple[str, str]]  # (kind, name) by label id
    cols: Sorted | None = None  # kept when numpy sorted them (n ≤ kineto_host_sort_rows)

    @property
    def rows_sql(self) -> str:
        """`_host`'s rows with `hr`, each row's position (op id = op_base + hr): the Arrow
        table registered on the reader's connection (numpy path), else the DuckDB table."""
        return _NP if self.cols is not None else "(SELECT rowid AS hr, * FROM _host)"

    def drop(self, con: duckdb.DuckDBPyConnection) -> None:
        if self.cols is not None:
            con.unregister(_NP)
        else:
            con.execute("DROP TABLE _host")

    def name_params(self) -> dict[str, Any]:
        """List parameters that turn thread and label ids back into strings ($pids[thread+1])."""
        return {"pids": [p for p, _ in self.threads], "tids": [t for _, t in self.threads],
                "kinds": [k for k, _ in self.labels], "names": [nm for _, nm in self.labels]}


def build(con: duckdb.DuckDBPyConnection, ns: str, dur: str, sort_rows: int | None = None
          ) -> HostTable:
    """`_host`, `_threads` and `_labels` from `ev`; `ns`/`dur` turn ts/dur into integer ns.
    `sort_rows` overrides `kineto_host_sort_rows` (tests take either path)."""
    limit = defaults().kineto_host_sort_rows if sort_rows is None else sort_rows
    n = int(con.execute(f"SELECT count(*) FROM ev WHERE {_HOST}").fetchall()[0][0])
    cols = None
    if n <= limit:
        cols = _sort_in_numpy(con, ns, dur)
    else:
        for sql in (_KEYS_SQL, _THREADS_SQL, _LABELS_SQL, _KEYMAP_SQL):
            con.execute(_scratch(con, sql))
        rows = f"""
            SELECT m.thread, m.label, {ns} AS start_ns, {dur} AS dur_ns,
                   TRY_CAST(e.args.correlation AS BIGINT) AS correlation, e.rowid AS er
            FROM ev e JOIN _keymap m ON m.pid = coalesce(e.pid, '')
                 AND m.tid = coalesce(e.tid, '') AND m.cat = e.cat
                 AND m.name = coalesce(e.name, '')
            WHERE e.{_HOST}"""
        con.execute(f"CREATE OR REPLACE TABLE {scratch_of(con, '_host')} AS {rows}"
                    f" ORDER BY {_ORDER}")
        con.execute("DROP TABLE _keymap")
    con.execute("DROP TABLE _keys")
    threads = con.execute("SELECT pid, tid FROM _threads ORDER BY thread").fetchall()
    labels = con.execute("SELECT kind, name FROM _labels ORDER BY label").fetchall()
    return HostTable(n, threads, labels, cols)


# the numpy path's keys: each distinct (pid, tid, cat, name) with the rows of `ev` holding it
# (the four strings hashed once per event; the SQL path's join back on them hashes them again)
_GROUPS_SQL = (
    "SELECT coalesce(pid, '') AS pid, coalesce(tid, '') AS tid, cat,"
    f" coalesce(name, '') AS name, list(rowid) AS rows FROM ev WHERE {_HOST} GROUP BY ALL"
)
_GROUP_IDS_SQL = (
    "SELECT t.thread, l.label FROM _keys k JOIN _threads t USING (pid, tid)"
    f" JOIN _labels l ON l.kind = {C.HOST_KIND_SQL.replace('cat', 'k.cat')} AND l.name = k.name"
    " ORDER BY k.k"
)


def _ids_by_row(con: duckdb.DuckDBPyConnection) -> tuple[npt.NDArray[np.int32], I64, I64]:
    """Each row of `ev`'s group (by rowid; undefined off the host events) and each group's
    thread and label id, with `_keys` (k: the group's position), `_threads` and `_labels`
    made as the SQL path makes them: one GROUP BY of the host events instead of a GROUP BY
    and a 4-string join. The caller looks ids up through the groups (a few hundred): one
    scatter and one gather per row instead of two of each."""
    g = con.sql(_GROUPS_SQL).to_arrow_table()
    keys = g.drop_columns(["rows"]).append_column(
        "k", pa.array(np.arange(g.num_rows, dtype=np.int64)))
    con.register("_groups", keys)
    try:
        con.execute("CREATE OR REPLACE TEMP TABLE _keys AS SELECT * FROM _groups")
    finally:
        con.unregister("_groups")
    for sql in (_THREADS_SQL, _LABELS_SQL):
        con.execute(_scratch(con, sql))
    ids = con.execute(_GROUP_IDS_SQL).fetchnumpy()
    if len(ids["thread"]) != g.num_rows:  # each group has its thread and label, by construction
        raise RuntimeError(f"host keys: {len(ids['thread'])} ids for {g.num_rows} groups")
    lists = g.column("rows").combine_chunks()
    # offsets and values, not ListArray.flatten(): that imports pyarrow.compute (~0.06 s)
    at = lists.offsets.to_numpy()
    er = lists.values.to_numpy()[at[0]:at[-1]]
    group = np.empty(int(er.max()) + 1 if len(er) else 0, dtype=np.int32)
    group[er] = np.repeat(np.arange(len(lists), dtype=np.int32), np.diff(at))
    return (group, np.asarray(ids["thread"], dtype=np.int64),
            np.asarray(ids["label"], dtype=np.int64))


def _sort_in_numpy(con: duckdb.DuckDBPyConnection, ns: str, dur: str) -> Sorted:
    """The host events in host_order's order, registered on `con` as the Arrow table
    `_host_np` (never copied into a DuckDB table: the few queries that read it scan the
    arrays, docs/decisions/0681); its columns kept."""
    group_of, thread_ids, label_ids = _ids_by_row(con)
    # via Arrow: faster than fetchnumpy (0.7 M rows: 0.12 vs 0.16 s)
    got = con.sql(f"SELECT {ns} AS start_ns, {dur} AS dur_ns,"
                  " coalesce(TRY_CAST(args.correlation AS BIGINT), 0) AS corr,"
                  " TRY_CAST(args.correlation AS BIGINT) IS NULL AS no_corr, rowid AS er"
                  f" FROM ev WHERE {_HOST}").to_arrow_table()
    c = {k: got.column(k).to_numpy() for k in got.column_names}
    del got
    group = group_of[c["er"]]
    c["thread"], c["label"] = thread_ids[group], label_ids[group]
    del group, group_of
    order = host_order(c["thread"], c["start_ns"], c["dur_ns"], c["label"], c["corr"],
                       c["no_corr"], c["er"])
    c = {k: v[order] for k, v in c.items()}
    con.register(_NP, pa.table({
        "hr": np.arange(len(order), dtype=np.int64), "thread": c["thread"],
        "label": c["label"], "start_ns": c["start_ns"], "dur_ns": c["dur_ns"],
        "correlation": pa.array(c["corr"], mask=c["no_corr"]), "er": c["er"],
    }))
    return Sorted(c["thread"], c["start_ns"], c["dur_ns"], c["label"], c["corr"], c["no_corr"])


def insert_args(con: duckdb.DuckDBPyConnection, artifact_id: int, op_base: int,
                host: HostTable) -> None:
    """op_args ← the recorded inputs of host events, as read (op id = op_base + its row in
    `_host`, as host_ops numbers them), in op id order."""
    con.execute(
        f"""
        INSERT INTO op_args (artifact_id, op_id, on_gpu, input_dims, input_types,
            concrete_inputs, in_nelems, out_nelems, group_size, dtype)
        SELECT $a, {op_base} + h.hr, false, e.args."Input Dims", e.args."Input type",
               e.args."Concrete Inputs", TRY_CAST(e.args."In msg nelems" AS BIGINT),
               TRY_CAST(e.args."Out msg nelems" AS BIGINT),
               TRY_CAST(e.args."Group size" AS INTEGER), e.args.dtype
        FROM {host.rows_sql} h
             JOIN (SELECT rowid AS er, args FROM ev WHERE {_HOST} AND ({ARGS_SQL})) e USING (er)
        ORDER BY h.hr
        """,
        {"a": artifact_id},
    )

"""Which runtime/driver call launched each GPU op of an nsys export, as integers.

A GPU op links to the call with the same correlationId *within its process* (CUPTI numbers
correlations per process); when several calls of a process share one id, the outermost wins,
then the first, and the op replays a graph when any of them is a graph launch. `stage` reads
the calls while the host events are still staged as integers (`_host` beside its nesting
`_nestres`), so no host_ops string (pid, kind, name) is scanned or hashed again; `link`
numbers the GPU side against it into temp table `_nsys_link(rid, op_id, graph)`.

CUPTI hands out correlation ids densely per process, so the winners go into a direct-address
table in numpy (slot = process rank × id span + id − lowest id): one scatter-min over the calls,
one gather per GPU op, no hash table of a million keys (5 M kernels: the DuckDB GROUP BY and
join took 3.6 s of CPU). When the ids are spread wider than `nsys_link_max_slots_per_call`
slots per call, the same link is made in SQL (`_nsys_launch`, then a join).
"""

from __future__ import annotations

from dataclasses import dataclass

import duckdb
import numpy as np
import numpy.typing as npt
import pyarrow as pa

from crossview.knowledge import api_roles
from crossview.knowledge.thresholds import defaults

# 2^44: min(depth · 2^44 + op_id) picks the outermost launch call, then the first
_DEPTH_KEY = 17592186044416
PID_BITS = "((gtid >> 24) & 16777215)"  # the process of an nsys global thread/process id
_NONE = np.iinfo(np.int64).max  # an empty slot
_CHUNK = 1 << 20  # rows per Arrow batch read back from DuckDB

I64 = npt.NDArray[np.int64]


@dataclass
class Launches:
    """The launch call of every (process, correlationId), in a direct-address table."""

    pids: I64  # the processes, sorted
    lo: int  # the lowest correlation id
    span: int  # ids lo … lo + span - 1
    best: I64  # per slot: depth · 2^44 + op id of the winning call, or _NONE
    graph: npt.NDArray[np.bool_]  # per slot: some call with that key launches a graph

    def slots(self, pid: I64, corr: I64) -> tuple[I64, npt.NDArray[np.bool_]]:
        """Each (pid, corr)'s slot, and whether it has one (NULL = -1 has none)."""
        rank = np.searchsorted(self.pids, pid)
        ok = (corr >= self.lo) & (corr < self.lo + self.span) & (rank < len(self.pids))
        ok &= self.pids[np.minimum(rank, len(self.pids) - 1)] == pid
        return np.where(ok, rank * self.span + (corr - self.lo), 0), ok


def _calls(labels: str) -> str:
    return (
        f"FROM (SELECT rowid AS rid, gtid, label, correlation FROM _host) h"
        " POSITIONAL JOIN _nestres r"
        f" JOIN (SELECT label, name IN (SELECT unnest($graph)) AS graph FROM {labels}"
        " WHERE kind = 'runtime') l ON l.label = h.label"
        " WHERE h.correlation IS NOT NULL")


def stage(con: duckdb.DuckDBPyConnection, op_base: int, labels: str) -> Launches | None:
    """The launch calls from `_host` (op id = op_base + rowid) and `_nestres` (depth);
    `labels` (label, kind, name) says which labels are runtime calls and which launch a
    graph. None: the ids are too sparse for the table, `_nsys_launch` holds them instead."""
    graph = {"graph": api_roles.names_with_role("graph_launch")}
    n, lo, hi, pids = con.execute(
        f"SELECT count(*), min(h.correlation), max(h.correlation),"
        f" list(DISTINCT {PID_BITS.replace('gtid', 'h.gtid')}) {_calls(labels)}",
        graph).fetchall()[0]
    if not n:
        return Launches(np.zeros(0, np.int64), 0, 0, np.zeros(0, np.int64),
                        np.zeros(0, np.bool_))
    span = int(hi) - int(lo) + 1
    if len(pids) * span > defaults().nsys_link_max_slots_per_call * n:
        _stage_sql(con, op_base, labels)
        return None
    t = Launches(np.unique(np.asarray(pids, np.int64)), int(lo), span,
                 np.full(len(pids) * span, _NONE, np.int64), np.zeros(len(pids) * span, bool))
    reader = con.sql(
        f"SELECT {PID_BITS.replace('gtid', 'h.gtid')} AS pid, h.correlation AS corr,"
        f" CAST(r.depth AS BIGINT) * {_DEPTH_KEY} + {op_base} + h.rid AS key, l.graph"
        f" {_calls(labels)}", params=graph).to_arrow_reader(_CHUNK)
    for b in reader:
        slot, _ = t.slots(_np(b.column(0)), _np(b.column(1)))
        np.minimum.at(t.best, slot, _np(b.column(2)))
        g = b.column(3).to_numpy(zero_copy_only=False)
        t.graph[slot[g]] = True
    return t


def link(con: duckdb.DuckDBPyConnection, gpu: str, launches: Launches | None) -> None:
    """`_nsys_link(rid, op_id, graph)` in GPU op order, for the GPU ops of `gpu` (rid, corr,
    pid: the integer process id) that have a launch call."""
    if launches is None:
        _link_sql(con, gpu)
        return
    rids: list[I64] = []
    ops: list[I64] = []
    graphs: list[npt.NDArray[np.bool_]] = []
    if len(launches.best):
        reader = con.sql(f"SELECT rid, corr, pid FROM {gpu}"
                         " WHERE corr IS NOT NULL AND pid IS NOT NULL").to_arrow_reader(_CHUNK)
        for b in reader:
            slot, ok = launches.slots(_np(b.column(2)), _np(b.column(1)))
            best = np.where(ok, launches.best[slot], _NONE)
            hit = best != _NONE
            rids.append(_np(b.column(0))[hit])
            ops.append(best[hit] % _DEPTH_KEY)
            graphs.append(launches.graph[slot][hit])
    rid = np.concatenate(rids) if rids else np.zeros(0, np.int64)
    order = np.argsort(rid, kind="stable") if np.any(np.diff(rid) < 0) else slice(None)
    found = pa.table({
        "rid": pa.array(rid[order], pa.int64()),
        "op_id": pa.array(np.concatenate(ops)[order] if ops else [], pa.int64()),
        "graph": pa.array(np.concatenate(graphs)[order] if graphs else [], pa.bool_())})
    con.register("_nsys_link_src", found)
    try:  # in GPU op order (an Arrow table's rows keep theirs)
        con.execute("CREATE OR REPLACE TEMP TABLE _nsys_link AS SELECT * FROM _nsys_link_src")
    finally:
        con.unregister("_nsys_link_src")


def _np(col: pa.ChunkedArray | pa.Array) -> I64:
    return np.asarray(col.to_numpy(zero_copy_only=False), dtype=np.int64)


def _stage_sql(con: duckdb.DuckDBPyConnection, op_base: int, labels: str) -> None:
    """`_nsys_launch(pid, correlation, op_id, graph)`: one row per (process, correlationId)."""
    con.execute(
        f"""
        CREATE OR REPLACE TEMP TABLE _nsys_launch AS
        SELECT {PID_BITS.replace('gtid', 'h.gtid')} AS pid, h.correlation,
               min(CAST(r.depth AS BIGINT) * {_DEPTH_KEY} + {op_base} + h.rid)
                   % {_DEPTH_KEY} AS op_id,
               bool_or(l.graph) AS graph
        {_calls(labels)}
        GROUP BY ALL
        """,
        {"graph": api_roles.names_with_role("graph_launch")},
    )


def _link_sql(con: duckdb.DuckDBPyConnection, gpu: str) -> None:
    con.execute(
        "CREATE OR REPLACE TEMP TABLE _nsys_link AS SELECT g.rid, l.op_id, l.graph"
        f" FROM (SELECT rid, corr, pid FROM {gpu}) g"
        " JOIN _nsys_launch l ON l.correlation = g.corr AND l.pid = g.pid ORDER BY g.rid")
    con.execute("DROP TABLE _nsys_launch")

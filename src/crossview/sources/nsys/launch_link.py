"""Which runtime/driver call launched each GPU op of an nsys export, as integers.

A GPU op links to the call with the same correlationId *within its process* (CUPTI numbers
correlations per process); when several calls of a process share one id, the outermost wins,
then the first, and the op replays a graph when any of them is a graph launch. `stage` reads
the calls while the host events are still staged as integers (`_host` beside its nesting
`_nestres`), so no host_ops string (pid, kind, name) is scanned or hashed again; `link`
numbers the GPU side against it into temp table `_nsys_link(rid, op_id, graph)`.

The winners are found in numpy: each call's (process, correlationId) as one int64 key
(process rank × id span + id − lowest id), one argsort over the calls (on the in-memory host
path a stable one: the keys are a few ascending runs, one per thread), a min of (depth, op id)
and an any of "launches a graph" per run of equal keys; each GPU op then finds its key by
binary search. No hash table of a million keys (5 M kernels: the DuckDB GROUP BY and join took
3.6 s of CPU). Ids spread so wide that the key would not fit in 62 bits take the same link in
SQL (`_nsys_launch`, then a join).
"""

from __future__ import annotations

from dataclasses import dataclass

import duckdb
import numpy as np
import numpy.typing as npt
import pyarrow as pa

from crossview.knowledge import api_roles

# 2^44: min(depth · 2^44 + op_id) picks the outermost launch call, then the first
_DEPTH_KEY = 17592186044416
PID_BITS = "((gtid >> 24) & 16777215)"  # the process of an nsys global thread/process id
_KEY_LIMIT = 1 << 62  # process rank · id span must stay below (an int64 key, no overflow)
_CHUNK = 1 << 20  # rows per Arrow batch read back from DuckDB

I64 = npt.NDArray[np.int64]
_EMPTY = np.zeros(0, np.int64)


@dataclass
class Launches:
    """The launch call of every (process, correlationId) present, by sorted key."""

    pids: I64  # the processes, sorted
    lo: int  # the lowest correlation id
    span: int  # ids lo … lo + span - 1
    keys: I64  # sorted, distinct: process rank · span + id - lo
    best: I64  # per key: depth · 2^44 + op id of the winning call
    graph: npt.NDArray[np.bool_]  # per key: some call with it launches a graph

    def key(self, pid: I64, corr: I64) -> tuple[I64, npt.NDArray[np.bool_]]:
        """Each (pid, corr)'s key, and whether it can have one (a process or id outside)."""
        rank = np.searchsorted(self.pids, pid)
        ok = (corr >= self.lo) & (corr < self.lo + self.span) & (rank < len(self.pids))
        ok &= self.pids[np.minimum(rank, len(self.pids) - 1)] == pid
        return np.where(ok, rank * self.span + (corr - self.lo), 0), ok

    def find(self, pid: I64, corr: I64) -> tuple[I64, npt.NDArray[np.bool_]]:
        """Each (pid, corr)'s index into keys/best/graph, and whether it is there."""
        k, ok = self.key(pid, corr)
        at = np.searchsorted(self.keys, k)
        ok &= at < len(self.keys)
        at = np.minimum(at, len(self.keys) - 1)
        return at, ok & (self.keys[at] == k)


def _label_roles(con: duckdb.DuckDBPyConnection, labels: str
                 ) -> tuple[npt.NDArray[np.bool_], npt.NDArray[np.bool_]]:
    """By label number: is it a runtime call, does it launch a graph (`labels`: a table
    (label, kind, name))."""
    graph_names = api_roles.names_with_role("graph_launch")
    lab = con.execute(f"SELECT label, kind = 'runtime', name FROM {labels}").fetchall()
    runtime = np.zeros(max((int(r[0]) for r in lab), default=-1) + 1, np.bool_)
    graph_label = np.zeros(len(runtime), np.bool_)
    for label, is_rt, name in lab:
        runtime[label] = bool(is_rt)
        graph_label[label] = bool(is_rt) and name in graph_names
    return runtime, graph_label


def stage(con: duckdb.DuckDBPyConnection, op_base: int, labels: str) -> Launches | None:
    """The launch calls from `_host` (op id = op_base + rowid) and `_nestres` (depth);
    `labels` (label, kind, name) says which labels are runtime calls and which launch a
    graph. None: the ids are spread too wide for an int64 key; `_nsys_launch` holds them."""
    runtime, graph_label = _label_roles(con, labels)
    parts: dict[str, list[I64]] = {"pid": [], "corr": [], "best": [], "label": []}
    # no join in SQL: the labels are looked up in numpy
    reader = con.sql(
        f"SELECT {PID_BITS.replace('gtid', 'h.gtid')}, h.correlation,"
        f" CAST(r.depth AS BIGINT) * {_DEPTH_KEY} + {op_base} + h.rid, h.label"
        " FROM (SELECT rowid AS rid, gtid, label, correlation FROM _host) h"
        " POSITIONAL JOIN _nestres r WHERE h.correlation IS NOT NULL").to_arrow_reader(_CHUNK)
    for b in reader:
        label = _np(b.column(3))
        keep = runtime[label]
        for i, k in enumerate(parts):
            parts[k].append((label if i == 3 else _np(b.column(i)))[keep])
    del reader  # the connection's result, closed before the next statement
    pid, corr, best, label = (np.concatenate(v) if v else _EMPTY for v in parts.values())
    return _winners(con, pid, corr, best, graph_label[label])


def stage_arrays(con: duckdb.DuckDBPyConnection, op_base: int, labels: str, gtid: I64,
                 corr: I64, no_corr: npt.NDArray[np.bool_], depth: npt.NDArray[np.integer],
                 label: I64) -> Launches | None:
    """`stage` from `_host`'s columns and nesting held in numpy (row i: op op_base + i; the
    nsys host path of sources/nsys/host_arrays.py): the same calls, the same winners."""
    runtime, graph_label = _label_roles(con, labels)
    keep = ~no_corr & runtime[label]
    rows = np.flatnonzero(keep)
    best = depth[rows].astype(np.int64) * _DEPTH_KEY + (op_base + rows)
    return _winners(con, (gtid[rows] >> 24) & 16777215, corr[rows], best,
                    graph_label[label[rows]], runs=True)


def _winners(con: duckdb.DuckDBPyConnection, pid: I64, corr: I64, best: I64,
             graph: npt.NDArray[np.bool_], runs: bool = False) -> Launches | None:
    """The launch call per (process, correlationId) of the runtime calls given (each with its
    depth · 2^44 + op id, and whether it launches a graph). `runs`: sort by merging the
    keys' ascending runs (the in-memory host path's sizes, decision 0740)."""
    if not len(pid):
        return Launches(_EMPTY, 0, 0, _EMPTY, _EMPTY, np.zeros(0, np.bool_))
    lo = int(corr.min())
    span = int(corr.max()) - lo + 1
    # `_host` runs thread by thread: the process changes only where a run starts
    pids = np.unique(pid[np.r_[True, pid[1:] != pid[:-1]]])
    if len(pids) * span >= _KEY_LIMIT:
        _stage_sql(con, pid, corr, best, graph)
        return None
    t = Launches(pids, lo, span, _EMPTY, _EMPTY, np.zeros(0, np.bool_))
    key = corr - lo  # every call's process and id are in range by construction
    if len(pids) > 1:
        key += np.searchsorted(pids, pid) * span
    # "then the first": the op id is part of `best`. The calls come thread by thread in
    # time order: the keys are a few ascending runs, which timsort merges (1 M calls, 8
    # threads: 2 ms, quicksort 60 ms). Its buffer of n/2 indices (20 MB at 5 M), once freed,
    # raises glibc's mmap threshold and the 5 M read's peak RSS (~+100 MB): in place there
    order = np.argsort(key, kind="stable" if runs else None)
    key = key[order]
    best = best[order]
    graph = graph[order]
    new = np.r_[True, key[1:] != key[:-1]]
    if new.all():  # each (process, id) once: nothing to pick
        t.keys, t.best, t.graph = key, best, graph
        return t
    starts = np.flatnonzero(new)
    t.keys = key[starts]
    t.best = np.minimum.reduceat(best, starts)
    t.graph = np.logical_or.reduceat(graph, starts)
    return t


def link(con: duckdb.DuckDBPyConnection, gpu: str, launches: Launches | None) -> None:
    """`_nsys_link(rid, op_id, graph)` in GPU op order, for the GPU ops of `gpu` (rid, corr,
    pid: the integer process id) that have a launch call. Releases `launches`' arrays (the
    GPU inserts next hold the 5 M-kernel read's peak)."""
    if launches is None:
        _link_sql(con, gpu)
        return
    rids: list[I64] = []
    ops: list[I64] = []
    graphs: list[npt.NDArray[np.bool_]] = []
    if len(launches.keys):
        reader = con.sql(f"SELECT rid, corr, pid FROM {gpu} WHERE corr IS NOT NULL"
                         " AND pid IS NOT NULL").to_arrow_reader(_CHUNK)
        for b in reader:
            at, hit = launches.find(_np(b.column(2)), _np(b.column(1)))
            rids.append(_np(b.column(0))[hit])
            ops.append(launches.best[at[hit]] % _DEPTH_KEY)
            graphs.append(launches.graph[at[hit]])
        del reader  # the connection's result, closed before the next statement
    launches.keys = launches.best = _EMPTY
    launches.graph = np.zeros(0, np.bool_)
    rid = np.concatenate(rids) if rids else _EMPTY
    # in GPU op order: each insert batch reads its rid range, zone maps skip the rest
    # (unsorted, the 5 M-kernel read peaked at 1,399 MiB in the inserts, sorted 1,340)
    order = np.argsort(rid, kind="stable") if np.any(np.diff(rid) < 0) else slice(None)
    con.register("_nsys_link_src", pa.table({
        "rid": pa.array(rid[order], pa.int64()),
        "op_id": pa.array(np.concatenate(ops)[order] if ops else _EMPTY, pa.int64()),
        "graph": pa.array(np.concatenate(graphs)[order] if graphs else [], pa.bool_())}))
    try:  # an Arrow table's rows keep their order
        con.execute("CREATE OR REPLACE TEMP TABLE _nsys_link AS SELECT * FROM _nsys_link_src")
    finally:
        con.unregister("_nsys_link_src")


def _np(col: pa.ChunkedArray | pa.Array) -> I64:
    return np.asarray(col.to_numpy(zero_copy_only=False), dtype=np.int64)


def _stage_sql(con: duckdb.DuckDBPyConnection, pid: I64, corr: I64, best: I64,
               graph: npt.NDArray[np.bool_]) -> None:
    """`_nsys_launch(pid, correlation, op_id, graph)`: one row per (process, correlationId),
    grouped in SQL (ids too wide for one int64 key)."""
    con.register("_nsys_calls", pa.table({"pid": pa.array(pid, pa.int64()),
                                          "correlation": pa.array(corr, pa.int64()),
                                          "best": pa.array(best, pa.int64()),
                                          "graph": pa.array(graph, pa.bool_())}))
    try:
        con.execute(
            "CREATE OR REPLACE TEMP TABLE _nsys_launch AS SELECT pid, correlation,"
            f" min(best) % {_DEPTH_KEY} AS op_id, bool_or(graph) AS graph FROM _nsys_calls"
            " GROUP BY ALL")
    finally:
        con.unregister("_nsys_calls")


def _link_sql(con: duckdb.DuckDBPyConnection, gpu: str) -> None:
    con.execute(
        "CREATE OR REPLACE TEMP TABLE _nsys_link AS SELECT g.rid, l.op_id, l.graph"
        f" FROM (SELECT rid, corr, pid FROM {gpu}) g"
        " JOIN _nsys_launch l ON l.correlation = g.corr AND l.pid = g.pid ORDER BY g.rid")
    con.execute("DROP TABLE _nsys_launch")

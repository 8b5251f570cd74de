"""Host events of an nsys export → host_ops (+ frames): CUDA runtime/driver API calls (kind
'runtime'), NVTX ranges ('annotation'), OS runtime calls ('osrt').

Same contract as the Kineto reader: one DuckDB table `_host` sorted by (thread, start, dur
desc), nested and interned in bounded batches by the shared `sources/nesting_batches.py` (four
integer columns to numpy per batch, `kineto.nesting.nest`, `intern_paths`, `NodeTable`), op ids
from `store.reserve_ops`, node ids from `store.reserve_nodes`. An API call that carries a
backtrace gets its callchain frames between its parent (the enclosing NVTX range) and itself
(host_chains.py).
API names drop the `_vNNNN` version suffix nsys records (`cudaLaunchKernel_v7000` →
`cudaLaunchKernel`), as `nsys stats` prints them; that is also what api_roles.yaml lists.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field

import duckdb
import numpy as np
import numpy.typing as npt

from crossview.knowledge.thresholds import defaults
from crossview.sources.kineto.host_chunks import Chunk, split_chunks
from crossview.sources.kineto.nesting import Nesting, intern_paths
from crossview.sources.kineto.node_table import NodeTable
from crossview.sources.nesting_batches import insert_host_ops, nest_batches, nest_in_memory
from crossview.sources.nsys import enums, fetch, host_arrays, launch_link
from crossview.sources.nsys.frames_out import append_frames
from crossview.sources.nsys.host_chains import ChainFrames
from crossview.sources.nsys.schema_probe import NVTX, OSRT, RUNTIME, Probe
from crossview.store.store import ROW_GROUP_ROWS, Store

I64 = npt.NDArray[np.int64]
VERSION_SUFFIX = r"_v\d{4,5}$"
PID_SQL = "CAST((gtid >> 24) & 16777215 AS VARCHAR)"
TID_SQL = "CAST(gtid & 16777215 AS VARCHAR)"
# host_ops rows per insert (each batch compressed before the next): whole row groups,
# about a million rows
INSERT_ROWS = 9 * ROW_GROUP_ROWS
# staged by `stage`, read through view `_nsys_host` until `ingest` has built `_host`
_STAGED = ("_nsys_rt", "_nsys_nvtx", "_nsys_nvtxn", "_nsys_nvtxk", "_nsys_osrt")


@dataclass
class HostCounts:
    runtime: int = 0
    nvtx: int = 0
    osrt: int = 0
    notes: list[str] = field(default_factory=list)


def _name(alias: str, id_col: str) -> str:
    return f"coalesce({alias}.value, '(name id ' || CAST({id_col} AS VARCHAR) || ')')"


def stage(src: sqlite3.Connection, duck: duckdb.DuckDBPyConnection, p: Probe) -> HostCounts:
    """Stage every host event into temp table `_nsys_host` (integers and the kind: no name
    per row) and its names, once per distinct (kind, key), into `_nsys_hname(kind, key,
    name)`: 5 M API calls share a few hundred names."""
    c = HostCounts()
    parts: list[str] = []
    names: list[str] = []
    if p.has(RUNTIME):
        ints = {"s": "start", "e": "end", "gtid": "globalTid", "corr": "correlationId",
                "nm": "nameId", "chain": p.col(RUNTIME, "callchainId") or "NULL"}
        c.runtime = fetch.stage(src, duck, RUNTIME, "_nsys_rt", ints)
        parts.append("SELECT r.gtid, 'runtime' AS kind, r.nm AS key, r.s, r.e, r.corr, r.chain"
                     " FROM _nsys_rt r")
        names.append(
            "SELECT 'runtime' AS kind, k.nm AS key, regexp_replace("
            f"{_name('n', 'k.nm')}, '{VERSION_SUFFIX}', '') AS name"
            " FROM (SELECT DISTINCT nm FROM _nsys_rt) k LEFT JOIN _nsys_str n ON n.id = k.nm")
    if p.has(NVTX):
        text_id = p.col(NVTX, "textId")
        ints = {"s": "start", "e": "end", "gtid": "globalTid", "et": "eventType",
                "egtid": p.col(NVTX, "endGlobalTid") or "NULL", "tx": text_id or "NULL"}
        texts = {"text": "text"} if p.col(NVTX, "text") else {"text": "NULL"}
        fetch.stage(src, duck, NVTX, "_nsys_nvtx", ints, texts,
                    where=f"eventType IN ({enums.NVTX_PUSH_POP}, {enums.NVTX_START_END})")
        # a start/end range may end on another thread: it cannot nest, so only same-thread
        # ones become annotations; a range never closed has no duration
        c.nvtx, open_, cross = (int(x) for x in duck.execute(
            "SELECT count(*) FILTER (e IS NOT NULL AND (egtid IS NULL OR egtid = gtid)),"
            " count(*) FILTER (e IS NULL), count(*) FILTER (egtid IS NOT NULL AND egtid <> gtid)"
            " FROM _nsys_nvtx").fetchall()[0])
        if open_:
            c.notes.append(f"{open_:,} NVTX ranges never closed (no end time): left out")
        if cross:
            c.notes.append(f"{cross:,} NVTX start/end ranges end on another thread: left out "
                           "of the call trees")
        # a range's name is its text, else its textId's string: keyed per distinct name
        duck.execute(
            "CREATE OR REPLACE TEMP TABLE _nsys_nvtxn AS SELECT v.s, v.e, v.gtid,"
            " coalesce(v.text, n.value, '') AS name FROM _nsys_nvtx v"
            " LEFT JOIN _nsys_str n ON n.id = v.tx"
            " WHERE v.e IS NOT NULL AND (v.egtid IS NULL OR v.egtid = v.gtid)")
        duck.execute(
            "CREATE OR REPLACE TEMP TABLE _nsys_nvtxk AS SELECT name,"
            " CAST(row_number() OVER (ORDER BY name) AS BIGINT) AS key"
            " FROM (SELECT DISTINCT name FROM _nsys_nvtxn)")
        parts.append("SELECT v.gtid, 'annotation' AS kind, k.key, v.s, v.e,"
                     " NULL::BIGINT AS corr, NULL::BIGINT AS chain"
                     " FROM _nsys_nvtxn v JOIN _nsys_nvtxk k USING (name)")
        names.append("SELECT 'annotation' AS kind, key, name FROM _nsys_nvtxk")
    if p.has(OSRT):
        ints = {"s": "start", "e": "end", "gtid": "globalTid", "nm": "nameId",
                "chain": p.col(OSRT, "callchainId") or "NULL"}
        c.osrt = fetch.stage(src, duck, OSRT, "_nsys_osrt", ints)
        parts.append("SELECT o.gtid, 'osrt' AS kind, o.nm AS key, o.s, o.e,"
                     " NULL::BIGINT AS corr, o.chain FROM _nsys_osrt o")
        names.append(f"SELECT 'osrt' AS kind, k.nm AS key, {_name('n', 'k.nm')} AS name"
                     " FROM (SELECT DISTINCT nm FROM _nsys_osrt) k"
                     " LEFT JOIN _nsys_str n ON n.id = k.nm")
    if not parts:
        parts.append("SELECT NULL::BIGINT AS gtid, NULL::VARCHAR AS kind, NULL::BIGINT AS key,"
                     " NULL::BIGINT AS s, NULL::BIGINT AS e, NULL::BIGINT AS corr,"
                     " NULL::BIGINT AS chain WHERE false")
        names.append("SELECT NULL::VARCHAR AS kind, NULL::BIGINT AS key,"
                     " NULL::VARCHAR AS name WHERE false")
    duck.execute("CREATE OR REPLACE TEMP TABLE _nsys_hname AS " + " UNION ALL ".join(names))
    # a view: `ingest` reads these rows once into `_host` (a table here was a copy of every
    # host event, with a kind string per row, dropped right after); the staged tables it
    # reads stay until then (`drop_staged`)
    duck.execute(
        "CREATE OR REPLACE TEMP VIEW _nsys_host AS SELECT gtid, kind, key, s AS start_ns,"
        " greatest(coalesce(e - s, 0), 0) AS dur_ns, corr AS correlation, chain FROM ("
        + " UNION ALL ".join(parts) + ") WHERE s IS NOT NULL AND gtid IS NOT NULL")
    duck.execute("DROP TABLE IF EXISTS _nsys_nvtx")
    return c


def drop_staged(duck: duckdb.DuckDBPyConnection) -> None:
    """Drop view `_nsys_host` and the staged tables it reads."""
    duck.execute("DROP VIEW IF EXISTS _nsys_host")
    for t in _STAGED:
        duck.execute(f"DROP TABLE IF EXISTS {t}")


def ingest(store: Store, artifact_id: int, batch_rows: int | None = None
           ) -> tuple[int, launch_link.Launches | None]:
    """`_nsys_host` → host_ops and frames, nested per thread in bounded batches
    (sources/nesting_batches.py), from numpy arrays up to `nsys_host_in_memory_rows` events
    (host_arrays.py). Returns the row count and the launch calls by (process,
    correlationId) for the GPU side (launch_link.py). `batch_rows` overrides the threshold
    (tests force tiny batches)."""
    con = store.con
    con.execute(
        "CREATE OR REPLACE TEMP TABLE _threads AS SELECT gtid,"
        " CAST(dense_rank() OVER (ORDER BY gtid) - 1 AS BIGINT) AS thread"
        " FROM (SELECT DISTINCT gtid FROM _nsys_host)")
    # labels per distinct (kind, name) of the events present, numbered in (kind, name)
    # order; _keylabel maps each (kind, key) to its label (two keys may share a name)
    con.execute(
        "CREATE OR REPLACE TEMP TABLE _keylabel AS SELECT n.kind, n.key, n.name FROM"
        " _nsys_hname n SEMI JOIN (SELECT DISTINCT kind, key FROM _nsys_host) h"
        " ON h.kind = n.kind AND h.key IS NOT DISTINCT FROM n.key")
    con.execute(
        "CREATE OR REPLACE TEMP TABLE _labels AS SELECT kind, name,"
        " CAST(row_number() OVER (ORDER BY kind, name) - 1 AS BIGINT) AS label"
        " FROM (SELECT DISTINCT kind, name FROM _keylabel)")
    rows = ("SELECT t.thread, l.label, h.gtid, h.start_ns, h.dur_ns, h.correlation, h.chain"
            " FROM _nsys_host h JOIN _threads t USING (gtid)"
            " JOIN _keylabel k ON k.kind = h.kind AND k.key IS NOT DISTINCT FROM h.key"
            " JOIN _labels l ON l.kind = k.kind AND l.name = k.name"
            " ORDER BY t.thread, h.start_ns, h.dur_ns DESC")
    # up to the threshold, the sorted rows in numpy: nested, linked and inserted from arrays
    # (host_arrays.py), read straight from the sort unless backtraces (host_chains.py) read
    # `_host`; past it, bounded batches through `_host` and `_nestres`
    events, with_chain = (int(x) for x in con.execute(
        "SELECT count(*), count(chain) FROM _nsys_host").fetchall()[0])
    in_memory = events <= defaults().nsys_host_in_memory_rows
    chained = bool(with_chain) and ChainFrames.present(con)  # else no batch has a chain
    cols: host_arrays.HostCols | None = None
    if in_memory and not chained:
        cols = host_arrays.read(con, rows)
        n = len(cols.start)
    else:
        # not TEMP: the batches stream it on a second cursor, which cannot see temp tables;
        # in the store's scratch catalog, which a checkpoint leaves uncompressed.
        # No strings per row: kind and name come back through `label` at insert time
        con.execute(f"CREATE OR REPLACE TABLE {store.scratch('_host')} AS {rows}")
        n = int(con.execute("SELECT count(*) FROM _host").fetchall()[0][0])
        if in_memory:
            cols = host_arrays.read(con, "SELECT * FROM _host")
    drop_staged(con)
    con.execute("DROP TABLE _nsys_hname")
    con.execute("DROP TABLE _keylabel")
    label_rows: list[tuple[str, str]] = [(k, nm) for k, nm in con.execute(
        "SELECT kind, name FROM _labels ORDER BY label").fetchall()]
    chains = ChainFrames(con, label_rows) if chained else None
    nodes = NodeTable()

    def paths(ch: Chunk, nested: Nesting) -> I64:
        node, node_parent, node_label = intern_paths(
            nested.depth, nested.parent, ch.label, None, 0)
        level = None
        if chains is not None and (
                b := chains.apply(ch.offset, nested, ch.label, node, node_parent, node_label)):
            node, node_parent, node_label, level = (b.node, b.node_parent, b.node_label,
                                                    b.node_level)
        prov = nodes.merge(nested.depth, node, node_parent, node_label, level)
        return prov[node] if len(node) else node

    op_base = store.reserve_ops(max(n, 1))
    batch = batch_rows or defaults().kineto_nest_batch_rows
    if cols is None:
        nest_batches(store, op_base, n, batch, paths)
        launches = launch_link.stage(con, op_base, "_labels")  # while `_host`, `_nestres` are
    else:
        nested = nest_in_memory(op_base, n, paths, split_chunks(
            cols.thread, cols.start, cols.dur, cols.label, batch))
        launches = launch_link.stage_arrays(con, op_base, "_labels", cols.gtid, cols.corr,
                                            cols.no_corr, nested.depth, cols.label)
    first = store.reserve_nodes(0)
    numbered = nodes.finish(first)
    store.reserve_nodes(len(numbered.node_parent))
    append_frames(store, np.arange(first, first + len(numbered.node_parent), dtype=np.int64),
                  numbered.node_parent, numbered.node_label, [k for k, _ in label_rows],
                  [nm for _, nm in label_rows])
    if cols is None:
        insert_host_ops(store, artifact_id, op_base, PID_SQL.replace("gtid", "h.gtid"),
                        TID_SQL.replace("gtid", "h.gtid"), numbered.canon, labels="_labels",
                        batch_rows=INSERT_ROWS)
    else:
        gtids = [int(g) for (g,) in con.execute(
            "SELECT gtid FROM _threads ORDER BY thread").fetchall()]
        host_arrays.insert(store, artifact_id, op_base, cols, nested, numbered.canon, gtids,
                           label_rows)
    for t in ("_host", "_labels", "_threads"):
        con.execute(f"DROP TABLE IF EXISTS {t}")
    return n, launches

"""Host events of an nsys export → host_ops (+ frames): CUDA runtime/driver API calls (kind
'runtime'), NVTX ranges ('annotation'), OS runtime calls ('osrt').

Same contract as the Kineto reader: one DuckDB table sorted by (thread, start, dur desc), four
integer columns to numpy for nesting (`kineto.nesting.nest`), call-tree interning with
`intern_paths`, op ids from `store.reserve_ops`, node ids from `store.reserve_nodes`. An API call
that carries a backtrace (`callchainId`, `nsys profile --cudabacktrace` / `--osrt-backtrace`)
gets its callchain frames between its parent (the enclosing NVTX range) and itself.
API names drop the `_vNNNN` version suffix nsys records (`cudaLaunchKernel_v7000` →
`cudaLaunchKernel`), as `nsys stats` prints them; that is also what api_roles.yaml lists.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field

import duckdb
import numpy as np
import numpy.typing as npt
import pyarrow as pa

from crossview.sources.kineto.nesting import intern_paths, nest
from crossview.sources.nsys import enums, fetch
from crossview.sources.nsys.callchains import CHAINS
from crossview.sources.nsys.frames_out import append_frames
from crossview.sources.nsys.schema_probe import NVTX, OSRT, RUNTIME, Probe
from crossview.store.store import Store

I64 = npt.NDArray[np.int64]
VERSION_SUFFIX = r"_v\d{4,5}$"
PID_SQL = "CAST((gtid >> 24) & 16777215 AS VARCHAR)"
TID_SQL = "CAST(gtid & 16777215 AS VARCHAR)"


@dataclass
class HostCounts:
    runtime: int = 0
    nvtx: int = 0
    osrt: int = 0
    notes: list[str] = field(default_factory=list)


def _name(alias: str, id_col: str) -> str:
    return f"coalesce({alias}.value, '(name id ' || CAST({id_col} AS VARCHAR) || ')')"


def stage(src: sqlite3.Connection, duck: duckdb.DuckDBPyConnection, p: Probe) -> HostCounts:
    """Stage every host event into temp table `_nsys_host`."""
    c = HostCounts()
    parts: list[str] = []
    if p.has(RUNTIME):
        ints = {"s": "start", "e": "end", "gtid": "globalTid", "corr": "correlationId",
                "nm": "nameId", "chain": p.col(RUNTIME, "callchainId") or "NULL"}
        c.runtime = fetch.stage(src, duck, RUNTIME, "_nsys_rt", ints)
        parts.append(
            "SELECT r.gtid, 'runtime' AS kind, regexp_replace("
            f"{_name('n', 'r.nm')}, '{VERSION_SUFFIX}', '') AS name, r.s, r.e, r.corr, r.chain"
            " FROM _nsys_rt r LEFT JOIN _nsys_str n ON n.id = r.nm")
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
        parts.append(
            "SELECT v.gtid, 'annotation' AS kind, coalesce(v.text, n.value, '') AS name, v.s,"
            " v.e, NULL::BIGINT AS corr, NULL::BIGINT AS chain"
            " FROM _nsys_nvtx v LEFT JOIN _nsys_str n ON n.id = v.tx"
            " WHERE v.e IS NOT NULL AND (v.egtid IS NULL OR v.egtid = v.gtid)")
    if p.has(OSRT):
        ints = {"s": "start", "e": "end", "gtid": "globalTid", "nm": "nameId",
                "chain": p.col(OSRT, "callchainId") or "NULL"}
        c.osrt = fetch.stage(src, duck, OSRT, "_nsys_osrt", ints)
        parts.append(f"SELECT o.gtid, 'osrt' AS kind, {_name('n', 'o.nm')} AS name, o.s, o.e,"
                     " NULL::BIGINT AS corr, o.chain"
                     " FROM _nsys_osrt o LEFT JOIN _nsys_str n ON n.id = o.nm")
    if not parts:
        parts.append("SELECT NULL::BIGINT AS gtid, NULL::VARCHAR AS kind, NULL::VARCHAR AS name,"
                     " NULL::BIGINT AS s, NULL::BIGINT AS e, NULL::BIGINT AS corr,"
                     " NULL::BIGINT AS chain WHERE false")
    duck.execute(
        "CREATE OR REPLACE TEMP TABLE _nsys_host AS SELECT gtid, kind, name, s AS start_ns,"
        " greatest(coalesce(e - s, 0), 0) AS dur_ns, corr AS correlation, chain FROM ("
        + " UNION ALL ".join(parts) + ") WHERE s IS NOT NULL AND gtid IS NOT NULL")
    for t in ("_nsys_rt", "_nsys_nvtx", "_nsys_osrt"):
        duck.execute(f"DROP TABLE IF EXISTS {t}")
    return c


def ingest(store: Store, artifact_id: int) -> int:
    """`_nsys_host` → host_ops and frames, nested per thread. Returns the row count."""
    con = store.con
    con.execute(
        "CREATE OR REPLACE TEMP TABLE _threads AS SELECT gtid,"
        " CAST(dense_rank() OVER (ORDER BY gtid) - 1 AS BIGINT) AS thread"
        " FROM (SELECT DISTINCT gtid FROM _nsys_host)")
    con.execute(
        "CREATE OR REPLACE TEMP TABLE _labels AS SELECT kind, name,"
        " CAST(row_number() OVER (ORDER BY kind, name) - 1 AS BIGINT) AS label"
        " FROM (SELECT DISTINCT kind, name FROM _nsys_host)")
    con.execute(
        "CREATE OR REPLACE TEMP TABLE _host AS SELECT t.thread, l.label, h.*"
        " FROM _nsys_host h JOIN _threads t USING (gtid) JOIN _labels l USING (kind, name)"
        " ORDER BY t.thread, h.start_ns, h.dur_ns DESC")
    con.execute("DROP TABLE _nsys_host")
    cols = con.execute("SELECT thread, start_ns, dur_ns, label FROM _host").fetchnumpy()
    thread = np.asarray(cols["thread"], dtype=np.int64)
    labels = np.asarray(cols["label"], dtype=np.int64)
    n = len(thread)
    nested = nest(thread, np.asarray(cols["start_ns"], dtype=np.int64),
                  np.asarray(cols["dur_ns"], dtype=np.int64))
    del cols, thread
    label_rows: list[tuple[str, str]] = [(k, nm) for k, nm in con.execute(
        "SELECT kind, name FROM _labels ORDER BY label").fetchall()]
    first = store.reserve_nodes(0)
    node, node_parent, node_label = intern_paths(nested.depth, nested.parent, labels, None, first)
    store.reserve_nodes(len(node_parent))
    ids = np.arange(first, first + len(node_parent), dtype=np.int64)
    chained = _chains(con)
    if chained:
        ids, node_parent, node_label = _insert_chains(
            store, chained, nested.depth, nested.parent, labels, node, ids, node_parent,
            node_label, label_rows)
    append_frames(store, ids, node_parent, node_label, [k for k, _ in label_rows],
                  [nm for _, nm in label_rows])

    op_base = store.reserve_ops(max(n, 1))
    parent = np.where(nested.parent >= 0, nested.parent + op_base, -1)
    con.register("_nest", pa.table({
        "depth": pa.array(nested.depth), "parent": pa.array(parent, mask=parent < 0),
        "node_id": pa.array(node), "self_ns": pa.array(nested.self_ns)}))
    con.execute(
        f"""
        INSERT INTO host_ops (artifact_id, op_id, pid, tid, kind, name, start_ns, dur_ns,
                              depth, parent, correlation, node_id, self_ns)
        SELECT {artifact_id}, {op_base} + h.rid, {PID_SQL.replace("gtid", "h.gtid")},
               {TID_SQL.replace("gtid", "h.gtid")}, h.kind, h.name, h.start_ns, h.dur_ns,
               r.depth, r.parent, h.correlation, r.node_id, r.self_ns
        FROM (SELECT rowid AS rid, * FROM _host) h POSITIONAL JOIN _nest r
        """)
    con.unregister("_nest")
    for t in ("_host", "_labels", "_threads"):
        con.execute(f"DROP TABLE {t}")
    return n


def _chains(con: duckdb.DuckDBPyConnection) -> dict[int, list[str]]:
    """Backtrace frames (outermost first) of host events that carry one, by event row."""
    has = con.execute(
        "SELECT count(*) FROM information_schema.tables WHERE table_name = $t", {"t": CHAINS}
    ).fetchall()[0][0]
    if not has:
        return {}
    out: dict[int, list[str]] = {}
    for rid, names in con.execute(
        f"SELECT h.rowid, list(c.name ORDER BY c.pos) FROM _host h JOIN {CHAINS} c"
        " ON c.id = h.chain WHERE h.chain IS NOT NULL GROUP BY h.rowid"
    ).fetchall():
        out[int(rid)] = list(names)
    return out


def _insert_chains(store: Store, chained: dict[int, list[str]], depth: npt.NDArray[np.int32],
                   parent: I64, labels: I64, node: I64, ids: I64, node_parent: I64,
                   node_label: I64, label_rows: list[tuple[str, str]]
                   ) -> tuple[I64, I64, I64]:
    """Re-intern events with a backtrace (and their descendants) with the chain frames
    between parent and event. Python loop over those events only; unused nodes dropped."""
    label_of = {row: i for i, row in enumerate(label_rows)}
    new_parent: list[int] = []
    new_label: list[int] = []
    table: dict[tuple[int, int], int] = {}
    first_new = store.reserve_nodes(0)

    def intern(p: int, lab: int) -> int:
        key = (p, lab)
        nid = table.get(key)
        if nid is None:
            nid = first_new + len(new_parent)
            table[key] = nid
            new_parent.append(p)
            new_label.append(lab)
        return nid

    changed = np.zeros(len(node), dtype=bool)
    has_chain = np.zeros(len(node), dtype=bool)
    has_chain[list(chained)] = True
    for d in range(int(depth.max()) + 1 if len(depth) else 0):
        at = np.nonzero(depth == d)[0]
        par = parent[at]
        need = at[has_chain[at] | ((par >= 0) & changed[np.maximum(par, 0)])]
        for i in need.tolist():
            p = int(parent[i])
            base = int(node[p]) if p >= 0 else -1
            for frame in chained.get(i, []):
                key = ("native", frame)
                if key not in label_of:
                    label_of[key] = len(label_rows)
                    label_rows.append(key)
                base = intern(base, label_of[key])
            node[i] = intern(base, int(labels[i]))
            changed[i] = True
    store.reserve_nodes(len(new_parent))
    all_ids = np.concatenate([ids, np.arange(first_new, first_new + len(new_parent))])
    all_par = np.concatenate([node_parent, np.asarray(new_parent, dtype=np.int64)])
    all_lab = np.concatenate([node_label, np.asarray(new_label, dtype=np.int64)])
    # keep only nodes some event (or a descendant's path) still uses
    used = np.zeros(len(all_ids), dtype=bool)
    index = {int(v): k for k, v in enumerate(all_ids.tolist())}
    todo = [index[int(v)] for v in np.unique(node)]
    while todo:
        k = todo.pop()
        if used[k]:
            continue
        used[k] = True
        if all_par[k] >= 0:
            todo.append(index[int(all_par[k])])
    return all_ids[used], all_par[used], all_lab[used]

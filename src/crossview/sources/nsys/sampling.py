"""CPU sampling of an nsys export → samples (+ frames): the L1 CPU view.

COMPOSITE_EVENTS holds one row per sample (id, start, globalTid, cpu, threadState);
SAMPLING_CALLCHAINS holds its stack under the same id (callchains.py). Stacks are interned
into `frames` with `intern_paths` over frame occurrences (vectorized: a frame's parent is the
previous, outer frame of its chain), so one node = one distinct path from the outermost frame.

What one sample weighs: nsys samples every thread at one configured rate, so the capture's
sampling period is the median interval between consecutive samples of one thread (estimated,
and said so: "~" in the recap). A capture whose samples are too few to measure an interval
gets weight 0: counts remain, time does not.
"""

from __future__ import annotations

import sqlite3

import duckdb
import numpy as np
import pyarrow as pa

from crossview.sources.kineto.nesting import intern_paths
from crossview.sources.nsys import fetch
from crossview.sources.nsys.callchains import CHAINS
from crossview.sources.nsys.frames_out import append_frames
from crossview.sources.nsys.schema_probe import SAMPLES, Probe
from crossview.store.store import Store


def stage(src: sqlite3.Connection, duck: duckdb.DuckDBPyConnection, p: Probe) -> int:
    if not p.has(SAMPLES):
        return 0
    ints = {"id": "id", "ts": "start", "gtid": "globalTid",
            "cpu": p.col(SAMPLES, "cpu") or "NULL",
            "st": p.col(SAMPLES, "threadState") or "NULL"}
    return fetch.stage(src, duck, SAMPLES, "_nsys_samp", ints)


def ingest(store: Store, artifact_id: int, thread_states: dict[int, str]) -> int:
    """`_nsys_samp` + `_nsys_cc` → frames and samples. Returns the samples written."""
    con = store.con
    cols = con.execute(
        f"SELECT c.id, c.pos, l.label FROM {CHAINS} c"
        f" JOIN (SELECT name, CAST(row_number() OVER (ORDER BY name) - 1 AS BIGINT) AS label"
        f" FROM (SELECT DISTINCT name FROM {CHAINS})) l USING (name)"
        " WHERE c.id IN (SELECT id FROM _nsys_samp) ORDER BY c.id, c.pos").fetchnumpy()
    names = [r[0] for r in con.execute(
        f"SELECT DISTINCT name FROM {CHAINS} ORDER BY name").fetchall()]
    ids = np.asarray(cols["id"], dtype=np.int64)
    pos = np.asarray(cols["pos"], dtype=np.int64)
    label = np.asarray(cols["label"], dtype=np.int64)
    n = len(ids)
    parent = np.where(pos > 0, np.arange(n) - 1, -1)
    first = store.reserve_nodes(0)
    node, node_parent, node_label = intern_paths(pos.astype(np.int32), parent, label, None, first)
    store.reserve_nodes(len(node_parent))
    append_frames(store, np.arange(first, first + len(node_parent), dtype=np.int64),
                  node_parent, node_label, ["native"] * len(names), names)
    # the leaf (innermost frame) of each chain: the last row of its id
    last = np.ones(n, dtype=bool)
    if n:
        last[:-1] = ids[1:] != ids[:-1]
    con.register("_leaf", pa.table({"id": pa.array(ids[last]), "node": pa.array(node[last])}))
    con.register("_states", pa.table({
        "st": pa.array(list(thread_states), pa.int64()),
        "state": pa.array(list(thread_states.values()), pa.string())}))
    period = con.execute(
        "SELECT median(d) FROM (SELECT ts - lag(ts) OVER (PARTITION BY gtid ORDER BY ts) AS d"
        " FROM _nsys_samp) WHERE d > 0").fetchall()[0][0]
    weight = int(period) if period is not None else 0
    con.execute(
        f"""
        INSERT INTO samples (artifact_id, view, node_id, weight_ns, count, pid, tid, ts_ns,
                             cpu, state)
        SELECT {artifact_id}, 'cpu', l.node, {weight}, 1,
               CAST((s.gtid >> 24) & 16777215 AS VARCHAR), CAST(s.gtid & 16777215 AS VARCHAR),
               s.ts, CAST(s.cpu AS INTEGER), st.state
        FROM _nsys_samp s JOIN _leaf l USING (id) LEFT JOIN _states st USING (st)
        """)
    written = con.execute(
        "SELECT count(*) FROM samples WHERE artifact_id = $a", {"a": artifact_id}
    ).fetchall()[0][0]
    con.unregister("_leaf")
    con.unregister("_states")
    con.execute("DROP TABLE _nsys_samp")
    return int(written)

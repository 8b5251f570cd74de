"""Host-event nesting in bounded memory: `_host` → host_ops and frames, one batch at a time.

Each batch (host_chunks: about `kineto_nest_batch_rows` rows, cut where no event is open) is
nested in numpy, its call paths interned (node_table), and its results appended to the DuckDB
table `_nestres` before the next batch is read, so numpy never holds more than one batch.
host_ops rows are then joined back to `_host` by position in SQL. The results equal one pass
over all rows (tests/test_host_chunks.py).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from crossview.knowledge.thresholds import defaults
from crossview.sources.kineto.frames import CallStackPrefixes, append_frames
from crossview.sources.kineto.host_chunks import iter_chunks
from crossview.sources.kineto.nesting import intern_paths, nest
from crossview.sources.kineto.node_table import NodeTable
from crossview.store.store import Store

_STACKS_SQL = (
    "SELECT rowid - $a, call_stack FROM _host WHERE rowid >= $a AND rowid < $b"
    " AND call_stack IS NOT NULL AND call_stack <> ''"
)


def nest_host(store: Store, artifact_id: int, op_base: int, n: int,
              batch_rows: int | None = None) -> None:
    """Fill host_ops (and frames) from `_host` (n rows). `batch_rows` overrides the
    threshold (tests force tiny batches)."""
    con = store.con
    batch = batch_rows or defaults().kineto_nest_batch_rows
    label_rows = con.execute("SELECT kind, name FROM _labels ORDER BY label").fetchall()
    has_stacks = con.execute(
        "SELECT count(*) FROM _host WHERE call_stack IS NOT NULL AND call_stack <> ''"
    ).fetchall()[0][0] > 0
    prefixes = CallStackPrefixes(len(label_rows), store)
    nodes = NodeTable()
    con.execute("CREATE OR REPLACE TABLE _nestres (depth INTEGER, parent BIGINT,"
                " node_id BIGINT, self_ns BIGINT)")
    done = 0
    reader = con.cursor()
    try:
        for ch in iter_chunks(reader, batch):
            nested = nest(ch.thread, ch.start, ch.dur)
            stacks = (con.execute(_STACKS_SQL, {"a": ch.offset, "b": ch.offset + len(ch)})
                      .fetchall() if has_stacks else [])
            root_parent = prefixes.add(stacks, nested.depth)
            node, node_parent, node_label = intern_paths(
                nested.depth, nested.parent, ch.label, root_parent, 0)
            prov = nodes.merge(nested.depth, node, node_parent, node_label)
            parent = np.where(nested.parent >= 0, nested.parent + (op_base + ch.offset), -1)
            store.append("_nestres", pa.table({
                "depth": pa.array(nested.depth),
                "parent": pa.array(parent, mask=parent < 0),
                "node_id": pa.array(prov[node]) if len(node) else pa.array(node),
                "self_ns": pa.array(nested.self_ns),
            }))
            done += len(ch)
    finally:
        reader.close()
    if done != n:
        raise RuntimeError(f"host nesting saw {done} of {n} rows")
    label_rows.extend(prefixes.out["labels"])
    # prefix nodes were reserved while batches ran; the interned nodes follow them
    first_node = store.reserve_nodes(0)
    numbered = nodes.finish(first_node)
    store.reserve_nodes(len(numbered.node_parent))
    append_frames(store, prefixes.out, numbered.node_parent, numbered.node_label, label_rows,
                  first_node)
    # provisional → final node ids by a list lookup (a join would not keep row order)
    con.execute(
        f"""
        INSERT INTO host_ops (artifact_id, op_id, pid, tid, kind, name, start_ns, dur_ns,
                              depth, parent, correlation, node_id, self_ns)
        SELECT {artifact_id}, {op_base} + h.rid, h.pid, h.tid, h.kind, h.name, h.start_ns,
               h.dur_ns, r.depth, r.parent, h.correlation, $canon[r.node_id + 1], r.self_ns
        FROM (SELECT rowid AS rid, * FROM _host) h POSITIONAL JOIN _nestres r
        """,
        {"canon": numbered.canon.tolist()},
    )
    con.execute("DROP TABLE _nestres")

"""Host-event nesting in bounded memory: `_host` → host_ops and frames, one batch at a time.

`_host` carries integers only (host_table.py); host_ops takes its strings from the thread and
label lists, and legacy call stacks are read from `ev` by each event's `er`.

Each batch (host_chunks: about `kineto_nest_batch_rows` rows, cut where no event is open) is
nested in numpy, its call paths interned (node_table), and its results appended to the DuckDB
table `_nestres` before the next batch is read, so numpy never holds more than one batch.
The loop and the host_ops insert are shared with the nsys reader (sources/nesting_batches.py).
The results equal one pass over all rows (tests/test_host_chunks.py).

When numpy sorted `_host` (host_table's numpy path, up to `kineto_host_sort_rows` rows), its
columns are in memory already: the batches' results are kept as arrays and host_ops is
inserted straight from them, strings as Arrow dictionaries over the thread and label lists
(no `_nestres` table, no per-row list lookup; tests/test_kineto_fast_ingest.py compares the
two paths column by column; docs/decisions/0680).
"""

from __future__ import annotations

from crossview.knowledge.thresholds import defaults
from crossview.sources.kineto.frames import CallStackPrefixes, append_frames
from crossview.sources.kineto.host_chunks import Chunk, split_chunks
from crossview.sources.kineto.host_table import HostTable, Sorted
from crossview.sources.kineto.nesting import Nesting, intern_paths
from crossview.sources.kineto.node_table import I64, NodeTable
from crossview.sources.nesting_batches import (
    Nested,
    append_host_ops,
    insert_host_ops,
    nest_batches,
    nest_in_memory,
)
from crossview.store.store import Store

# the legacy call stacks of host events, by row of `_host` (made only when some exist)
_STACKS_TABLE_SQL = (
    "CREATE OR REPLACE TEMP TABLE _stacks AS SELECT h.hr, e.call_stack FROM __HOST__ h"
    " JOIN (SELECT rowid AS er, args.\"Call stack\" AS call_stack FROM ev"
    " WHERE args.\"Call stack\" <> '') e USING (er) ORDER BY hr"
)
_STACKS_SQL = "SELECT hr - $a, call_stack FROM _stacks WHERE hr >= $a AND hr < $b ORDER BY hr"


def nest_host(store: Store, artifact_id: int, op_base: int, host: HostTable,
              has_stacks: bool, batch_rows: int | None = None) -> None:
    """Fill host_ops (and frames) from `_host`. `has_stacks`: some host event carries a
    legacy "Call stack". `batch_rows` overrides the threshold (tests force tiny batches)."""
    con = store.con
    batch = batch_rows or defaults().kineto_nest_batch_rows
    label_rows = list(host.labels)
    if has_stacks:
        con.execute(_STACKS_TABLE_SQL.replace("__HOST__", host.rows_sql))
    prefixes = CallStackPrefixes(len(label_rows), store)
    nodes = NodeTable()

    def paths(ch: Chunk, nested: Nesting) -> I64:
        stacks = (con.execute(_STACKS_SQL, {"a": ch.offset, "b": ch.offset + len(ch)})
                  .fetchall() if has_stacks else [])
        root_parent = prefixes.add(stacks, nested.depth)
        node, node_parent, node_label = intern_paths(
            nested.depth, nested.parent, ch.label, root_parent, 0)
        prov = nodes.merge(nested.depth, node, node_parent, node_label)
        return prov[node] if len(node) else node

    c = host.cols
    nested: Nested | None = None
    if c is None:
        nest_batches(store, op_base, host.n, batch, paths)
    else:
        nested = nest_in_memory(op_base, host.n, paths,
                                split_chunks(c.thread, c.start, c.dur, c.label, batch))
    if has_stacks:
        con.execute("DROP TABLE _stacks")
    label_rows.extend(prefixes.out["labels"])
    # prefix nodes were reserved while batches ran; the interned nodes follow them
    first_node = store.reserve_nodes(0)
    numbered = nodes.finish(first_node)
    store.reserve_nodes(len(numbered.node_parent))
    append_frames(store, prefixes.out, numbered.node_parent, numbered.node_label, label_rows,
                  first_node)
    if c is not None and nested is not None:
        _insert_from_arrays(store, artifact_id, op_base, host, c, nested, numbered.canon)
        return
    insert_host_ops(store, artifact_id, op_base, "$pids[h.thread + 1]", "$tids[h.thread + 1]",
                    numbered.canon, kind_sql="$kinds[h.label + 1]",
                    name_sql="$names[h.label + 1]", params=host.name_params())


def _insert_from_arrays(store: Store, artifact_id: int, op_base: int, host: HostTable,
                        c: Sorted, nested: Nested, canon: I64) -> None:
    """host_ops ← the sorted columns and their nesting, straight from numpy: the rows
    `insert_host_ops` makes from `_host` and `_nestres` (tests/test_host_chunks.py compares
    the two), without writing `_nestres` or a per-row list lookup (docs/decisions/0680)."""
    append_host_ops(store, artifact_id, op_base, c, nested, canon,
                    [p for p, _ in host.threads], [t for _, t in host.threads], host.labels)

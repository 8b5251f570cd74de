"""Backtrace frames of nsys host events, inserted into one batch's call paths.

An API call that carries a backtrace (`callchainId`, `nsys profile --cudabacktrace` /
`--osrt-backtrace`) gets its callchain frames between its parent (the enclosing NVTX range) and
itself. Works on one batch of `_host` (host nesting runs in batches, sources/nesting_batches.py)
with local node ids from `intern_paths(..., first_node=0)`; the batch's nodes then go to the
reader's NodeTable with explicit levels. Frame labels are numbered once, up front, in name
order, so label (and so node) ids do not depend on the batch size.
"""

from __future__ import annotations

from dataclasses import dataclass

import duckdb
import numpy as np
import numpy.typing as npt

from crossview.sources.kineto.nesting import Nesting
from crossview.sources.nsys.callchains import CHAINS

I64 = npt.NDArray[np.int64]
_BATCH_SQL = (
    f"SELECT h.rowid - $a AS i, list(c.name ORDER BY c.pos) FROM _host h JOIN {CHAINS} c"
    " ON c.id = h.chain WHERE h.rowid >= $a AND h.rowid < $b AND h.chain IS NOT NULL"
    " GROUP BY h.rowid"
)


@dataclass
class BatchNodes:
    node: I64  # per event, local id
    node_parent: I64  # per local node, parents first
    node_label: I64
    node_level: I64


class ChainFrames:
    """Chain-frame labels (appended to the reader's label rows) and per-batch insertion."""

    def __init__(self, con: duckdb.DuckDBPyConnection, label_rows: list[tuple[str, str]]):
        self.con = con
        self.label_of = {row: i for i, row in enumerate(label_rows)}
        for (name,) in con.execute(
            f"SELECT DISTINCT c.name FROM {CHAINS} c SEMI JOIN _host h ON c.id = h.chain"
            " ORDER BY c.name"
        ).fetchall():
            key = ("native", str(name))
            if key not in self.label_of:
                self.label_of[key] = len(label_rows)
                label_rows.append(key)

    @staticmethod
    def present(con: duckdb.DuckDBPyConnection) -> bool:
        return con.execute(
            "SELECT count(*) FROM information_schema.tables WHERE table_name = $t",
            {"t": CHAINS}).fetchall()[0][0] > 0

    def apply(self, offset: int, nested: Nesting, labels: I64, node: I64, node_parent: I64,
              node_label: I64) -> BatchNodes | None:
        """Re-intern the batch's events with a backtrace (and their descendants) with the
        chain frames between parent and event; None when the batch has none. Python loop
        over those events only; nodes no event uses any more are dropped."""
        chained: dict[int, list[str]] = {
            int(i): list(names) for i, names in self.con.execute(
                _BATCH_SQL, {"a": offset, "b": offset + len(labels)}).fetchall()}
        if not chained:
            return None
        depth, parent = nested.depth, nested.parent
        m = len(node_parent)
        new_parent: list[int] = []
        new_label: list[int] = []
        table: dict[tuple[int, int], int] = {}

        def intern(p: int, lab: int) -> int:
            nid = table.get((p, lab))
            if nid is None:
                nid = table[(p, lab)] = m + len(new_parent)
                new_parent.append(p)
                new_label.append(lab)
            return nid

        node = node.copy()
        changed = np.zeros(len(node), dtype=bool)
        has_chain = np.zeros(len(node), dtype=bool)
        has_chain[list(chained)] = True
        for d in range(int(depth.max()) + 1):
            at = np.nonzero(depth == d)[0]
            par = parent[at]
            need = at[has_chain[at] | ((par >= 0) & changed[np.maximum(par, 0)])]
            for i in need.tolist():
                p = int(parent[i])
                base = int(node[p]) if p >= 0 else -1
                for frame in chained.get(i, []):
                    base = intern(base, self.label_of[("native", frame)])
                node[i] = intern(base, int(labels[i]))
                changed[i] = True
        return _compact(node, np.concatenate([node_parent, np.asarray(new_parent, np.int64)]),
                        np.concatenate([node_label, np.asarray(new_label, np.int64)]))


def _compact(node: I64, par: I64, lab: I64) -> BatchNodes:
    """Keep nodes some event (or a descendant's path) uses; renumber keeping the order, in
    which parents precede children."""
    used = np.zeros(len(par), dtype=bool)
    todo = np.unique(node).tolist()
    while todo:
        k = todo.pop()
        if used[k]:
            continue
        used[k] = True
        if par[k] >= 0:
            todo.append(int(par[k]))
    new_id = np.cumsum(used) - 1
    kept_par = par[used]
    kept_par = np.where(kept_par >= 0, new_id[np.maximum(kept_par, 0)], -1)
    level = np.zeros(len(kept_par), dtype=np.int64)
    for k, p in enumerate(kept_par.tolist()):
        level[k] = level[p] + 1 if p >= 0 else 0
    return BatchNodes(new_id[node].astype(np.int64), kept_par.astype(np.int64), lab[used],
                      level)

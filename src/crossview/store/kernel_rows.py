"""Every kernel of a GPU relation with its launch call's start, as numpy columns.

Read once per analysis for the views that walk kernels in numpy: the idle gaps of
trace_metrics and the steps' tail and per-step facts. Two plain scans (the kernels; the host
ops' ids and starts) and a lookup by op id in numpy: a SQL join of a 1 M-kernel nsys export to
its 1 M launch calls cost more than both scans together.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from crossview.store.store import Store

I64 = npt.NDArray[np.int64]
NULL = 1 << 62  # a NULL device / stream (sorts after every real one, as SQL's NULLS LAST)


class KernelRows:
    """Columns, one row per kernel of `gpu` (f_gpu, or a subquery over gpu_ops): artifact,
    device, stream (NULL as `NULL`), start, end, family as a code into the sorted names
    `families` (a NULL family is named "None"), and its launch call's start `ls` where
    `launched` (the launch call is in host_ops, same artifact)."""

    def __init__(self, store: Store, gpu: str = "f_gpu", names: bool = False) -> None:
        """names: also each kernel's name hash `name_hash` (DuckDB's hash(name)) and its
        launch call's frame node `node` (-1: no launch call in host_ops, or no node), for
        the GPU view (views/host/calltree.py)."""
        self.families = sorted(str(f) for (f,) in store.sql(
            f"SELECT DISTINCT coalesce(family, 'None') FROM {gpu} WHERE kind = 'kernel'"
        ).fetchall())
        k = store.sql(
            f"SELECT artifact_id, coalesce(device::BIGINT, {NULL}), coalesce(stream, {NULL}),"
            " list_position($f, coalesce(family, 'None')) - 1, start_ns, start_ns + dur_ns,"
            f" coalesce(launch_op_id, -1){', hash(name)' if names else ''} FROM {gpu}"
            " WHERE kind = 'kernel'",
            {"f": self.families},
        ).fetchnumpy()
        art, dev, stream, fam, s, e, launch, *nh = (np.asarray(c) for c in k.values())
        self.art: I64 = art.astype(np.int64)
        self.dev: I64 = dev.astype(np.int64)
        self.stream: I64 = stream.astype(np.int64)
        self.fam: I64 = fam.astype(np.int64)
        self.s: I64 = s.astype(np.int64)
        self.e: I64 = e.astype(np.int64)
        self.name_hash: npt.NDArray[np.uint64] | None = nh[0] if nh else None
        self.node: I64 | None = None
        self.launch: I64 = launch.astype(np.int64)  # launch op id, -1 none
        self.launched, self.ls, node = _launch_starts(store, self.launch, self.art, names)
        if names:
            self.node = node

    def __len__(self) -> int:
        return len(self.s)


def _launch_starts(store: Store, launch: I64, art: I64, nodes: bool = False
                   ) -> tuple[npt.NDArray[np.bool_], I64, I64]:
    """For each kernel's launch op id (-1: none): whether host_ops holds that op in the
    kernel's artifact, and the op's start (0 where not); with `nodes`, the op's frame node
    in any artifact (as a join on the op id alone; -1 where none), else an empty array."""
    launched = np.zeros(len(launch), dtype=bool)
    ls = np.zeros(len(launch), dtype=np.int64)
    node = np.full(len(launch) if nodes else 0, -1, dtype=np.int64)
    if len(launch) == 0 or not (launch >= 0).any():
        return launched, ls, node
    h = store.sql("SELECT op_id, artifact_id, start_ns"
                  f"{', coalesce(node_id, -1)' if nodes else ''} FROM host_ops"
                  " WHERE op_id IS NOT NULL").fetchnumpy()
    hid, hart, hs, *hnode = (np.asarray(c, dtype=np.int64) for c in h.values())
    if len(hid) == 0:
        return launched, ls, node
    lo, hi = int(hid.min()), int(hid.max())
    want = (launch >= lo) & (launch <= hi)
    if hi - lo < 4 * len(hid) + 1024:  # ids in a dense range (each reader reserves a block)
        row = np.full(hi - lo + 1, -1, dtype=np.int64)
        row[hid - lo] = np.arange(len(hid))
        at = np.where(want, launch - lo, 0)
        idx = np.where(want, row[at], -1)
    else:  # sparse ids: a sorted search
        o = np.argsort(hid, kind="stable")
        pos = np.searchsorted(hid[o], launch).clip(0, len(hid) - 1)
        idx = np.where(want & (hid[o][pos] == launch), o[pos], -1)
    ok = idx >= 0
    if nodes:
        node[ok] = hnode[0][idx[ok]]
    ok[ok] = hart[idx[ok]] == art[ok]
    launched[ok] = True
    ls[ok] = hs[idx[ok]]
    return launched, ls, node


def key(v: int | np.integer) -> int | None:
    """A device / stream value as read: None for NULL."""
    return None if int(v) == NULL else int(v)

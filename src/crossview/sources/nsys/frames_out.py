"""Write interned call-tree nodes to the `frames` table (shared by host events and samples)."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from crossview.store.store import Store

I64 = npt.NDArray[np.int64]


def append_frames(store: Store, ids: I64, parents: I64, labels: I64,
                  label_kind: list[str], label_name: list[str]) -> None:
    """One frames row per node: id, parent (−1: root), label index into (kind, name).

    Parents precede children in ``ids``; a parent outside this batch is a root-level parent
    only if it is absent (depth then counts from 0 here)."""
    n = len(ids)
    if n == 0:
        return
    depth = np.zeros(n, dtype=np.int32)
    pos: dict[int, int] = {}
    for i, (nid, p) in enumerate(zip(ids.tolist(), parents.tolist(), strict=True)):
        pos[nid] = i
        j = pos.get(p, -1) if p >= 0 else -1
        depth[i] = depth[j] + 1 if j >= 0 else 0
    take = pa.array(labels)
    store.append("frames", pa.table({
        "node_id": pa.array(ids),
        "parent_node": pa.array(parents, mask=parents < 0),
        "name": pa.array(label_name, pa.string()).take(take),
        "kind": pa.array(label_kind, pa.string()).take(take),
        "depth": pa.array(depth),
    }))

"""Call-tree nodes interned batch by batch, numbered at the end as one whole pass would.

`nesting.intern_paths` numbers a trace's nodes level by level, each level sorted by
(parent node, label). Batches of host events each intern their own paths (local ids); this
table merges them into provisional ids keyed by (level, parent, label) and `finish` renumbers
them in that same level/(parent, label) order, so node ids do not depend on the batch size.
Its size is the number of distinct call paths, not of events.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

I64 = npt.NDArray[np.int64]


@dataclass(frozen=True)
class Numbered:
    canon: I64  # provisional id → final node id
    node_parent: I64  # per final node, in id order (−1 or a call-stack prefix node for roots)
    node_label: I64


@dataclass
class NodeTable:
    _ids: dict[tuple[int, int, int], int] = field(default_factory=dict)
    _level: list[int] = field(default_factory=list)
    _parent: list[int] = field(default_factory=list)  # level 0: prefix node or −1; else prov id
    _label: list[int] = field(default_factory=list)

    def merge(self, depth: npt.NDArray[np.int32], node: I64, node_parent: I64,
              node_label: I64, node_level: I64 | None = None) -> I64:
        """Local nodes of one batch (`intern_paths` output with first_node 0) → provisional
        ids, as an array indexed by local id. Parents precede children locally. A node's
        level is its events' depth unless `node_level` gives it (nsys backtrace frames put
        nodes between an event and its parent)."""
        if node_level is None:
            level = np.zeros(len(node_parent), dtype=np.int64)
            level[node] = depth
        else:
            level = node_level
        out: list[int] = []
        for lv, p, lab in zip(level.tolist(), node_parent.tolist(), node_label.tolist(),
                              strict=True):
            key = (lv, p if lv == 0 else out[p], lab)
            pid = self._ids.get(key)
            if pid is None:
                pid = self._ids[key] = len(self._level)
                self._level.append(lv)
                self._parent.append(key[1])
                self._label.append(lab)
            out.append(pid)
        return np.asarray(out, dtype=np.int64)

    def __len__(self) -> int:
        return len(self._level)

    def finish(self, first_node: int) -> Numbered:
        level = np.asarray(self._level, dtype=np.int64)
        parent = np.asarray(self._parent, dtype=np.int64)
        label = np.asarray(self._label, dtype=np.int64)
        canon = np.full(len(level), -1, dtype=np.int64)
        parts_p: list[I64] = []
        parts_l: list[I64] = []
        nxt = first_node
        for d in range(int(level.max()) + 1 if len(level) else 0):
            sel = np.flatnonzero(level == d)
            pkey = parent[sel] if d == 0 else canon[parent[sel]]
            o = np.lexsort((label[sel], pkey))
            canon[sel[o]] = nxt + np.arange(len(o))
            nxt += len(o)
            parts_p.append(pkey[o])
            parts_l.append(label[sel[o]])
        if not parts_p:
            e = np.zeros(0, dtype=np.int64)
            return Numbered(canon, e, e)
        return Numbered(canon, np.concatenate(parts_p), np.concatenate(parts_l))

"""Graph.at / Graph.end_at: (lane, ns) → node, held as one sorted array of times per lane.

A thread's chain has a node boundary per runtime call and top-level op (10⁵ on a 3 MB
capture); as a dict of (lane, ns) tuples the two maps cost ~4 tuple allocations and hashes
per node (~0.1 s of a V100 DDP recap's graph build) for the few lookups the replay makes
(a step's first and last node). Here a lane's boundaries stay numpy arrays and a lookup is a
binary search. Later entries for the same (lane, ns) win, as a dict's update would."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import numpy.typing as npt

I64 = npt.NDArray[np.int64]
Key = tuple[str, int]


class LaneIndex:
    def __init__(self) -> None:
        self._lanes: dict[str, tuple[I64, I64]] = {}  # lane → (sorted times, nodes)

    def put(self, lane: str, times: I64, nodes: I64) -> None:
        """Add a lane's (time, node) pairs (any order; a time given twice: the later wins)."""
        t = np.asarray(times, dtype=np.int64)
        v = np.asarray(nodes, dtype=np.int64)
        old = self._lanes.get(lane)
        if old is not None:
            t, v = np.concatenate([old[0], t]), np.concatenate([old[1], v])
        if len(t) > 1 and not bool((t[1:] > t[:-1]).all()):
            o = np.argsort(t, kind="stable")
            t, v = t[o], v[o]
            last = np.r_[t[1:] != t[:-1], True]  # the last of each equal run: the latest
            t, v = t[last], v[last]
        self._lanes[lane] = (t, v)

    def get(self, key: Key, default: int | None = None) -> int | None:
        got = self._lanes.get(key[0])
        if got is None:
            return default
        t, v = got
        i = int(np.searchsorted(t, key[1]))
        return int(v[i]) if i < len(t) and t[i] == key[1] else default

    def items(self) -> Iterator[tuple[Key, int]]:
        for lane, (t, v) in self._lanes.items():
            for x, n in zip(t.tolist(), v.tolist(), strict=True):
                yield (lane, x), n

    def shifted(self, prefix: str, dt: int, dn: int = 0) -> LaneIndex:
        """Lanes renamed `prefix + lane`, times + dt, nodes + dn (a rank's graph joined)."""
        out = LaneIndex()
        out._lanes = {prefix + lane: (t + dt, v + dn) for lane, (t, v) in self._lanes.items()}
        return out

    def merge(self, other: LaneIndex) -> None:
        for lane, (t, v) in other._lanes.items():
            self.put(lane, t, v)

    def window(self, lo: int, hi: int) -> LaneIndex:
        """The entries whose node is in [lo, hi), nodes − lo (a rank's part of a joined graph)."""
        out = LaneIndex()
        for lane, (t, v) in self._lanes.items():
            keep = (v >= lo) & (v < hi)
            if keep.any():
                out._lanes[lane] = (t[keep], v[keep] - lo)
        return out

    def copy(self) -> LaneIndex:
        """A copy sharing the arrays (never changed in place: `put` replaces a lane's)."""
        out = LaneIndex()
        out._lanes = dict(self._lanes)
        return out

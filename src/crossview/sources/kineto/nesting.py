"""Host-event nesting by time containment, vectorized (no per-event Python loop).

Input events are sorted by (thread, start ascending, duration descending). For properly nested
intervals the depth of event i is (events opened up to i) − (events closed by i's start) − 1,
and its parent is the latest earlier event one level up. Both are array operations. Events that
overlap without nesting (rare, e.g. "Pregraph bytecode" ranges) get the nearest open ancestor,
as a stack walk would for the part they share.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

I64 = npt.NDArray[np.int64]


@dataclass(frozen=True)
class Nesting:
    depth: npt.NDArray[np.int32]
    parent: I64  # index into the input arrays, −1 for a root
    self_ns: I64


def nest(thread: I64, start: I64, dur: I64) -> Nesting:
    n = len(start)
    if n == 0:
        empty = np.zeros(0, dtype=np.int64)
        return Nesting(np.zeros(0, dtype=np.int32), empty, empty)
    if not _sorted(thread, start, dur):
        order = np.lexsort((-dur, start, thread))
        inner = nest(thread[order], start[order], dur[order])
        back = np.empty(n, dtype=np.int64)
        back[order] = np.arange(n)
        par = np.where(inner.parent >= 0, order[np.maximum(inner.parent, 0)], -1)
        return Nesting(inner.depth[back], par[back], inner.self_ns[back])
    # Only events with a duration can contain others: a zero-length event is a leaf under
    # the innermost positive event open at its time (two at one instant are siblings), and
    # a positive event ending exactly where another starts is closed before it (touching
    # intervals are siblings).
    t0 = int(start.min())
    pos = dur > 0
    big = int((start + dur).max()) - t0 + 2
    # keys built in place: each full-length temporary is fresh memory to fault in
    s_key = thread.astype(np.int64) * big
    s_key += start - t0
    e_key = s_key + dur
    # stable: timsort, fast on these nearly sorted ends (0.7 M events: 4 ms vs 33 ms)
    e_key = np.sort(e_key[pos], kind="stable")
    closed = np.searchsorted(e_key, s_key, side="right")
    del e_key, s_key
    depth: I64 = np.cumsum(pos, dtype=np.int64)  # positive events up to i; less pos[i]: before i
    depth -= pos
    depth -= closed
    np.maximum(depth, 0, out=depth)

    parent = np.full(n, -1, dtype=np.int64)
    cand_idx = np.nonzero(pos)[0]  # possible parents, in order
    idx = np.nonzero(depth > 0)[0]
    if len(idx) and len(cand_idx):
        stride = n + 1
        # keys (depth, index) of the positive events, in order: a stable argsort of small
        # ints is a radix sort, O(n)
        cd = depth[cand_idx]
        small = cd.astype(np.int16) if cd.max() < 32767 else cd
        by_depth = cand_idx[np.argsort(small, kind="stable")]
        sorted_key = depth[by_depth] * stride
        sorted_key += by_depth
        up = depth[idx] - 1
        up *= stride  # the level above, as a key offset
        at = np.searchsorted(sorted_key, up + idx, side="left")
        at -= 1
        ok = at >= 0
        np.maximum(at, 0, out=at)
        cand = sorted_key[at]  # where not ok: any key, rejected below
        cand -= up
        ok &= cand >= 0
        ok &= cand < idx
        cand[~ok] = 0
        ok &= thread[cand] == thread[idx]
        parent[idx[ok]] = cand[ok]
        # an event whose computed parent is missing is a root at its own level
        depth[idx[~ok]] = 0
    _contain(parent, depth, start, start + dur, thread)
    has = parent >= 0
    child_sum = np.bincount(parent[has], weights=dur[has], minlength=n).astype(np.int64)
    self_ns = np.subtract(dur, child_sum, out=child_sum)
    np.maximum(self_ns, 0, out=self_ns)
    return Nesting(depth.astype(np.int32), parent, self_ns)


def _contain(parent: I64, depth: I64, start: I64, end: I64, thread: I64) -> None:
    """Fix threads with improper nesting (an event outliving its computed parent, e.g. a
    record_function range opened inside a Python `__enter__` call): the counting formula
    is exact only for proper nesting, so those threads get a sequential stack walk that
    gives each event the innermost open event containing it. In place."""
    bad = (parent >= 0) & (end > end[np.maximum(parent, 0)])
    if not bad.any():
        return
    for t in np.unique(thread[bad]):
        idx = np.nonzero(thread == t)[0]  # contiguous, sorted by (start, dur desc)
        s_l, e_l = start[idx].tolist(), end[idx].tolist()
        par = [-1] * len(idx)
        dep = [0] * len(idx)
        stack: list[int] = []
        for i in range(len(idx)):
            si, ei = s_l[i], e_l[i]
            while stack and e_l[stack[-1]] <= si:
                stack.pop()
            for j in reversed(stack):
                if e_l[j] >= ei:
                    par[i] = j
                    dep[i] = dep[j] + 1
                    break
            if ei > si:  # a zero-length event contains nothing
                stack.append(i)
        p = np.asarray(par, dtype=np.int64)
        parent[idx] = np.where(p >= 0, idx[np.maximum(p, 0)], -1)
        depth[idx] = np.asarray(dep, dtype=np.int64)


def _sorted(thread: I64, start: I64, dur: I64) -> bool:
    """Input order must be (thread, start asc, dur desc): checked, not assumed."""
    if len(start) < 2:
        return True
    dt = np.diff(thread)
    same = dt == 0
    ds = np.diff(start)
    ok = (dt >= 0) & (~same | (ds > 0) | ((ds == 0) & (np.diff(dur) <= 0)))
    return bool(ok.all())


def _unique_inverse(key: I64, bound: int) -> tuple[I64, I64]:
    """`np.unique(key, return_inverse=True)` for keys in [0, bound): by a table over the key
    range when that is not much larger than the keys (no sort), else by np.unique."""
    if len(key) and bound <= 4 * len(key) + 4096:
        seen = np.zeros(bound, dtype=bool)
        seen[key] = True
        rank = np.cumsum(seen, dtype=np.int64) - 1
        return np.flatnonzero(seen), rank[key]
    uniq, inv = np.unique(key, return_inverse=True)
    return uniq, inv.reshape(-1)


def intern_paths(
    depth: npt.NDArray[np.int32],
    parent: I64,
    label: I64,
    root_parent: I64 | None = None,
    first_node: int = 0,
) -> tuple[I64, I64, I64]:
    """Give every event the id of its call-tree node: the path of labels from its root.

    ``label`` is an integer id per event (its (kind, name)). ``root_parent`` optionally gives
    a node id to hang a root event under (a legacy "Call stack" prefix), else −1.
    Returns (node per event, node parent, node label), node ids starting at ``first_node``.
    """
    n = len(depth)
    node = np.full(n, -1, dtype=np.int64)
    node_parent: list[I64] = []
    node_label: list[I64] = []
    next_id = first_node
    n_labels = int(label.max()) + 1 if n else 1
    small = depth.astype(np.int16) if n and depth.max() < 32767 else depth
    order = np.argsort(small, kind="stable")
    bounds = np.searchsorted(depth[order], np.arange(int(depth.max()) + 2 if n else 1))
    for d in range(len(bounds) - 1):
        sel = order[bounds[d] : bounds[d + 1]]
        if len(sel) == 0:
            continue
        if d == 0:
            pnode = root_parent[sel] if root_parent is not None else np.full(len(sel), -1)
        else:
            pnode = node[parent[sel]]
        key = (pnode + 1) * n_labels + label[sel]
        uniq, inv = _unique_inverse(key, (int(pnode.max()) + 2) * n_labels)
        node[sel] = next_id + inv
        node_parent.append(uniq // n_labels - 1)
        node_label.append(uniq % n_labels)
        next_id += len(uniq)
    if not node_parent:
        e = np.zeros(0, dtype=np.int64)
        return node, e, e
    return node, np.concatenate(node_parent), np.concatenate(node_label)

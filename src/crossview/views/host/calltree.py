"""The GPU view and the CPU view as call trees over the same interned frames.

GPU view: each kernel's time under the host stack that launched it (python frames → operator
→ launch API → kernel). Graph-replayed kernels hang under their cudaGraphLaunch/hipGraphLaunch;
kernels whose launch is not in the capture hang under "(launch not captured)".
CPU view: host time by stack, with self time per frame.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from crossview.knowledge import api_roles
from crossview.store.kernel_rows import KernelRows
from crossview.store.store import Store

MISSING_FRAME = "(launch not captured)"
_SYNC_ROLES = ("sync", "sync_memcpy", "sync_ops")


def _node(name: str, kind: str) -> TreeNode:
    return TreeNode(name, kind, sync=api_roles.role_of(name) in _SYNC_ROLES)


@dataclass
class TreeNode:
    frame: str
    kind: str  # python | op | annotation | runtime | kernel | missing | root
    time_ns: int = 0
    count: int = 0
    self_ns: int = 0
    family: str | None = None  # kernel leaves
    sync: bool = False  # a sync point (stream/device sync, blocking copy, .item())
    children: list[TreeNode] = field(default_factory=list)
    repeats: int = 1  # sibling frames merged into this one (views/host/tree_ops.py: steps, layers)

    def to_dict(self, with_self: bool) -> dict[str, object]:
        """Nested dicts, built with an explicit stack (a 1,200-deep stack is plausible)."""
        def one(n: TreeNode) -> dict[str, object]:
            d: dict[str, object] = {"frame": n.frame, "kind": n.kind,
                                    "time_ns": n.time_ns, "count": n.count}
            if with_self:
                d["self_ns"] = n.self_ns
            if n.family is not None:
                d["family"] = n.family
            if n.sync:
                d["sync"] = True
            if n.repeats > 1:
                d["repeats"] = n.repeats
            return d

        top = one(self)
        root_kids: list[object] = []
        top["children"] = root_kids
        todo: list[tuple[TreeNode, list[object]]] = [(self, root_kids)]
        while todo:
            n, kids = todo.pop()
            for c in n.children:
                d = one(c)
                sub: list[object] = []
                d["children"] = sub
                kids.append(d)
                todo.append((c, sub))
        return top


@dataclass
class CallTree:
    total_ns: int
    roots: list[TreeNode]
    samples: int = 0  # > 0: built from sampled stacks (L1): counts are samples (sampled.py)
    # sampled stacks with no known sampling period: every time_ns holds a sample count instead
    counts_only: bool = False

    def to_dict(self, with_self: bool = False) -> dict[str, object]:
        d: dict[str, object] = {"total_ns": self.total_ns,
                                "roots": [r.to_dict(with_self) for r in self.roots]}
        if self.samples:
            d.update(samples=self.samples, rigor="L1")
        if self.counts_only:
            d["counts_only"] = True
        return d


class _Frames:
    """The frames table, loaded once per analysis (small: one row per distinct path step)."""

    def __init__(self, store: Store) -> None:
        self.info: dict[int, tuple[int | None, str, str]] = {
            int(n): (None if p is None else int(p), name, kind)
            for n, p, name, kind in store.sql(
                "SELECT node_id, parent_node, name, kind FROM frames").fetchall()
        }

    def path(self, node: int) -> list[int]:
        out: list[int] = []
        cur: int | None = node
        while cur is not None and cur >= 0:
            out.append(cur)
            cur = self.info[cur][0]
        return out[::-1]


def _sort(nodes: list[TreeNode]) -> None:
    todo = [nodes]
    while todo:  # iterative: a deep stack must not hit Python's recursion limit
        level = todo.pop()
        level.sort(key=lambda n: (-n.time_ns, n.frame))
        todo.extend(n.children for n in level)


Row = tuple[int | None, str, str | None, int, int]  # (launch node, kernel, family, ns, n)


def _rows_sql(store: Store) -> list[Row]:
    # kernel names as ids before the join to the launch calls: grouped on the (compressed)
    # name column directly, then on integers (1 M nsys kernels: 2.2 → 0.3 s)
    return store.sql(
        "WITH n AS (SELECT name, any_value(family) AS family, row_number() OVER () AS nid"
        "  FROM f_gpu WHERE kind = 'kernel' GROUP BY name),"
        " a AS (SELECT h.node_id, n.nid, sum(g.dur_ns) AS t, count(*) AS c FROM f_gpu g"
        "  JOIN n ON n.name IS NOT DISTINCT FROM g.name"
        "  LEFT JOIN host_ops h ON h.op_id = g.launch_op_id WHERE g.kind = 'kernel' GROUP BY ALL)"
        " SELECT a.node_id, n.name, n.family, a.t, a.c FROM a JOIN n USING (nid)"
    ).fetchall()


def _rows_numpy(store: Store, k: KernelRows) -> list[Row] | None:
    """`_rows_sql` from the kernel columns already read (name hash, launch node: no join of
    every kernel to host_ops; 1 M nsys kernels 0.2 → 0.03 s), summed in numpy. None when two
    distinct names share a hash (then the SQL join decides)."""
    if k.name_hash is None or k.node is None:
        return None
    names = store.sql("SELECT hash(name) AS h, name, any_value(family) FROM f_gpu"
                      " WHERE kind = 'kernel' GROUP BY name ORDER BY h").fetchall()
    hs = np.array([h for h, _, _ in names], dtype=np.uint64)
    if len(hs) > 1 and not (hs[1:] > hs[:-1]).all():
        return None
    nid = np.searchsorted(hs, k.name_hash)
    key = (k.node + 1) * max(len(names), 1) + nid  # node -1 (none) → the first block
    dur = k.e - k.s
    if len(key) and int(key.max()) < 4 * len(key) + (1 << 16):  # small key range: bincount
        c = np.bincount(key)
        uk = np.nonzero(c)[0]
        t = np.bincount(key, weights=dur)[uk]  # exact: ns sums far below 2**53
        c = c[uk]
    else:
        uk, inv = np.unique(key, return_inverse=True)
        t, c = np.bincount(inv, weights=dur), np.bincount(inv)
    out: list[Row] = []
    for kk, tt, cc in zip(uk.tolist(), t.tolist(), c.tolist(), strict=True):
        node, i = divmod(kk, max(len(names), 1))
        _, name, fam = names[i]
        out.append((None if node == 0 else node - 1, name, fam, int(tt), int(cc)))
    return out


def gpu_view(store: Store, frames: _Frames | None = None,
             kernels: KernelRows | None = None) -> CallTree:
    """kernels: f_gpu's kernel columns read with names (KernelRows(..., names=True)), when
    the caller has them."""
    frames = frames or _Frames(store)
    rows = (_rows_numpy(store, kernels) if kernels is not None else None) or _rows_sql(store)
    root = TreeNode("", "root")
    index: dict[int, TreeNode] = {}  # by frame node id: a node names its whole path
    leaves: dict[tuple[int, str], TreeNode] = {}  # (id of the parent, kernel name)
    missing: TreeNode | None = None
    for node, kname, fam, t, c in rows:
        t, c = int(t), int(c)
        root.time_ns += t
        root.count += c
        if node is None:
            if missing is None:
                missing = TreeNode(MISSING_FRAME, "missing")
                root.children.append(missing)
            parent = missing
            parent.time_ns += t
            parent.count += c
        else:
            parent = root
            for key in frames.path(int(node)):
                child = index.get(key)
                if child is None:
                    _, name, kind = frames.info[key]
                    child = _node(name, kind)
                    parent.children.append(child)
                    index[key] = child
                child.time_ns += t
                child.count += c
                parent = child
        leaf = leaves.get((id(parent), kname))  # a dict: a frame may launch 1000s of names
        if leaf is None:
            leaf = leaves[(id(parent), kname)] = TreeNode(kname, "kernel", family=fam)
            parent.children.append(leaf)
        leaf.time_ns += t
        leaf.count += c
    _sort(root.children)
    return CallTree(root.time_ns, root.children)


def cpu_view(store: Store, frames: _Frames | None = None) -> CallTree:
    frames = frames or _Frames(store)
    rows = store.sql(
        "SELECT node_id, sum(self_ns), count(*) FROM f_host GROUP BY node_id"
    ).fetchall()
    forest = Forest(frames)
    roots, get = forest.roots, forest.get

    total = 0
    for n, s, c in rows:
        s, c = int(s), int(c)
        total += s
        tn = get(int(n))
        tn.self_ns += s
        tn.count += c
    # a frame's time is its subtree's self time: summed children first (one pass over the
    # frames made, not one walk up the stack per frame: Python stacks run 30-60 deep)
    order: list[TreeNode] = []
    todo = list(roots)
    while todo:
        x = todo.pop()
        order.append(x)
        todo.extend(x.children)
    for x in reversed(order):
        x.time_ns = x.self_ns + sum(ch.time_ns for ch in x.children)
    _sort(roots)
    return CallTree(total, roots)


class Forest:
    """TreeNodes made on demand for frame node ids, each hung under its parent's node."""

    def __init__(self, frames: _Frames) -> None:
        self.frames = frames
        self.nodes: dict[int, TreeNode] = {}
        self.roots: list[TreeNode] = []

    def get(self, n: int) -> TreeNode:
        tn = self.nodes.get(n)
        if tn is not None:
            return tn
        missing: list[int] = []  # n and its ancestors not made yet, innermost first
        cur: int | None = n
        while cur is not None and cur >= 0 and cur not in self.nodes:
            missing.append(cur)
            cur = self.frames.info[cur][0]
        for m in reversed(missing):  # outermost first: each parent exists when needed
            parent, name, kind = self.frames.info[m]
            tn = _node(name, kind)
            self.nodes[m] = tn
            if parent is None or parent < 0:
                self.roots.append(tn)
            else:
                self.nodes[parent].children.append(tn)
        return self.nodes[n]


def frames_of(store: Store) -> _Frames:
    return _Frames(store)

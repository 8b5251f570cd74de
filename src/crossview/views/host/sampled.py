"""The CPU view from sampled stacks (nsys CPU sampling, folded / speedscope / pprof files; rigor
L1), when the scope has them; and the GPU view from sampled stacks whose leaves are kernels
(`samples.view = 'gpu'`, sources/stacks/leaves.py), when the scope has no traced kernels.
`rows_held` and `gpu_leaves` read every file of the store (the bundle's inventory and L1 row).

Each sample counts once under its stack (the frames path ending at its leaf node); a frame's
time is its samples × the sampling period (weight_ns), so shares are sample shares. Unlike the
traced CPU view, a frame's `count` here is the number of samples under it (inclusive), and its
self time the samples that ended in it.
"""

from __future__ import annotations

from crossview.kernels import families as kernel_families
from crossview.scope.samples import sampled_totals
from crossview.store.store import Store
from crossview.views.host.calltree import CallTree, Forest, _Frames, _sort


def present(store: Store) -> bool:
    return sampled_totals(store)[0] > 0


def cpu_view(store: Store, fr: _Frames, view: str = "cpu") -> CallTree:
    rows = store.sql(
        "SELECT node_id, sum(weight_ns), sum(count) FROM f_samples WHERE view = $v"
        " GROUP BY node_id", {"v": view}).fetchall()
    forest = Forest(fr)
    nodes, roots, get = forest.nodes, forest.roots, forest.get

    total = samples = 0
    for n, w, c in rows:
        w, c = int(w), int(c)
        total += w
        samples += c
        get(int(n)).self_ns += w
        for anc in fr.path(int(n)):
            nodes[anc].time_ns += w
            nodes[anc].count += c
    if total == 0:  # no sampling period could be measured: rank by samples
        for tn in nodes.values():
            tn.time_ns = tn.count
    _sort(roots)
    return CallTree(total, roots, samples=samples, counts_only=total == 0)


def top_self(store: Store, limit: int) -> list[tuple[str, str, int, int, float]]:
    """(frame, kind, self_ns, samples, share) of the leaf frames: by time when the samples
    have one (a time-weighted profile — torch export_stacks, pprof cpu — ranks by time, not by
    how many lines it wrote), else by samples."""
    total = sampled_totals(store)[1]
    weighted = total > 0
    if not weighted:
        total = sampled_totals(store)[0]
    by = "3" if weighted else "4"
    rows = store.sql(
        "SELECT f.name, f.kind, sum(s.weight_ns), sum(s.count) FROM f_samples s"
        " JOIN frames f USING (node_id) WHERE s.view = 'cpu' GROUP BY ALL"
        f" ORDER BY {by} DESC, 4 DESC, 1 LIMIT {int(limit)}").fetchall()
    return [(n, k, int(w), int(c), (int(w) if weighted else int(c)) / (total or 1))
            for n, k, w, c in rows]


def rows_held(store: Store, artifact_id: int | None = None) -> int:
    """Sample rows of the whole store (no filter), or of one file."""
    if artifact_id is None:
        return int(store.sql("SELECT count(*) FROM samples").fetchall()[0][0])
    return int(store.sql("SELECT count(*) FROM samples WHERE artifact_id = $a",
                         {"a": artifact_id}).fetchall()[0][0])


def gpu_leaves(store: Store) -> list[tuple[str, int, str]]:
    """(leaf frame, samples, a file holding them) of the GPU-view stacks (leaf = kernel) of
    the whole store (no filter), one row per leaf name."""
    return [(str(n), int(c), str(p)) for n, c, p in store.sql(
        "SELECT f.name, sum(s.count), any_value(a.path) FROM samples s JOIN frames f"
        " ON f.node_id = s.node_id JOIN artifacts a USING (artifact_id)"
        " WHERE s.view = 'gpu' GROUP BY f.name").fetchall()]


def gpu_present(store: Store) -> bool:
    return sampled_totals(store, "gpu")[0] > 0


def gpu_view(store: Store, fr: _Frames) -> CallTree:
    """Sampled GPU stacks as the GPU view: kernel leaves get their family (kernel_families)."""
    tree = cpu_view(store, fr, "gpu")
    stack = list(tree.roots)
    while stack:
        n = stack.pop()
        if n.kind == "kernel":
            n.family = kernel_families.classify(n.frame)
        stack.extend(n.children)
    return tree


def gpu_families(tree: CallTree) -> list[tuple[str, int, float]]:
    """(family, time — or samples when counts_only —, share) of the kernel leaves, largest
    first: the L1 sample share per kernel family."""
    acc: dict[str, int] = {}
    stack = list(tree.roots)
    while stack:
        n = stack.pop()
        if n.kind == "kernel":
            fam = n.family or kernel_families.OTHER
            acc[fam] = acc.get(fam, 0) + n.time_ns
        else:
            stack.extend(n.children)
    total = sum(acc.values()) or 1
    return [(f, t, t / total) for f, t in sorted(acc.items(), key=lambda kv: (-kv[1], kv[0]))]

"""The CPU view from sampled stacks (nsys CPU sampling, rigor L1), when the scope has them.

Each sample counts once under its stack (the frames path ending at its leaf node); a frame's
time is its samples × the sampling period (weight_ns), so shares are sample shares. Unlike the
traced CPU view, a frame's `count` here is the number of samples under it (inclusive), and its
self time the samples that ended in it.
"""

from __future__ import annotations

from crossview.store.store import Store
from crossview.views.calltree import CallTree, Forest, _Frames, _sort
from crossview.views.sample_scope import sampled_totals


def present(store: Store) -> bool:
    return sampled_totals(store)[0] > 0


def cpu_view(store: Store, fr: _Frames) -> CallTree:
    rows = store.sql(
        "SELECT node_id, sum(weight_ns), sum(count) FROM f_samples GROUP BY node_id"
    ).fetchall()
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
    return CallTree(total, roots, samples=samples)


def top_self(store: Store, limit: int) -> list[tuple[str, str, int, int, float]]:
    """(frame, kind, self_ns, samples, share) of the leaf frames, by samples."""
    rows = store.sql(
        "SELECT f.name, f.kind, sum(s.weight_ns), sum(s.count) FROM f_samples s"
        " JOIN frames f USING (node_id) GROUP BY ALL ORDER BY 4 DESC, 1"
        f" LIMIT {int(limit)}").fetchall()
    total = store.sql("SELECT sum(count) FROM f_samples").fetchall()[0][0] or 1
    return [(n, k, int(w), int(c), int(c) / total) for n, k, w, c in rows]

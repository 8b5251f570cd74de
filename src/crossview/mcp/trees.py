"""Call trees cut for an agent: top-N pruned trees, folded stacks, hottest frames.

Reads views/host/calltree.py CallTree only; shares are of the tree's total time in scope."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from crossview.export import folded as folded_export
from crossview.views.host.calltree import CallTree, TreeNode

_label = folded_export.label  # kernel leaves read as arrows


def _chain(n: TreeNode) -> list[TreeNode]:
    """n and its single-child descendants: one level of the pruned tree (as the Markdown
    tree shows `a › … › z`), so a deep Python stack does not use up max_depth."""
    out = [n]
    while len(out[-1].children) == 1:
        out.append(out[-1].children[0])
    return out


def _via(labels: list[str], keep: int | None) -> list[str]:
    if keep is None or len(labels) <= keep:
        return labels
    return [labels[0], f"… {len(labels) - keep + 1} frames …", *labels[-(keep - 2):]]


def pruned(tree: CallTree, top: int, max_depth: int, min_share: float,
           collapse: bool = False, via_frames: int | None = None) -> dict[str, Any]:
    """The `top` hottest children per node, down to max_depth, above min_share of total.
    collapse: a single-child chain is one node (`frame` its innermost frame, `via` the
    frames above it, elided to `via_frames` when given)."""
    total = tree.total_ns or 1
    shown = 0

    def walk(nodes: list[TreeNode], depth: int) -> tuple[list[dict[str, Any]], int]:
        nonlocal shown
        ranked = sorted(nodes, key=lambda n: -n.time_ns)
        keep = [n for n in ranked[:top] if n.time_ns / total >= min_share]
        if collapse and not keep and ranked:
            keep = ranked[:1]  # every shown path reaches a leaf (a kernel in the GPU view)
        out = []
        for top_node in keep:
            shown += 1
            chain = _chain(top_node) if collapse else [top_node]
            n = chain[-1]
            d: dict[str, Any] = {"frame": _label(n), "kind": n.kind,
                                 "time_ns": top_node.time_ns,
                                 "share": round(top_node.time_ns / total, 4),
                                 "count": top_node.count}
            if len(chain) > 1:
                d["via"] = _via([_label(c) for c in chain[:-1]], via_frames)
            own = sum(c.self_ns or 0 for c in chain)
            if own:
                d["self_ns"] = own
            if n.family:
                d["family"] = n.family
            if any(c.sync for c in chain):
                d["sync"] = True
            if n.children:
                if depth + 1 < max_depth:
                    d["children"], hidden = walk(n.children, depth + 1)
                    if hidden:
                        d["hidden_children"] = hidden
                else:
                    d["hidden_children"] = len(n.children)
            out.append(d)
        return out, len(nodes) - len(keep)

    roots, hidden = walk(tree.roots, 0)
    d: dict[str, Any] = {"total_ns": tree.total_ns, "roots": roots, "hidden_roots": hidden,
                         "nodes_shown": shown}
    if tree.samples:
        d.update(samples=tree.samples, rigor="L1")  # counts are samples, times estimated
    return d


def folded(tree: CallTree, limit: int) -> tuple[list[str], int, int]:
    """Folded stacks `a;b;→ kernel <ns>` (self time per stack, flamegraph.pl / speedscope
    input), hottest first; returns (lines, stacks in all, ns left out by the limit).
    The stacks are export/folded.py's, the same as `crossview export --to folded`."""
    ranked = folded_export.ranked(tree)
    left = sum(v for _, v in ranked[limit:])
    return [f"{k} {v}" for k, v in ranked[:limit]], len(ranked), left


def hottest_frames(tree: CallTree, limit: int) -> list[dict[str, Any]]:
    """Frames by self and by total time; total counts a recursive frame once per stack."""
    self_ns: dict[tuple[str, str], int] = defaultdict(int)
    total_ns: dict[tuple[str, str], int] = defaultdict(int)
    calls: dict[tuple[str, str], int] = defaultdict(int)
    stack: list[tuple[TreeNode, frozenset[tuple[str, str]]]] = [
        (n, frozenset()) for n in tree.roots]
    while stack:
        n, above = stack.pop()
        key = (n.frame, n.kind)
        own = n.self_ns if n.self_ns else n.time_ns - sum(c.time_ns for c in n.children)
        self_ns[key] += max(own, 0)
        calls[key] += n.count
        if key not in above:
            total_ns[key] += n.time_ns
        stack.extend((c, above | {key}) for c in n.children)
    all_ns = tree.total_ns or 1
    keys = sorted(total_ns, key=lambda k: (-self_ns[k], -total_ns[k], k))[:limit]
    return [{"frame": f, "kind": k, "self_ns": self_ns[(f, k)], "total_ns": total_ns[(f, k)],
             "self_share": round(self_ns[(f, k)] / all_ns, 4),
             "total_share": round(total_ns[(f, k)] / all_ns, 4), "count": calls[(f, k)]}
            for f, k in keys]


def within(lines: list[str], budget: int) -> tuple[list[str], int]:
    """The hottest folded lines whose text fits `budget` characters, and the ns cut."""
    kept: list[str] = []
    used = 0
    for i, line in enumerate(lines):
        if used + len(line) + 1 > budget:
            return kept, sum(int(x.rsplit(" ", 1)[1]) for x in lines[i:])
        kept.append(line)
        used += len(line) + 1
    return kept, 0

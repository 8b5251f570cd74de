"""Call trees (views/host/calltree.py) as compact nested lists for the flamegraph script.

Node: [frame, kind, time_ns, count, family or "", children]. Children under
MIN_SHARE of the tree's total are folded into one "(other)" node per parent, so the page
stays small on traces with millions of events (the report's size budget, docs/architecture.md).
"""

from __future__ import annotations

from typing import Any

from crossview.views.host.calltree import CallTree, TreeNode

MIN_SHARE = 0.001  # frames under 0.1% of the view's time are aggregated into "(other)"
OTHER = "(other)"


def _node(n: TreeNode, floor: float) -> list[Any]:
    return [n.frame, n.kind, n.time_ns, n.count, n.family or "", _kids(n.children, floor)]


def _kids(children: list[TreeNode], floor: float) -> list[list[Any]]:
    keep = [c for c in children if c.time_ns >= floor]
    rest = [c for c in children if c.time_ns < floor]
    out = [_node(c, floor) for c in keep]
    if rest:
        t = sum(c.time_ns for c in rest)
        if t > 0:
            out.append([f"{OTHER} {len(rest):,} frames", "other", t,
                        sum(c.count for c in rest), "", []])
    return out


def flame_data(tree: CallTree, title: str) -> dict[str, Any]:
    floor = tree.total_ns * MIN_SHARE
    return {"title": title, "total_ns": tree.total_ns, "samples": tree.samples,
            "roots": _kids(tree.roots, floor)}


def count_nodes(data: dict[str, Any]) -> int:
    stack = list(data["roots"])
    n = 0
    while stack:
        node = stack.pop()
        n += 1
        stack.extend(node[5])
    return n

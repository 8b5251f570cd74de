"""Pure tree processors over views/host/calltree.py TreeNode lists: merge repeated steps/layers,
collapse single-child chains, prune by share, limit depth, and place sync points under the
frame that called them. Inputs are never modified; every function returns new nodes. Used by
the Markdown trees (render/markdown.py) and offered to HTML and MCP.
"""

from __future__ import annotations

import re
from dataclasses import replace
from functools import cache, lru_cache

from crossview.knowledge import api_roles
from crossview.knowledge.loader import load_yaml
from crossview.views.host.calltree import TreeNode


@cache
def _rules() -> tuple[tuple[re.Pattern[str], str], ...]:
    return tuple((re.compile(r["match"]), r["replace"])
                 for r in load_yaml("trees.yaml")["repeat_rules"])


def normalized(frame: str, kind: str) -> str:
    """The frame with step numbers / layer indices replaced (kernels and python line
    numbers untouched)."""
    return frame if kind in ("kernel", "missing") else _normalized(frame)


@lru_cache(maxsize=1 << 16)  # a tree repeats its frames (2 × 20,000 nodes per recap)
def _normalized(frame: str) -> str:
    for pat, rep in _rules():
        frame = pat.sub(rep, frame)
    return frame


def _copy(n: TreeNode, frame: str | None = None) -> TreeNode:
    # the constructor, not dataclasses.replace (~4× slower; 2 × 20,000 nodes per recap)
    return TreeNode(frame or n.frame, n.kind, n.time_ns, n.count, n.self_ns, n.family, n.sync,
                    list(n.children), n.repeats)


def _add(into: TreeNode, n: TreeNode) -> None:
    into.time_ns += n.time_ns
    into.count += n.count
    into.self_ns += n.self_ns
    into.sync = into.sync or n.sync
    into.children.extend(n.children)


def merge_repeats(nodes: list[TreeNode]) -> list[TreeNode]:
    """Siblings equal up to a step number / layer index become one node (frame with N,
    `repeats` = how many merged); their children merge by frame, recursively. Order: by time."""
    groups: dict[tuple[str, str], TreeNode] = {}
    for n in nodes:
        key = (normalized(n.frame, n.kind), n.kind)
        got = groups.get(key)
        if got is None:
            groups[key] = _copy(n, key[0])
        else:
            _add(got, n)
            # indexed siblings (step 3, step 4) count; the same frame met again under
            # merged parents does not
            got.repeats = got.repeats + n.repeats if key[0] != n.frame \
                else max(got.repeats, n.repeats)
    out = []
    for g in groups.values():
        g.children = merge_repeats(g.children)
        out.append(g)
    return sorted(out, key=lambda n: -n.time_ns)


def collapse_chains(nodes: list[TreeNode], sep: str = " › ") -> list[TreeNode]:
    """A node with exactly one non-kernel child becomes one node named `a › b`."""
    out = []
    for n in nodes:
        cur = _copy(n)
        while len(cur.children) == 1 and cur.children[0].kind != "kernel" \
                and not cur.children[0].sync:
            child = cur.children[0]
            cur = replace(child, frame=cur.frame + sep + child.frame,
                          children=list(child.children))
        cur.children = collapse_chains(cur.children, sep)
        out.append(cur)
    return out


def prune(nodes: list[TreeNode], total: int, min_share: float, max_children: int
          ) -> list[TreeNode]:
    """Keep children at or above min_share of total, at most max_children per node (sync
    points always stay: they are the calls to look at)."""
    keep = [n for n in nodes if n.sync or (total and n.time_ns / total >= min_share)]
    keep = sorted(keep, key=lambda n: (not n.sync, -n.time_ns))
    top = [n for n in keep if not n.sync][:max_children] + [n for n in keep if n.sync]
    return [replace(n, children=prune(n.children, total, min_share, max_children))
            for n in sorted(top, key=lambda n: -n.time_ns)]


def depth_limit(nodes: list[TreeNode], depth: int) -> list[TreeNode]:
    """The tree cut below `depth` levels (depth 1: the roots only)."""
    if depth <= 0:
        return []
    return [replace(n, children=depth_limit(n.children, depth - 1)) for n in nodes]


def place_syncs(gpu: list[TreeNode], cpu: list[TreeNode]) -> tuple[list[TreeNode],
                                                                   list[TreeNode]]:
    """Sync points of the CPU view (nodes marked sync) placed under the deepest GPU-view frame
    on their calling path. Returns (GPU roots with the sync leaves added, syncs whose calling
    path has no GPU-view frame). A sync leaf keeps its host time (blocked) and call count."""
    roots = [_deep_copy(n) for n in gpu]
    homeless: list[TreeNode] = []
    for path, s in _sync_paths(cpu):
        level, parent = roots, None
        for frame in path:
            nxt = next((n for n in level if n.frame == frame and n.kind != "kernel"), None)
            if nxt is None:
                break
            parent, level = nxt, nxt.children
        leaf = replace(s, kind="sync", children=[])
        if parent is None:
            _merge_leaf(homeless, leaf)
        else:
            _merge_leaf(parent.children, leaf)
    return roots, homeless


def _merge_leaf(level: list[TreeNode], leaf: TreeNode) -> None:
    got = next((n for n in level if n.kind == "sync" and n.frame == leaf.frame), None)
    if got is None:
        level.append(leaf)
    else:
        got.time_ns += leaf.time_ns
        got.count += leaf.count


def _deep_copy(n: TreeNode) -> TreeNode:
    return replace(n, children=[_deep_copy(c) for c in n.children])


def _sync_paths(cpu: list[TreeNode]) -> list[tuple[list[str], TreeNode]]:
    out: list[tuple[list[str], TreeNode]] = []
    stack: list[tuple[TreeNode, list[str]]] = [(n, []) for n in cpu]
    while stack:
        n, path = stack.pop()
        if n.sync or api_roles.role_of(n.frame) == "async_memcpy":
            out.append((path, n))
            continue  # the outermost sync frame (an `.item()` op, not its memcpy inside)
        stack.extend((c, [*path, n.frame]) for c in n.children)
    return out

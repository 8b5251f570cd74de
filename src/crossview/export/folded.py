"""Folded stacks (`frame;frame;leaf <weight>`, Brendan Gregg's flamegraph.pl / inferno input)
from a call tree. The weight of a stack is the time that ends in its leaf, in integer ns; the
weights of a tree sum to its total. Also the MCP flamegraph tool's source (mcp/trees.py)."""

from __future__ import annotations

from collections import defaultdict

from crossview.core import inert
from crossview.views.host.calltree import CallTree, TreeNode


def label(n: TreeNode) -> str:
    return f"→ {n.frame}" if n.kind == "kernel" else n.frame  # kernel leaves read as arrows


def stacks(tree: CallTree) -> dict[tuple[str, ...], int]:
    """Every stack (root → leaf labels) with the time that ends in it (> 0 only): a node's
    own time is its time less its children's (self time for the CPU view, the kernel time
    for a GPU-view kernel leaf)."""
    acc: dict[tuple[str, ...], int] = defaultdict(int)
    todo: list[tuple[TreeNode, tuple[str, ...]]] = [(n, (label(n),)) for n in tree.roots]
    while todo:
        n, path = todo.pop()
        own = n.time_ns - sum(c.time_ns for c in n.children)
        if own > 0:
            acc[path] += own
        todo.extend((c, (*path, label(c))) for c in n.children)
    return dict(acc)


def _clean(frame: str) -> str:
    # `;` separates frames and the weight follows the last space: keep both unambiguous; a
    # frame is data, one line with no control or bidi character (core/inert.py)
    return inert.name(frame).replace(";", ",") or "?"


def ranked(tree: CallTree, prefix: tuple[str, ...] = ()) -> list[tuple[str, int]]:
    """(folded stack, ns) lines, hottest first (ties by stack, so output is stable)."""
    merged: dict[str, int] = defaultdict(int)
    for path, ns in stacks(tree).items():
        merged[";".join(_clean(f) for f in (*prefix, *path))] += ns
    return sorted(merged.items(), key=lambda kv: (-kv[1], kv[0]))


def render(trees: list[tuple[str, CallTree]]) -> str:
    """One line per stack. With several views (gpu and cpu), each view's stacks sit under a
    root frame naming it (`GPU view;…`, `CPU view;…`) so one flamegraph shows both apart.
    No header line: flamegraph.pl and inferno reject lines that are not `stack weight`."""
    many = len(trees) > 1
    lines = [f"{k} {v}" for name, tree in trees
             for k, v in ranked(tree, (name,) if many else ())]
    return "\n".join(lines) + ("\n" if lines else "")

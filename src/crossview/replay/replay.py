"""Re-time a dependency graph: each node starts at the latest of its constraints (a node with
none stays at its measured start) and keeps its duration. Records, per node, the constraint
that decided its start, so the critical path can be walked back."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from crossview.errors import CrossviewError
from crossview.replay.graph import Graph


@dataclass
class Timing:
    start: list[int]
    end: list[int]
    binding: list[int]  # index into graph.cons[node] of the deciding constraint; -1: none


def replay(g: Graph) -> Timing:
    n = len(g)
    indeg = [0] * n
    succ: list[list[int]] = [[] for _ in range(n)]
    for i, cs in enumerate(g.cons):
        for c in cs:
            succ[c.pred].append(i)
            indeg[i] += 1
    start = [0] * n
    end = [0] * n
    binding = [-1] * n
    ready = deque(i for i in range(n) if indeg[i] == 0)
    done = 0
    while ready:
        i = ready.popleft()
        done += 1
        best, which = None, -1
        for k, c in enumerate(g.cons[i]):
            t = (end[c.pred] if c.at_end else start[c.pred]) + c.offset
            if best is None or t > best:
                best, which = t, k
        s = g.mstart[i] if best is None else best
        start[i], end[i], binding[i] = s, s + g.dur[i], which
        for j in succ[i]:
            indeg[j] -= 1
            if indeg[j] == 0:
                ready.append(j)
    if done != n:
        raise CrossviewError(f"replay: the dependency graph has a cycle ({n - done} nodes)")
    return Timing(start, end, binding)

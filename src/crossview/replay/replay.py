"""Re-time a dependency graph: each node starts at the latest of its constraints (a node with
none stays at its measured start) and keeps its duration. Records, per node, the constraint
that decided its start, so the critical path can be walked back.

The nodes are visited in one topological order, computed once per graph and shared by its
copies: a lever changes durations and drops constraints, never adds one, so the order stays
valid (checked as the replay goes: a constraint on a node not yet timed recomputes it)."""

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


def order(g: Graph) -> list[int]:
    """A topological order of the graph's nodes (Kahn's, ties in node order)."""
    n = len(g)
    indeg = [0] * n
    succ: list[list[int]] = [[] for _ in range(n)]
    for i, cs in enumerate(g.cons):
        for c in cs:
            succ[c.pred].append(i)
            indeg[i] += 1
    ready = deque(i for i in range(n) if indeg[i] == 0)
    out: list[int] = []
    while ready:
        i = ready.popleft()
        out.append(i)
        for j in succ[i]:
            indeg[j] -= 1
            if indeg[j] == 0:
                ready.append(j)
    if len(out) != n:
        raise CrossviewError(f"replay: the dependency graph has a cycle ({n - len(out)} nodes)")
    return out


def replay(g: Graph) -> Timing:
    n = len(g)
    if g.order is None or len(g.order) != n:
        g.order = order(g)
    t = _timed(g, g.order)
    if t is None:  # a constraint the order did not know of: order again
        g.order = order(g)
        t = _timed(g, g.order)
        assert t is not None
    return t


def _timed(g: Graph, seq: list[int]) -> Timing | None:
    n = len(g)
    start = [0] * n
    end = [0] * n
    binding = [-1] * n
    done = bytearray(n)
    cons, mstart, dur = g.cons, g.mstart, g.dur
    for i in seq:
        cs = cons[i]
        if len(cs) == 1:  # most nodes: one constraint (a thread's chain, a stream's order)
            pred, at_end, offset, _why = cs[0]
            if not done[pred]:
                return None
            s = (end[pred] if at_end else start[pred]) + offset
            binding[i] = 0
        elif not cs:
            s = mstart[i]
        else:
            best = None
            which = -1
            for k, (pred, at_end, offset, _why) in enumerate(cs):
                if not done[pred]:
                    return None
                t = (end[pred] if at_end else start[pred]) + offset
                if best is None or t > best:
                    best, which = t, k
            s = mstart[i] if best is None else best
            binding[i] = which
        start[i] = s
        end[i] = s + dur[i]
        done[i] = 1
    return Timing(start, end, binding)

"""What a replay predicts per step: step time, GPU busy, and what bounds the step (the
critical path walked back through the deciding constraints)."""

from __future__ import annotations

import bisect
from collections.abc import Iterator
from dataclasses import dataclass, field

from crossview.replay.graph import CPU, GAP, GPU_KINDS, WAIT, Cons, Graph
from crossview.replay.replay import Timing
from crossview.replay.steps import Step


@dataclass
class StepResult:
    name: str
    measured_ns: int
    predicted_ns: int
    gpu_busy_ns: int
    path: dict[str, int] = field(default_factory=dict)  # critical-path time by cause (ns)


def active(g: Graph) -> list[int]:
    """Nodes of the lanes that take part: GPU streams and host threads that call the CUDA
    API (a thread holding only a profiler-wide annotation would pin the capture's end)."""
    lanes = {g.lane[i] for i in range(len(g)) if g.kind[i] != CPU and g.kind[i] != GAP}
    return [i for i in range(len(g)) if g.lane[i] in lanes]


def _bounds(g: Graph, t: Timing, step: Step, use_measured: bool) -> tuple[int, int] | None:
    if not step.lane:  # the whole capture
        nodes = active(g)
        if use_measured:
            return (min(g.mstart[i] for i in nodes),
                    max(g.mstart[i] + g.dur[i] for i in nodes))
        return min(t.start[i] for i in nodes), max(t.end[i] for i in nodes)
    first = g.at.get((step.lane, step.start_ns))
    last = g.end_at.get((step.lane, step.end_ns))
    if first is None or last is None:
        return None
    before = g.end_at.get((step.lane, step.start_ns))
    a = t.end[before] if before is not None else t.start[first]
    return a, t.end[last]


def measure(g: Graph, t: Timing, steps: list[Step], paths: bool = True) -> list[StepResult]:
    """paths: walk each step's critical path back (whatif's `critical_path`); the recap's
    expected effects use the step times alone and skip it."""
    busy = _merged(t, g)
    out = []
    for st in steps:
        b = _bounds(g, t, st, False)
        if b is None:
            continue
        a, e = b
        measured = st.dur_ns if st.lane else _span(g)
        out.append(StepResult(st.name, measured, e - a, _busy_in(busy, a, e),
                              _path(g, t, _last(g, t, st), a) if paths else {}))
    return out


def _last(g: Graph, t: Timing, st: Step) -> int:
    """The node the step's critical path is walked back from: the one ending the step range
    (placed: `_bounds` found it), or the last to end in a whole-capture step."""
    if st.lane:
        return g.end_at[(st.lane, st.end_ns)]
    return max(active(g), key=lambda i: t.end[i])


def _span(g: Graph) -> int:
    nodes = active(g)
    return max(g.mstart[i] + g.dur[i] for i in nodes) - min(g.mstart[i] for i in nodes)


def _merged(t: Timing, g: Graph) -> list[tuple[int, int]]:
    spans = sorted((t.start[i], t.end[i]) for i in range(len(g)) if g.kind[i] in GPU_KINDS)
    out: list[tuple[int, int]] = []
    for s, e in spans:
        if out and s <= out[-1][1]:
            if e > out[-1][1]:
                out[-1] = (out[-1][0], e)
        else:
            out.append((s, e))
    return out


def _busy_in(merged: list[tuple[int, int]], a: int, b: int) -> int:
    i = max(0, bisect.bisect_right(merged, (a, a)) - 1)
    total = 0
    while i < len(merged) and merged[i][0] < b:
        s, e = merged[i]
        total += max(0, min(e, b) - max(s, a))
        i += 1
    return total


def cause(g: Graph, i: int) -> str:
    """The critical-path label of one node's own time."""
    k = g.kind[i]
    if k in GPU_KINDS:
        return f"GPU {k} {g.family[i] or ''}".rstrip()
    if "dataloader" in g.tags[i]:
        return "host: data loading"
    if "startup" in g.tags[i]:
        return "host: start-up/JIT"
    if k in (CPU, GAP):
        return "host: CPU (ops and Python)"
    if k == WAIT:
        return "host: waiting"
    return "host: runtime API calls"


# the critical path reaching the first node of a lane: time the capture records nothing for
BEFORE_FIRST_OP = "before the lane's first recorded op (measured start)"
_OFFSET_CAUSE = {"launch": "launch latency (launch → GPU start)", "stream": "GPU queue gaps",
                 "event": "cross-stream wait", "sync": "sync return", "thread": "thread wake-up",
                 "chain": "host: CPU (ops and Python)"}


def _walk(g: Graph, t: Timing, last: int, floor: int
          ) -> Iterator[tuple[str, int, int, Cons | None]]:
    """The critical path back from `last` to `floor`: (cause, ns, node, the constraint whose
    offset the time is — None for a node's own time or the lane's measured start)."""
    i: int | None = last
    top = t.end[last]  # the path reaches a node at its end, or at its start via a launch
    while i is not None and top > floor:
        own = top - max(t.start[i], floor)
        if own > 0:
            yield cause(g, i), own, i, None
        k = t.binding[i]
        if t.start[i] <= floor:
            break
        if k < 0:  # the first node of its lane, at its measured start
            yield BEFORE_FIRST_OP, t.start[i] - floor, i, None
            break
        c = g.cons[i][k]
        p = c.pred
        anchor = t.end[p] if c.at_end else t.start[p]
        gap = t.start[i] - max(anchor, floor)
        if gap > 0:
            yield _OFFSET_CAUSE[c.why], gap, i, c
        top = min(anchor, t.start[i])
        i = p


def _path(g: Graph, t: Timing, last: int, floor: int) -> dict[str, int]:
    out: dict[str, int] = {}
    for key, ns, _i, _c in _walk(g, t, last, floor):
        out[key] = out.get(key, 0) + ns
    return out


def pinned(g: Graph, t: Timing, step: Step, min_lag_ns: int) -> int:
    """Time of the step's critical path held at a measured launch → start delay of at least
    `min_lag_ns` on a GPU op not replayed from a CUDA graph. The graph keeps the measured
    delay when nothing it models explains the op's start (its stream idle just before it, no
    other stream's op ending just before it): the op waited on a dependency the graph does not
    hold — another stream's work it could not match, another device or process, a peer rank,
    the host staging a copy — so no lever moves that time (0 when the step cannot be
    placed)."""
    b = _bounds(g, t, step, False)
    if b is None:
        return 0
    return sum(ns for _k, ns, i, c in _walk(g, t, _last(g, t, step), b[0])
               if c is not None and c.why == "launch" and c.offset >= min_lag_ns
               and "graph" not in g.tags[i])

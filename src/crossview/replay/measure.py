"""What a replay predicts per step: step time, GPU busy, and what bounds the step (the
critical path walked back through the deciding constraints)."""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field

from crossview.replay.graph import CPU, GAP, GPU_KINDS, WAIT, Graph
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
        last = g.end_at.get((st.lane, st.end_ns)) if st.lane else max(
            active(g), key=lambda i: t.end[i])
        measured = st.dur_ns if st.lane else _span(g)
        out.append(StepResult(st.name, measured, e - a, _busy_in(busy, a, e),
                              _path(g, t, last, a) if paths else {}))  # type: ignore[arg-type]
    return out


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


_OFFSET_CAUSE = {"launch": "launch latency (launch → GPU start)", "stream": "GPU queue gaps",
                 "event": "cross-stream wait", "sync": "sync return", "thread": "thread wake-up",
                 "chain": "host: CPU (ops and Python)"}


def _path(g: Graph, t: Timing, last: int, floor: int) -> dict[str, int]:
    out: dict[str, int] = {}
    i: int | None = last
    top = t.end[last]  # the path reaches a node at its end, or at its start via a launch
    while i is not None and top > floor:
        own = top - max(t.start[i], floor)
        if own > 0:
            key = cause(g, i)
            out[key] = out.get(key, 0) + own
        k = t.binding[i]
        if t.start[i] <= floor:
            break
        if k < 0:  # the first node of its lane, at its measured start
            key = "before the lane's first recorded op (measured start)"
            out[key] = out.get(key, 0) + t.start[i] - floor
            break
        c = g.cons[i][k]
        p = c.pred
        anchor = t.end[p] if c.at_end else t.start[p]
        gap = t.start[i] - max(anchor, floor)
        if gap > 0:
            key = _OFFSET_CAUSE[c.why]
            out[key] = out.get(key, 0) + gap
        top = min(anchor, t.start[i])
        i = p
    return out

"""What a replay predicts per step: step time, GPU busy, and what bounds the step (the
critical path walked back through the deciding constraints)."""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import partial

import numpy as np

from crossview import intervals
from crossview.replay.graph import CPU, GAP, GPU_KINDS, KERNEL, WAIT, Cons, Graph
from crossview.replay.replay import Timing
from crossview.replay.steps import TAIL_ALL, TAIL_LAUNCHED, Step


@dataclass
class StepResult:
    name: str
    measured_ns: int
    predicted_ns: int
    gpu_busy_ns: int
    # critical-path time by cause (ns), or how to walk it: walked when first read (a recap
    # reads the median step's path only)
    walked: dict[str, int] | Callable[[], dict[str, int]] = field(default_factory=dict)

    @property
    def path(self) -> dict[str, int]:
        if callable(self.walked):
            self.walked = self.walked()
        return self.walked


def active(g: Graph) -> list[int]:
    """Nodes of the lanes that take part: GPU streams and host threads that call the CUDA
    API (a thread holding only a profiler-wide annotation would pin the capture's end)."""
    lanes = {g.lane[i] for i in range(len(g)) if g.kind[i] != CPU and g.kind[i] != GAP}
    return [i for i in range(len(g)) if g.lane[i] in lanes]


def _start(g: Graph, t: Timing, step: Step) -> tuple[int, int | None] | None:
    """The replayed start of the step and the lane's node ending there (None: the step's
    start is not on the graph)."""
    if not step.lane:  # the whole capture
        return min(t.start[i] for i in active(g)), None
    first = g.at.get((step.lane, step.start_ns))
    if first is None:
        return None
    before = g.end_at.get((step.lane, step.start_ns))
    return (t.end[before], before) if before is not None else (t.start[first], None)


def _bounds(g: Graph, t: Timing, step: Step, nxt: tuple[int, int | None] | None = None,
            launches: tuple[list[int], list[int]] | None = None
            ) -> tuple[int, int, int] | None:
    """(start, end, the node ending the step) of the replayed step; `nxt`: the next step's
    `_start`, where a GPU tail stops (scope/step_detect `_extend_to_gpu_tail`): the step then
    ends on the node the next one starts after."""
    s = _start(g, t, step)
    if s is None:
        return None
    a = s[0]
    if not step.lane or step.tail == TAIL_ALL:  # the capture's last op / last kernel
        pool = active(g) if not step.lane else [i for i in range(len(g)) if g.kind[i] == KERNEL]
        last = max(pool, key=lambda i: t.end[i], default=None)
        return None if last is None else (a, t.end[last], last)
    last = g.end_at.get((step.lane, step.host_end_ns))
    if last is None:
        return None
    e = t.end[last]
    if step.tail == TAIL_LAUNCHED:  # until the kernels launched inside the range end
        for i in _launched(launches or _launches(g), step):
            if t.end[i] > e:
                e, last = t.end[i], i
        if nxt is not None and e > nxt[0]:
            e = nxt[0]
            last = nxt[1] if nxt[1] is not None else last
    return a, e, last


def bounds(g: Graph, t: Timing, steps: list[Step]) -> list[tuple[int, int, int] | None]:
    """Each step's replayed (start, end, last node), a GPU tail capped at the next start."""
    starts = [_start(g, t, st) for st in steps]
    launches = _launches(g) if any(st.tail == TAIL_LAUNCHED for st in steps) else None
    return [_bounds(g, t, st, starts[k + 1] if k + 1 < len(steps) else None, launches)
            for k, st in enumerate(steps)]


def _launches(g: Graph) -> tuple[list[int], list[int]]:
    """Kernel nodes sorted by their launch call's measured start: (starts, nodes). Kept on
    the graph and shared by its copies while their kernels keep the constraint lists it was
    read from (a lever replaces a node's list whole; kinds and measured starts never change):
    one sort per graph, not one per measured replay."""
    kind, cons, ms = g.kind, g.cons, g.mstart
    if g.launches is not None:
        n, kernels, lists, kept = g.launches
        if n == len(cons) and all(cons[i] is c for i, c in zip(kernels, lists, strict=True)):
            return kept
    kernels = [i for i in gpu_nodes(g).tolist() if kind[i] == KERNEL]
    pairs = sorted((ms[ln], i) for i in kernels
                   for ln in [next((c.pred for c in cons[i] if c.why == "launch"), None)]
                   if ln is not None)
    out = [a for a, _ in pairs], [i for _, i in pairs]
    g.launches = (len(cons), kernels, [cons[i] for i in kernels], out)
    return out


def _launched(launches: tuple[list[int], list[int]], step: Step) -> list[int]:
    """Kernel nodes whose launch call started inside the step's host range."""
    starts, nodes = launches
    lo = bisect.bisect_left(starts, step.start_ns)
    return nodes[lo:bisect.bisect_left(starts, step.host_end_ns)]


def measure(g: Graph, t: Timing, steps: list[Step], paths: bool = True) -> list[StepResult]:
    """paths: each step's critical path, walked back when first read (whatif's
    `critical_path` and the recap's "then bound by" read the median step's); without, none."""
    busy = _merged(t, g)
    out = []
    for st, b in zip(steps, bounds(g, t, steps), strict=True):
        if b is None:
            continue
        a, e, last = b
        measured = st.dur_ns if st.lane else _span(g)
        out.append(StepResult(st.name, measured, e - a, _busy_in(busy, a, e),
                              partial(_path, g, t, last, a, e) if paths else {}))
    return out


def _span(g: Graph) -> int:
    nodes = active(g)
    return max(g.mstart[i] + g.dur[i] for i in nodes) - min(g.mstart[i] for i in nodes)


def _merged(t: Timing, g: Graph) -> tuple[np.ndarray, np.ndarray]:
    """The union of the replayed GPU ops' spans (sorted, disjoint)."""
    idx = gpu_nodes(g)
    s = np.asarray(t.start, dtype=np.int64)[idx]
    return intervals.merge(s, s + np.asarray(g.dur, dtype=np.int64)[idx])


def _busy_in(merged: tuple[np.ndarray, np.ndarray], a: int, b: int) -> int:
    us, ue = merged
    one = np.asarray([a], dtype=np.int64)
    return int(intervals.overlap(one, np.asarray([b], dtype=np.int64), us, ue)[0])


def gpu_nodes(g: Graph) -> np.ndarray:
    """The GPU ops' node indices, once per graph (its copies share them: levers change no
    node's kind)."""
    if g.gpu is None or g.gpu_of != len(g):
        g.gpu = np.flatnonzero(np.isin(np.asarray(g.kind, dtype=object), list(GPU_KINDS)))
        g.gpu_of = len(g)
    return g.gpu


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


def _walk(g: Graph, t: Timing, last: int, floor: int, ceil: int
          ) -> Iterator[tuple[str, int, int, Cons | None]]:
    """The critical path back from `last` (at `ceil` when the step ends while it runs: a GPU
    tail capped at the next step's start) to `floor`: (cause, ns, node, the constraint whose
    offset the time is — None for a node's own time or the lane's measured start)."""
    i: int | None = last
    # the path reaches a node at its end, or at its start via a launch
    top = min(t.end[last], ceil)
    while i is not None and top > floor:
        own = top - max(t.start[i], floor)
        if own > 0:
            yield cause(g, i), own, i, None
        k = t.binding[i]
        if t.start[i] <= floor:
            break
        if k < 0:  # the first node of its lane, at its measured start
            yield BEFORE_FIRST_OP, min(t.start[i], top) - floor, i, None
            break
        c = g.cons[i][k]
        p = c.pred
        anchor = t.end[p] if c.at_end else t.start[p]
        gap = min(t.start[i], top) - max(anchor, floor)
        if gap > 0:
            yield _OFFSET_CAUSE[c.why], gap, i, c
        top = min(anchor, t.start[i], top)
        i = p


def labels(g: Graph) -> list[str]:
    """Each node's `cause`, once per graph (its copies share it: levers change neither a
    node's kind, family nor tags)."""
    if g.labels is None or len(g.labels) != len(g):
        g.labels = [cause(g, i) for i in range(len(g))]
    return g.labels


def _path(g: Graph, t: Timing, last: int, floor: int, ceil: int) -> dict[str, int]:
    """`_walk`'s time summed by cause, in the order the walk meets them (one loop: a step's
    path holds tens of thousands of nodes)."""
    out: dict[str, int] = {}
    lab, cons = labels(g), g.cons
    start, end, binding = t.start, t.end, t.binding
    i = last
    top = min(end[last], ceil)
    while top > floor:
        si = start[i]
        own = top - (si if si > floor else floor)
        if own > 0:
            key = lab[i]
            out[key] = out.get(key, 0) + own
        k = binding[i]
        if si <= floor:
            break
        m = si if si < top else top
        if k < 0:  # the first node of its lane, at its measured start
            out[BEFORE_FIRST_OP] = out.get(BEFORE_FIRST_OP, 0) + m - floor
            break
        p, at_end, _off, why = cons[i][k]
        anchor = end[p] if at_end else start[p]
        gap = m - (anchor if anchor > floor else floor)
        if gap > 0:
            key = _OFFSET_CAUSE[why]
            out[key] = out.get(key, 0) + gap
        top = anchor if anchor < m else m
        i = p
    return out


def pinned(g: Graph, t: Timing, steps: list[Step], k: int, min_lag_ns: int) -> int:
    """Time of the step's critical path held at a measured launch → start delay of at least
    `min_lag_ns` on a GPU op not replayed from a CUDA graph. The graph keeps the measured
    delay when nothing it models explains the op's start (its stream idle just before it, no
    other stream's op ending just before it): the op waited on a dependency the graph does not
    hold — another stream's work it could not match, another device or process, a peer rank,
    the host staging a copy — so no lever moves that time (0 when the step cannot be
    placed). The step is `steps[k]`."""
    b = bounds(g, t, steps)[k]
    if b is None:
        return 0
    return sum(ns for _k, ns, i, c in _walk(g, t, b[2], b[0], b[1])
               if c is not None and c.why == "launch" and c.offset >= min_lag_ns
               and "graph" not in g.tags[i])

"""Replay the joined graph of all ranks (replay/rank_graph.py) and read it per rank and per
job step: each rank's steps (bounded as replay/measure.py bounds one capture's), its wait and
transfer in collectives, the job's step (the earliest rank's start to the latest rank's end)
and the cross-rank critical path walked back from the rank that ends last
(views/distributed/rank_path.py)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from crossview.replay.graph import GPU_KINDS, KERNEL, Cons, Graph
from crossview.replay.measure import BEFORE_FIRST_OP, bounds, cause
from crossview.replay.rank_graph import ARRIVAL, COLLECTIVE, TRANSFER, Joined, RankPart
from crossview.replay.replay import Timing
from crossview.views.distributed.rank_path import TRANSFER as TRANSFER_CAUSE
from crossview.views.distributed.rank_path import CriticalPath, PathPiece

_OFFSET_CAUSE = {"launch": "launch latency (launch → GPU start)", "stream": "GPU queue gaps",
                 "event": "cross-stream wait", "sync": "sync return",
                 "thread": "thread wake-up", "chain": "host: CPU (ops and Python)",
                 COLLECTIVE: "a missing rank's lateness (fixed)"}


@dataclass
class RankStep:
    rank: int
    name: str
    measured_ns: int
    predicted_ns: int
    start_ns: int  # replayed, common clock
    end_ns: int
    last: int  # the joined graph's node ending the step
    wait_ns: int = 0  # its collectives' wait for the last member inside the step
    transfer_ns: int = 0

    @property
    def error(self) -> float:
        return abs(self.predicted_ns - self.measured_ns) / self.measured_ns \
            if self.measured_ns else 0.0

    def to_dict(self) -> dict[str, object]:
        return {"rank": self.rank, "step": self.name, "measured_ns": self.measured_ns,
                "replayed_ns": self.predicted_ns, "wait_ns": self.wait_ns,
                "transfer_ns": self.transfer_ns}


@dataclass
class JobStep:
    """Step k of every rank together: the job moves at its slowest rank's pace, so its step
    is the longest of the ranks' k-th steps (a rank's own start to its own end)."""

    name: str
    start_ns: int  # the slowest rank's step, as replayed (common clock)
    end_ns: int
    ends_on: int  # the slowest rank: where the critical path starts
    last: int  # its last node
    ranks: list[RankStep] = field(default_factory=list)

    @property
    def ns(self) -> int:
        return self.end_ns - self.start_ns


def _slice(g: Graph, t: Timing, p: RankPart) -> tuple[Graph, Timing]:
    """Rank p's nodes as a graph of their own and their timing: what replay/measure.py bounds
    a step on (it reads lanes, kinds, the step marks and kernels' launch constraints' preds,
    so only those are carried, offset 0; other constraints are left out). The constraints
    are made once per part: the joins that share it differ in durations and offsets only."""
    lo, hi = p.lo, p.hi
    kinds = g.kind[lo:hi]
    cons = p.launch_cons
    if cons is None or len(cons) != hi - lo:
        cons = p.launch_cons = [
            [Cons(c.pred - lo, c.at_end, 0, c.why) for c in cs
             if c.why == "launch" and lo <= c.pred < hi] if k == KERNEL else []
            for k, cs in zip(kinds, g.cons[lo:hi], strict=True)]
    at = p.at if p.at is not None else g.at.window(lo, hi)
    end_at = p.end_at if p.end_at is not None else g.end_at.window(lo, hi)
    sub = Graph(kinds, g.lane[lo:hi], g.name[lo:hi], g.dur[lo:hi], g.mstart[lo:hi], cons,
                g.family[lo:hi], g.tags[lo:hi], g.nbytes[lo:hi], g.op_ref[lo:hi], at, end_at)
    return sub, Timing(t.start[lo:hi], t.end[lo:hi], [-1] * (hi - lo))


def rank_steps(j: Joined, t: Timing) -> dict[int, list[RankStep | None]]:
    """Per rank, its steps as replayed (None: a step not placed on the graph)."""
    out: dict[int, list[RankStep | None]] = {}
    for p in j.parts:
        sub, st = _slice(j.graph, t, p)
        row: list[RankStep | None] = []
        for step, b in zip(p.steps, bounds(sub, st, p.steps), strict=True):
            if b is None:
                row.append(None)
                continue
            a, e, last = b
            w, x = _comm_in(j, t, p, a, e)
            row.append(RankStep(p.rank, step.name, step.dur_ns, e - a, a, e, last + p.lo,
                                w, x))
        out[p.rank] = row
    return out


def _comm_in(j: Joined, t: Timing, p: RankPart, a: int, e: int) -> tuple[int, int]:
    """(wait, transfer) of rank p's joined collectives inside [a, e) as replayed."""
    wait = xfer = 0
    for (ci, rk), tr in j.transfers.items():
        if rk != p.rank:
            continue
        arr = j.arrivals[(ci, rk)]
        s0, s1, s2 = t.start[arr], t.start[tr], t.end[tr]
        wait += max(0, min(s1, e) - max(s0, a))
        xfer += max(0, min(s2, e) - max(s1, a))
    return wait, xfer


def job_steps(j: Joined, per_rank: dict[int, list[RankStep | None]]) -> list[JobStep]:
    """Step k of the ranks together, for every k all ranks place."""
    n = min((len(v) for v in per_rank.values()), default=0)
    out: list[JobStep] = []
    for k in range(n):
        row = [v[k] for v in per_rank.values()]
        if any(x is None for x in row):
            continue
        steps = [x for x in row if x is not None]
        slow = max(steps, key=lambda x: (x.predicted_ns, -x.rank))
        out.append(JobStep(slow.name, slow.start_ns, slow.end_ns, slow.rank, slow.last, steps))
    return out


def measured_job_steps(j: Joined) -> list[tuple[str, int]]:
    """(name, measured ns) of step k over the ranks: the longest rank's measured step."""
    n = min((len(p.steps) for p in j.parts), default=0)
    return [(j.parts[0].steps[k].name, max(p.steps[k].dur_ns for p in j.parts))
            for k in range(n)]


def _label(g: Graph, i: int) -> str:
    if TRANSFER in g.tags[i]:
        return TRANSFER_CAUSE
    return cause(g, i)


def _walk(j: Joined, t: Timing, last: int, floor: int, ceil: int
          ) -> Iterator[tuple[int, str, int, int, int]]:
    """The critical path back from `last` (its end capped at `ceil`) to `floor` across ranks:
    (node, cause, start, end, is own time 1 / an offset 0)."""
    g = j.graph
    i: int | None = last
    top = min(t.end[last], ceil)
    while i is not None and top > floor:
        lo = max(t.start[i], floor)
        if top > lo and ARRIVAL not in g.tags[i]:
            yield i, _label(g, i), lo, top, 1
        k = t.binding[i]
        if t.start[i] <= floor:
            break
        if k < 0:
            yield i, BEFORE_FIRST_OP, floor, min(t.start[i], top), 0
            break
        c = g.cons[i][k]
        anchor = t.end[c.pred] if c.at_end else t.start[c.pred]
        a, b = max(anchor, floor), min(t.start[i], top)
        if b > a:
            yield i, _OFFSET_CAUSE.get(c.why, c.why), a, b, 0
        top = min(anchor, t.start[i], top)
        i = c.pred


def critical_path(j: Joined, t: Timing, step: JobStep, top_ops: int) -> CriticalPath:
    """The chain of (rank, op) that sets the job step's time, in time order."""
    pieces = []
    for i, why, a, b, own in _walk(j, t, step.last, step.start_ns, step.end_ns):
        p = j.part_of(i)
        op = j.graph.name[i] if own else ""
        pieces.append(PathPiece(p.rank, a, b, why, op))
    pieces.reverse()
    return CriticalPath(step.name, step.start_ns, step.end_ns, step.ends_on, pieces, top_ops)


def gpu_busy(j: Joined, t: Timing, p: RankPart, a: int, e: int) -> int:
    """GPU busy of rank p in [a, e): its GPU ops as replayed, a collective's wait included
    (the kernel spins from its arrival: busy as the trace counts it)."""
    g = j.graph
    spans = [(t.start[i], t.end[i]) for i in range(p.lo, p.hi)
             if g.kind[i] in GPU_KINDS and ARRIVAL not in g.tags[i]]
    spans += [(t.start[j.arrivals[k]], t.start[tr]) for k, tr in j.transfers.items()
              if k[1] == p.rank]
    total, cur_s, cur_e = 0, None, None
    for s, e2 in sorted(spans):
        s, e2 = max(s, a), min(e2, e)
        if e2 <= s:
            continue
        if cur_e is None or s > cur_e:
            if cur_e is not None and cur_s is not None:
                total += cur_e - cur_s
            cur_s, cur_e = s, e2
        else:
            cur_e = max(cur_e, e2)
    if cur_e is not None and cur_s is not None:
        total += cur_e - cur_s
    return total

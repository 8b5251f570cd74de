"""Collective kernels that waited for a peer rank, read from one rank's trace.

A collective kernel runs from its launch on the stream until every rank has sent its part:
its duration is the transfer plus the time it spins for peers that have not arrived. In a
training loop the steps issue the same collectives in the same order, so the shortest run of
the i-th collective over the steps is at most its transfer (plus the least wait seen); the
rest of each run is waiting for a peer. Steps whose comm kernels (names in start order) match
form the comparison; their excess over the per-position minimum, where ≥
`peer_wait_min_excess_ns`, is the wait, placed at the kernel's start (a kernel polls for its
peers before it moves data). A lower bound: a wait present in every step stays in the minimum.

hta_v100_ddp_training (rank 1 of 2): steps 2–5 run their 404 all-reduces at a median 8 µs,
step 6 at 271 µs with the same compute kernels: about 60 ms of step 6's communication is this
rank waiting for rank 0.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from crossview.scope.step_detect import Step
from crossview.store.store import Store

I64 = npt.NDArray[np.int64]


@dataclass(frozen=True)
class StepWait:
    number: int  # Step.number
    wall_ns: int
    comm_ns: int  # summed duration of the step's collective kernels
    wait_ns: int  # of it, waiting for peers (excess over the per-position minimum)
    median_call_ns: int


@dataclass
class PeerWait:
    artifact_id: int
    artifact: str
    device: int
    calls: int  # collective kernels per compared step
    baseline_median_ns: int  # median of the per-position minimum durations
    steps: list[StepWait]
    wait_s: I64 = field(repr=False)  # wait intervals (start-ordered, disjoint per stream)
    wait_e: I64 = field(repr=False)

    def to_dict(self) -> dict[str, object]:
        return {"artifact": self.artifact, "device": self.device, "calls": self.calls,
                "baseline_median_ns": self.baseline_median_ns,
                "steps": [{"step": x.number, "wall_ns": x.wall_ns, "comm_ns": x.comm_ns,
                           "wait_ns": x.wait_ns, "median_call_ns": x.median_call_ns}
                          for x in self.steps]}


def compute(store: Store, steps: list[Step], min_steps: int,
            min_excess_ns: int) -> list[PeerWait]:
    """Per (artifact, device) with ≥ `min_steps` steps issuing the same collective kernels,
    the wait of each of those steps; [] where no device qualifies."""
    by_art: dict[int, list[Step]] = {}
    for x in steps:
        by_art.setdefault(x.artifact_id, []).append(x)
    if not any(len(v) >= min_steps for v in by_art.values()):
        return []
    rows = store.sql(
        "SELECT artifact_id, device, name, start_ns, dur_ns FROM f_gpu WHERE kind = 'kernel' "
        "AND family = 'comm' AND artifact_id IN (SELECT unnest($a)) "
        "ORDER BY artifact_id, device, start_ns, dur_ns",
        {"a": [a for a, v in by_art.items() if len(v) >= min_steps]}).fetchall()
    out: list[PeerWait] = []
    start = 0
    while start < len(rows):
        a, d = rows[start][0], rows[start][1]
        end = start
        while end < len(rows) and rows[end][0] == a and rows[end][1] == d:
            end += 1
        got = _device(int(a), int(d), rows[start:end], by_art[int(a)], min_steps,
                      min_excess_ns)
        if got is not None:
            out.append(got)
        start = end
    return out


def _device(a: int, d: int, rows: list[tuple[object, ...]], steps: list[Step],
            min_steps: int, min_excess_ns: int) -> PeerWait | None:
    names = [str(r[2]) for r in rows]
    s = np.array([r[3] for r in rows], dtype=np.int64)
    dur = np.array([r[4] for r in rows], dtype=np.int64)
    # the kernels of each step, by start
    per: dict[tuple[str, ...], list[tuple[Step, slice]]] = {}
    for x in steps:
        lo, hi = np.searchsorted(s, [x.start_ns, x.end_ns])
        if hi > lo:
            per.setdefault(tuple(names[lo:hi]), []).append((x, slice(int(lo), int(hi))))
    if not per:
        return None
    # the collective sequence most steps share (ties: the longer sequence)
    seq, group = max(per.items(), key=lambda kv: (len(kv[1]), len(kv[0])))
    if len(group) < min_steps:
        return None
    runs = np.stack([dur[sl] for _, sl in group])  # steps × positions
    base = runs.min(axis=0)
    excess = runs - base
    excess[excess < min_excess_ns] = 0
    ws: list[I64] = []
    we: list[I64] = []
    out: list[StepWait] = []
    for i, (x, sl) in enumerate(group):
        hit = excess[i] > 0
        ws.append(s[sl][hit])
        we.append(s[sl][hit] + excess[i][hit])
        out.append(StepWait(x.number, x.wall_ns, int(runs[i].sum()), int(excess[i].sum()),
                            int(np.median(runs[i]))))
    order = np.argsort(np.concatenate(ws), kind="stable")
    return PeerWait(a, steps[0].artifact, d, len(seq), int(np.median(base)), out,
                    np.concatenate(ws)[order], np.concatenate(we)[order])

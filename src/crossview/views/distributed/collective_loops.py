"""Per-tensor collective loops: a host thread issuing one c10d collective call after another,
each within `gap_max_ns` of the previous one's start, at least `min_calls` in a row, while the
capture launches no more compute kernels in that span than there are calls (knowledge/
account.yaml `collective_loop`).

Such a run is a hook, a loop or a compiled graph reducing tensors one at a time:
hta_v100_ddp_training issues its 404 all-reduces per step from the autograd thread, under
`CompiledFunctionBackward`, one every ~300 µs for ~123 ms of a ~347 ms step — the c10d call
(~95 µs), a gradient clone (~68 µs) and untraced time between them — while the GPU runs only
the all-reduce kernels. A DDP reducer's few bucketed calls
per step, with backward's compute between them, form no run. The time account charges the
GPU's idle inside a run to the loop (views/device/idle_pieces.py), and the replay's
bucket-grads lever removes the run's host time (replay/graph.py tags it)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import numpy as np
import numpy.typing as npt

from crossview import intervals
from crossview.knowledge.frames import grad_sync_ops
from crossview.knowledge.loader import load_yaml
from crossview.store.store import Store

I64 = npt.NDArray[np.int64]


@dataclass(frozen=True)
class Loop:
    lane: str  # "T pid/tid" of the calling thread
    start_ns: int  # the first call's start
    end_ns: int  # the last call's end
    calls: int
    spacing_ns: int  # median start-to-start spacing of the calls
    parent: str = ""  # the op the calls run under, most often (CompiledFunctionBackward)
    compute: int = 0  # compute (non-comm) kernels starting during the loop


@cache
def _params() -> tuple[int, int]:
    p = load_yaml("account.yaml")["collective_loop"]
    return int(p["gap_max_ns"]), int(p["min_calls"])


def loops(store: Store, a: int, scoped: bool = True) -> list[Loop]:
    """The artifact's per-tensor collective loops, in time order (`scoped`: the filter's
    slices; else every row of the artifact, as the replay reads it)."""
    host, gpu = ("f_host", "f_gpu") if scoped else ("host_ops", "gpu_ops")
    gap_max, min_calls = _params()
    _, prefix = grad_sync_ops()
    rows = store.sql(
        f"SELECT x.pid, x.tid, x.start_ns, x.start_ns + x.dur_ns, p.name FROM {host} x"
        " LEFT JOIN host_ops p ON p.artifact_id = x.artifact_id AND p.op_id = x.parent"
        " WHERE x.artifact_id = $a AND starts_with(x.name, $pre) AND x.pid IS NOT NULL"
        " AND x.tid IS NOT NULL ORDER BY x.pid, x.tid, x.start_ns",
        {"a": a, "pre": prefix}).fetchall()
    runs: list[tuple[str, list[tuple[int, int]]]] = []
    parents: dict[int, str] = {}  # call start → the op it runs under
    for pid, tid, s, e, parent in rows:
        parents[int(s)] = str(parent or "")
        lane = f"T {pid}/{tid}"
        cur = runs[-1][1] if runs and runs[-1][0] == lane else None
        if cur is not None and s < cur[-1][1]:
            continue  # nested inside the previous call (a c10d op calling another)
        if cur is not None and s - cur[-1][0] <= gap_max:
            cur.append((int(s), int(e)))
        else:
            runs.append((lane, [(int(s), int(e))]))
    runs = [r for r in runs if len(r[1]) >= min_calls]
    if not runs:
        return []
    # compute (non-comm) kernel starts, sorted: one read, then a search per run
    ks = np.sort(np.asarray(store.sql(
        f"SELECT start_ns FROM {gpu} WHERE artifact_id = $a AND kind = 'kernel'"
        " AND family IS DISTINCT FROM 'comm'", {"a": a}).fetchnumpy()["start_ns"],
        dtype=np.int64))
    out = []
    for lane, calls in runs:
        s0, e1 = calls[0][0], calls[-1][1]
        lo, hi = np.searchsorted(ks, [s0, e1], side="left")
        if hi - lo > len(calls):  # compute interleaved: backward's hooks, not a loop
            continue
        spacing = int(np.median(np.diff([c[0] for c in calls])))
        names = [parents.get(c[0], "") for c in calls]
        out.append(Loop(lane, s0, e1, len(calls), spacing, max(set(names), key=names.count),
                        int(hi - lo)))
    return sorted(out, key=lambda x: x.start_ns)


def windows(store: Store, a: int) -> tuple[I64, I64]:
    """The loops' spans, merged and sorted (the time account's cuts)."""
    found = loops(store, a)
    return intervals.merge(np.array([x.start_ns for x in found], dtype=np.int64),
                          np.array([x.end_ns for x in found], dtype=np.int64))

"""host-stalls: host ops that stalled (views/host/host_stalls.py: own time ≥ 1 ms and ≥ 100×
the op's median) run at their median: the thread is no longer descheduled or blocked there
(the CPU contention, paging or lock behind it removed). The time past the median comes off
the op's own host segments (CPU and untraced-Python nodes of its thread inside the op, in
proportion to their length); runtime calls inside it (its launches) keep theirs."""

from __future__ import annotations

import bisect

from crossview.replay.graph import CPU, GAP, Graph
from crossview.replay.levers.common import LeverContext, LeverUnavailable

NAME = "host-stalls"
DURATIONS_ONLY = True  # apply() changes only node durations (rank_graph.relevered)
SUMMARY = "host ops that stalled (≥ 100× their median) run at their median"


def apply(g: Graph, param: str | None, ctx: LeverContext) -> str:
    if not ctx.stalls:
        raise LeverUnavailable(f"{NAME}: no host op in this capture stalled (own time ≥ "
                               "late.stall_min_ns and ≥ late.stall_ratio × its median, "
                               "knowledge/ranks.yaml)")
    lanes: dict[str, list[tuple[int, int]]] = {}
    for i in range(len(g)):
        if g.kind[i] in (CPU, GAP):
            lanes.setdefault(g.lane[i], []).append((g.mstart[i], i))
    for v in lanes.values():
        v.sort()
    removed = n = 0
    for st in ctx.stalls:
        nodes = lanes.get(st.lane, [])
        lo = bisect.bisect_left(nodes, (st.start_ns, -1))
        inside = []
        for s, i in nodes[lo:]:
            if s >= st.end_ns:
                break
            ov = min(s + g.dur[i], st.end_ns) - s
            if ov > 0:
                inside.append((i, ov))
        total = sum(ov for _, ov in inside)
        if not total:
            continue
        want = min(st.excess_ns, total)
        for i, ov in inside:
            cut = min(g.dur[i], want * ov // total)
            g.dur[i] -= cut
            removed += cut
        n += 1
    return (f"{n:,} stalled host ops run at their median: {removed / 1e6:.2f} ms of host "
            "time removed")

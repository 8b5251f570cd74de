"""fuse-elementwise: each run of back-to-back one-op kernels on a stream becomes one kernel.

The runs are views/device/fusion_runs.py's: consecutive kernels of the fusible families
(op_roofline.yaml `unfused_families`) on one stream with no other GPU op between them. What a
compiler (Inductor) does with such a run: one kernel that moves at least the bytes of the
run's largest op, and one launch. So the run's first kernel takes the run's longest duration,
the others take none, and each of their launch calls gives up the capture's median launch
call duration (the typical launch cost: a longer call is paying for something else, a lazy
module load in a start-up capture, which the fused kernel pays too); a kernel replayed from a
CUDA graph keeps its graph's one launch call. The Python / ATen
dispatch of the fused ops, which torch.compile also removes, stays (the caveat in
replay.yaml)."""

from __future__ import annotations

from statistics import median

from crossview.knowledge.api_roles import role_of
from crossview.replay.graph import CALL, GPU_KINDS, KERNEL, Graph
from crossview.replay.levers.common import LeverContext, LeverUnavailable
from crossview.sol.op_roofline import limits

NAME = "fuse-elementwise"
SUMMARY = "each run of back-to-back one-op kernels on a stream fused into one kernel"


def _runs(g: Graph, families: set[str]) -> list[list[int]]:
    by_lane: dict[str, list[int]] = {}
    for i in range(len(g)):
        if g.kind[i] in GPU_KINDS:
            by_lane.setdefault(g.lane[i], []).append(i)
    out: list[list[int]] = []
    for nodes in by_lane.values():
        run: list[int] = []
        for i in sorted(nodes, key=lambda n: (g.mstart[n], g.dur[n])):
            if g.kind[i] == KERNEL and g.family[i] in families:
                run.append(i)
                continue
            if len(run) > 1:
                out.append(run)
            run = []
        if len(run) > 1:
            out.append(run)
    return out


def apply(g: Graph, param: str | None, ctx: LeverContext) -> str:
    runs = _runs(g, set(limits()["unfused_families"]))
    if not runs:
        raise LeverUnavailable(f"{NAME}: no two one-op kernels (elementwise, copy, activation, "
                               "reduction) run back to back on a stream in this capture")
    launches = [g.dur[i] for i in range(len(g)) if g.kind[i] == CALL
                and role_of(g.name[i]) == "launch"]
    typical = int(median(launches)) if launches else 0
    before = after = calls = host = 0
    cut_calls: set[int] = set()
    for run in runs:
        longest = max(g.dur[i] for i in run)
        before += sum(g.dur[i] for i in run)
        after += longest
        g.dur[run[0]] = longest
        for i in run[1:]:
            g.dur[i] = 0
            if "graph" in g.tags[i]:  # one graph launch runs all its kernels: it stays
                continue
            for c in g.cons[i]:
                if c.why == "launch" and c.pred not in cut_calls:
                    cut_calls.add(c.pred)  # a call launching several kernels is cut once
                    cut = min(g.dur[c.pred], typical)
                    g.dur[c.pred] -= cut
                    host += cut
                    calls += 1
    kernels = sum(len(r) for r in runs)
    return (f"{_n(len(runs), 'run')} of {kernels:,} one-op kernels: {before / 1e6:.2f} → "
            f"{after / 1e6:.2f} ms of kernel time; {_n(calls, 'launch call')} removed "
            f"({host / 1e6:.2f} ms of host time, each at most the median call's "
            f"{typical / 1e3:.1f} µs)")


def _n(count: int, noun: str) -> str:
    return f"{count:,} {noun}" + ("" if count == 1 else "s")

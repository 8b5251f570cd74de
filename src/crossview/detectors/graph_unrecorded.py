"""graph-unrecorded: the GPU reads idle inside CUDA-graph replays — the trace misses their work.

A replay runs its nodes back to back, so idle between one replay's recorded GPU ops
(views/device/graph_windows.py; the account's `graph_unrecorded` row) is work the capture did
not record: before CUDA 12, CUPTI records no kernel of a graph captured before the profiler
initialized it (pytorch/pytorch#75504). Every idle cause of such a capture — and the busy share —
rests on the recorded work only, so the claim leads with the re-capture and says how far
the GPU runs behind the launches (the backlog host waits then wait on).
"""

from __future__ import annotations

from crossview.core.claim import Claim, Count, Facts, FixPart, Ns, Owns, Phrasing
from crossview.detectors.account_share import slice_of
from crossview.detectors.common import cites, crossed, ms, pct
from crossview.detectors.declare import About, Declaration
from crossview.views.device import launch_lag
from crossview.views.views import Views

PATTERN = "graph-unrecorded"
CAUSE = "graph_unrecorded"


class Unrecorded(Facts, frozen=True, kw_only=True):
    ns: Ns  # per steady step
    wall_ns: Ns
    graph_launches: Count | None
    kernels_via_graph: Count | None
    behind_ns: Ns | None  # median launch → start of ops launched one by one


def detect(v: Views) -> list[Claim]:
    sl = slice_of(v, CAUSE)
    if sl is None or not sl.ns:
        return []
    lim = v.limits
    cut = crossed(sl.share, lim.graph_unrecorded_red_share, lim.graph_unrecorded_yellow_share,
                  ("graph_unrecorded_red_share", "graph_unrecorded_yellow_share"))
    if cut is None:
        return []
    ls = v.metrics.launch
    lags = [x for x in launch_lag.all_devices(v) if x.ops]
    return [Claim(
        pattern=PATTERN, share=sl.share, tier=cut[0], cutoff=cut[1], owns=Owns(causes=(CAUSE,)),
        fix=(FixPart(key=PATTERN),), cites=cites(v, "graph-windows"),
        facts=Unrecorded(ns=sl.ns, wall_ns=sl.wall_ns,
                         graph_launches=ls.graph_launches if ls is not None else None,
                         kernels_via_graph=ls.kernels_via_graph if ls is not None else None,
                         behind_ns=max(x.median_ns for x in lags) if lags else None))]


def phrase(c: Claim) -> Phrasing:
    f = c.facts
    assert isinstance(f, Unrecorded)
    graphs = (f" The capture's {f.graph_launches:,} graph launches record "
              f"{f.kernels_via_graph or 0:,} kernels in all." if f.graph_launches is not None
              else "")
    behind = (f" GPU ops launched one by one start a median {ms(f.behind_ns)}"
              " after their launch calls: the GPU runs that far behind the host, and host "
              "calls that wait on it (blocking copies, syncs) wait on that backlog."
              if f.behind_ns is not None else "")
    return Phrasing(
        title=(f"The trace misses work inside CUDA-graph replays: the GPU reads idle "
               f"{pct(c.share)} of the step between one replay's recorded kernels"),
        observation=(
            f"Per steady step the GPU shows no recorded op for {ms(f.ns)} ({pct(c.share)} of "
            f"the {ms(f.wall_ns)} step) between the first and the last recorded op of a single "
            "CUDA-graph replay, where a replay runs its nodes back to back: the graphs hold "
            "kernels the trace did not record." + graphs + behind + " Kernel busy is then a "
            "lower bound, and the other idle causes of this capture (what the host did while "
            "the GPU looked idle) are not evidence of what held the GPU."),
        effect=("None from a code change: a capture with the graphs' kernels "
                "recorded says what the step waits on."))


DECLARATION = Declaration(
    patterns=(PATTERN,), detect=detect, phrase=phrase, causes=(CAUSE,),
    thresholds=("graph_unrecorded_red_share", "graph_unrecorded_yellow_share"),
    fix_keys=(PATTERN,), about=About(side="capture"))

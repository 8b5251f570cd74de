"""graph-unrecorded: the GPU reads idle inside CUDA-graph replays — the trace misses their work.

A replay runs its nodes back to back, so idle between one replay's recorded GPU ops
(views/device/graph_windows.py; the account's `graph_unrecorded` row) is work the capture did
not record: before CUDA 12, CUPTI records no kernel of a graph captured before the profiler
initialized it (pytorch/pytorch#75504). Every idle cause of such a capture — and the busy share —
rests on the recorded work only, so the finding leads with the re-capture and says how far
the GPU runs behind the launches (the backlog host waits then wait on).
"""

from __future__ import annotations

from crossview.core.finding import Finding
from crossview.detectors.account_share import claims, slice_of
from crossview.detectors.common import evidence, ms, pct, severity
from crossview.detectors.declare import Declaration
from crossview.knowledge.fixes import fix_for
from crossview.views.device import launch_lag
from crossview.views.views import Views

PATTERN = "graph-unrecorded"
CAUSE = "graph_unrecorded"


def detect(v: Views) -> list[Finding]:
    sl = slice_of(v, CAUSE)
    if sl is None or not sl.ns:
        return []
    lim = v.limits
    sev = severity(sl.share, lim.graph_unrecorded_red_share, lim.graph_unrecorded_yellow_share)
    if sev is None:
        return []
    ls = v.metrics.launch
    graphs = (f" The capture's {ls.graph_launches:,} graph launches record "
              f"{ls.kernels_via_graph:,} kernels in all." if ls is not None else "")
    lags = [x for x in launch_lag.all_devices(v.store) if x.ops]
    behind = (f" GPU ops launched one by one start a median {ms(max(x.median_ns for x in lags))}"
              " after their launch calls: the GPU runs that far behind the host, and host "
              "calls that wait on it (blocking copies, syncs) wait on that backlog."
              if lags else "")
    return [Finding(
        pattern=PATTERN, severity=sev,
        title=(f"The trace misses work inside CUDA-graph replays: the GPU reads idle "
               f"{pct(sl.share)} of the step between one replay's recorded kernels"),
        observation=(
            f"Per steady step the GPU shows no recorded op for {ms(sl.ns)} ({pct(sl.share)} of "
            f"the {ms(sl.wall_ns)} step) between the first and the last recorded op of a single "
            "CUDA-graph replay, where a replay runs its nodes back to back: the graphs hold "
            "kernels the trace did not record." + graphs + behind + " Kernel busy is then a "
            "lower bound, and the other idle causes of this capture (what the host did while "
            "the GPU looked idle) are not evidence of what held the GPU."),
        fix=fix_for(PATTERN, None), share=sl.share,
        evidence=evidence(v, "GPU ops of each graph launch (first to last recorded op) against "
                             "the kernel union (time account)"),
        expected_effect=("None from a code change: a capture with the graphs' kernels "
                         "recorded says what the step waits on."),
        details=claims(CAUSE),
    )]


DECLARATION = Declaration(
    patterns=(PATTERN,), detect=detect, causes=(CAUSE,),
    thresholds=("graph_unrecorded_red_share", "graph_unrecorded_yellow_share"),
    fix_keys=(PATTERN,))

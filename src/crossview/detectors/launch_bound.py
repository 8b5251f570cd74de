"""kernel-launch-bound and cuda-graphs-missing: many short kernels launched one by one."""

from __future__ import annotations

from crossview.detectors.common import evidence, ms, pct, severity
from crossview.knowledge.fixes import fix_for
from crossview.model.finding import Finding
from crossview.views.views import Views

PATTERN = "kernel-launch-bound"
GRAPHS = "cuda-graphs-missing"


def detect(v: Views) -> list[Finding]:
    m, lim, ls = v.metrics, v.limits, v.metrics.launch
    if m.cpu_only or ls is None or m.kernel_count == 0 or m.kernel_span_ns == 0:
        return []
    out: list[Finding] = []
    short_share = ls.short_kernels / m.kernel_count
    # launch-bound idle: gaps where the GPU waited on the next launch or its overhead
    waiting = m.idle.host_wait_ns + m.idle.kernel_wait_ns
    share = waiting / m.kernel_span_ns
    where = v.where_text()
    ev = evidence(v, "kernel durations, launch API calls and idle gaps per device")
    launch_sev = None
    if short_share >= lim.launch_bound_short_share:
        launch_sev = severity(share, lim.red_share, lim.yellow_share)
    if launch_sev:
        obs = (
            f"{ls.short_kernels:,} of {m.kernel_count:,} kernels ({pct(short_share)}) ran "
            f"shorter than {ms(ls.short_kernel_ns)} (median kernel {ms(ls.median_kernel_ns)}, "
            f"median launch call {ms(ls.median_launch_ns)}); {ls.launch_calls:,} launch calls "
            f"took {ms(ls.launch_time_ns)} of host time. The GPU waited on launches for "
            f"{ms(waiting)} ({pct(share)} of the kernel span)."
        )
        out.append(Finding(
            pattern=PATTERN, severity=launch_sev,
            title=f"Launch-bound: {pct(short_share)} of kernels shorter than "
                  f"{ms(ls.short_kernel_ns)}, GPU waiting on launches {pct(share)} of the span",
            observation=obs, fix=fix_for(PATTERN, v.engine, where), share=share, evidence=ev,
            expected_effect="Replaying the step as a graph removes per-kernel launch cost; "
                            f"the waiting time ({ms(waiting)}) bounds the gain.",
        ))
    eager_short = ls.short_kernels - min(ls.kernels_via_graph, ls.short_kernels)
    graph_share = ls.kernels_via_graph / m.kernel_count
    if eager_short >= lim.graphs_missing_min_kernels and graph_share < 0.5:
        # the "how" of a launch-bound or host-bound GPU: a yellow beside the red that names
        # the cause (gpu-idle / kernel-launch-bound), never a second red for the same time
        sev = "yellow" if severity(share, lim.red_share, lim.yellow_share) else None
        if sev:
            out.append(Finding(
                pattern=GRAPHS, severity=sev,
                title=f"CUDA graphs not used: {eager_short:,} short kernels launched one by one",
                observation=(
                    f"{ls.graph_launches} graph launches ({ls.kernels_via_graph:,} kernels, "
                    f"{pct(graph_share)} of all) against {ls.launch_calls:,} individual launch "
                    f"calls; {eager_short:,} kernels under {ms(ls.short_kernel_ns)} ran outside "
                    "any graph."
                ),
                fix=fix_for(GRAPHS, v.engine, where), share=share, evidence=ev,
            ))
    return out

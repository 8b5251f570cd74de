"""carry-in: the capture's first step starts behind GPU work launched before the capture.

A note about what the numbers mean, not a lever: the step's wall time, GPU busy share and
time account hold the previous iteration's tail (views/device/carry_in.py), so the recap says
how much and where the step's own work starts, and how to capture whole steps."""

from __future__ import annotations

from crossview.core.finding import Finding
from crossview.detectors.common import evidence, ms, pct
from crossview.detectors.declare import Declaration
from crossview.knowledge import api_roles
from crossview.knowledge.fixes import fix_for
from crossview.views.device import carry_in
from crossview.views.views import Views

PATTERN = "carry-in"


def detect(v: Views) -> list[Finding]:
    steps = v.steps.steps
    if v.metrics.cpu_only or not steps or v.steps.source != "profiler-step":
        return []
    first = min(steps, key=lambda s: s.start_ns)
    c = carry_in.first_step(v.store, first, list(api_roles.names_with_role("sync")))
    if c is None:
        return []
    share = c.kernel_ns / first.wall_ns if first.wall_ns else 0.0
    if share < v.limits.carry_in_min_share:
        return []
    wait = (f", while the host waits in `{c.wait_call}` ({ms(c.wait_ns)})" if c.wait_call
            else "")
    return [Finding(
        pattern=PATTERN, severity="info",
        title=f"The first step starts behind work launched before the capture "
              f"({pct(share)} of `{first.name}`)",
        observation=(f"`{first.name}` begins with {c.kernels:,} kernels ({ms(c.kernel_ns)} of "
                     f"kernel time) whose launches precede the capture — the previous "
                     f"iteration's tail — running until {ms(c.ends_at_ns)} into the step"
                     f"{wait}. The step's own kernels start {ms(c.own_start_ns)} in: its wall "
                     f"time ({ms(first.wall_ns)}), GPU busy share and time account include "
                     "that work."),
        fix=fix_for(PATTERN, None), share=0.0,
        evidence=evidence(v, "kernels with no launch in the capture before its first launched "
                             "kernel, inside the first ProfilerStep"),
        details={"step": first.name, "kernels": c.kernels, "kernel_ns": c.kernel_ns,
                 "ends_at_ns": c.ends_at_ns, "own_start_ns": c.own_start_ns,
                 "wait_call": c.wait_call, "wait_ns": c.wait_ns},
    )]


DECLARATION = Declaration(
    patterns=(PATTERN,), detect=detect, causes=(),
    thresholds=("carry_in_min_share",), fix_keys=(PATTERN,))

"""carry-in: the capture's first step starts behind GPU work launched before the capture.

A note about what the numbers mean, not a lever: the step's wall time, GPU busy share and
time account hold the previous iteration's tail (views/device/carry_in.py), so the recap says
how much and where the step's own work starts, and how to capture whole steps."""

from __future__ import annotations

from crossview.core.claim import Claim, Count, Facts, FixPart, Ns, Phrasing, Share
from crossview.detectors.common import cites, ms, pct
from crossview.detectors.declare import About, Declaration
from crossview.knowledge import api_roles
from crossview.views.device import carry_in
from crossview.views.views import Views

PATTERN = "carry-in"


class CarryIn(Facts, frozen=True, kw_only=True):
    step: str
    step_share: Share  # of the first step's wall time
    wall_ns: Ns
    kernels: Count
    kernel_ns: Ns
    ends_at_ns: Ns
    own_start_ns: Ns
    wait_call: str | None
    wait_ns: Ns


def detect(v: Views) -> list[Claim]:
    steps = v.steps.steps
    if v.metrics.cpu_only or not steps or v.steps.source != "profiler-step":
        return []
    first = min(steps, key=lambda s: s.start_ns)
    c = carry_in.first_step(v, first, list(api_roles.names_with_role("sync")))
    if c is None:
        return []
    share = c.kernel_ns / first.wall_ns if first.wall_ns else 0.0
    if share < v.limits.carry_in_min_share:
        return []
    return [Claim(
        pattern=PATTERN, share=0.0, tier="note", fix=(FixPart(key=PATTERN),),
        cites=cites(v, "carry-in"),
        facts=CarryIn(step=first.name, step_share=share, wall_ns=first.wall_ns,
                      kernels=c.kernels, kernel_ns=c.kernel_ns, ends_at_ns=c.ends_at_ns,
                      own_start_ns=c.own_start_ns, wait_call=c.wait_call, wait_ns=c.wait_ns))]


def phrase(c: Claim) -> Phrasing:
    f = c.facts
    assert isinstance(f, CarryIn)
    wait = (f", while the host waits in `{f.wait_call}` ({ms(f.wait_ns)})"
            if f.wait_call else "")
    return Phrasing(
        title=f"The first step starts behind work launched before the capture "
              f"({pct(f.step_share)} of `{f.step}`)",
        observation=(f"`{f.step}` begins with {f.kernels:,} kernels ({ms(f.kernel_ns)} of "
                     f"kernel time) whose launches precede the capture — the previous "
                     f"iteration's tail — running until {ms(f.ends_at_ns)} into the step"
                     f"{wait}. The step's own kernels start {ms(f.own_start_ns)} in: its wall "
                     f"time ({ms(f.wall_ns)}), GPU busy share and time account include "
                     "that work."),
        details={"step": f.step, "kernels": f.kernels, "kernel_ns": f.kernel_ns,
                 "ends_at_ns": f.ends_at_ns, "own_start_ns": f.own_start_ns,
                 "wait_call": f.wait_call, "wait_ns": f.wait_ns})


DECLARATION = Declaration(
    patterns=(PATTERN,), detect=detect, phrase=phrase, causes=(),
    thresholds=("carry_in_min_share",), fix_keys=(PATTERN,), about=About(side="capture"))

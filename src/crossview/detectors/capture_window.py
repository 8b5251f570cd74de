"""capture-window: what the capture itself holds (start-up work, or no GPU activity at all).

With a time account, start-up (JIT compile / autotune, time outside the capture's kernels)
is reported apart from the steady state and never drives a steady-state 🔴 — unless the
capture holds nothing else (every step is warm-up / JIT / start-up): then it is the 🔴, and
the fix says how to capture the steady state."""

from __future__ import annotations

from crossview.core.finding import Finding
from crossview.detectors.account_share import claims, slice_of
from crossview.detectors.common import artifact_kinds, evidence, ms, pct, severity, short
from crossview.detectors.declare import Declaration
from crossview.knowledge.fixes import fix_for
from crossview.views.views import Views

PATTERN = "capture-window"
CAUSES = ("jit_compile", "capture_boundary")


def detect(v: Views) -> list[Finding]:
    m, lim = v.metrics, v.limits
    if m.cpu_only:
        held = (f"{m.cpu_samples:,} CPU samples, ~{ms(m.cpu_sampled_ns)} of thread time, L1"
                if m.cpu_sampled_ns else f"{m.cpu_samples:,} CPU samples, period unknown, L1"
                if m.cpu_samples else f"{ms(m.host_time_ns)} of host time")
        nsys = "nsys" in artifact_kinds(v).values()
        return _sampled_startup(v) + [Finding(
            pattern=PATTERN, severity="info",
            title="CPU-only capture: no GPU kernels in the trace",
            observation=(f"The trace holds host activity only ({held}); GPU metrics and the "
                         "GPU view are not available."),
            fix=fix_for("capture-no-cuda", "nsys" if nsys else None),
            share=0.0, evidence=evidence(v, "no kernel / memcpy / memset events"),
        )]
    acc = v.account
    if acc is not None and acc.steady_fallback:
        return _startup_only(v)
    t, n, top = v.startup_ns
    span = m.host_span_ns or 1
    share = t / span
    if n == 0 or share < lim.startup_yellow_share:
        return []
    names = "; ".join(f"`{short(name, 70)}` {ms(ns)}" for name, ns in top)
    return [Finding(
        pattern=PATTERN, severity="yellow",
        title=f"Start-up work inside the capture ({pct(share)} of the host time span)",
        observation=(f"The host spent {ms(t)} (wall, union over threads) in start-up frames "
                     f"— JIT compilation, module loading, autotuning — {n:,} distinct frames, "
                     f"longest in total: {names}. That is warm-up, not steady state; GPU idle "
                     "during it is not a lever."),
        fix=fix_for(PATTERN, v.engine), share=share if acc is None else 0.0,
        evidence=evidence(v, "host frames matching frames.yaml: startup"),
    )]


def _sampled_startup(v: Views) -> list[Finding]:
    """A CPU-only sampled capture whose stacks are largely start-up (JIT compile, loading)."""
    rt, lim = v.sampled_runtime, v.limits
    up = rt.share("startup") if rt is not None else None
    if rt is None or up is None:
        return []
    share = up.ns / rt.total_ns if rt.total_ns else 0.0
    sev = severity(share, lim.red_share, lim.yellow_share)
    if sev is None:
        return []
    err = rt.share("error_exit")  # the program is reporting an uncaught error: that first
    title = (f"The run reports an uncaught error (`{short(err.top[0][0], 50)}`) after its "
             f"start-up (at least {pct(share)} of the sampled host time is JIT compilation and "
             "code loading)" if err and err.top else
             f"The capture is largely start-up: at least {pct(share)} of the sampled host "
             "time is JIT compilation and code loading")
    fix = fix_for("sampled-startup", rt.runtime)
    if err:
        fix = fix_for("sampled-error", rt.runtime) + " " + fix
    return [Finding(
        pattern=PATTERN, severity="red" if err else sev,
        title=title,
        observation=rt.describe() + " Start-up is warm-up, not the "
                    "workload: its host time says nothing about the steady state.",
        fix=fix, share=share,
        evidence=evidence(v, "sampled stacks through frames.yaml startup / gc frames"),
        rigor="L1",
        expected_effect=(f"None on the workload itself: {ms(up.ns)} of the "
                         f"{ms(rt.total_ns)} sampled here is start-up; a capture of the steady "
                         "state shows what to change there."),
        details={"sampled_runtime": rt.to_dict()},
    )]


def _startup_only(v: Views) -> list[Finding]:
    """Every step is warm-up / JIT / start-up: the capture holds no steady state."""
    lim = v.limits
    sl = slice_of(v, *CAUSES)
    if sl is None or sl.ns == 0:
        return []
    sev = severity(sl.share, lim.red_share, lim.yellow_share)
    if sev is None:
        return []
    rows = "; ".join(f"{c.label} {ms(c.ns)} ({pct(c.share_of_step)})" for c in sl.rows)
    top = "; ".join(f"`{short(f.frame, 70)}` {ms(f.ns)}" for f in sl.top_frames)
    flagged = "; ".join(f"`{short(x.name, 50)}`: {', '.join(x.reasons)}"
                        for x in v.steps.steps)
    return [Finding(
        pattern=PATTERN, severity=sev,
        title=f"The capture is start-up, not steady state: {pct(sl.share)} of it is JIT "
              "compile / time outside the kernels",
        observation=(f"No steady-state step in this capture ({flagged}). Of "
                     f"{ms(sl.wall_ns)}: {rows}" + (f"; longest: {top}" if top else "")
                     + ". Launch and idle numbers of start-up say nothing about the steady "
                     "state."),
        fix=fix_for("steady-state-capture", v.engine), share=sl.share,
        evidence=evidence(v, "host frames matching account.yaml jit_compile, kernel span "
                             "edges (time account)"),
        details=claims(*CAUSES),
    )]


DECLARATION = Declaration(
    patterns=(PATTERN,), detect=detect, causes=CAUSES,
    thresholds=("startup_yellow_share", "red_share", "yellow_share",
                "steps.yaml:jit_step_share", "steps.yaml:startup_step_share"),
    fix_keys=(PATTERN, "capture-no-cuda", "steady-state-capture", "sampled-startup",
              "sampled-error"))

"""gpu-idle: the GPU waits on the host (busy share of the kernel span, idle by cause).

With a time account (views/device/account.py) gpu-idle is a symptom that the account table beside
the metrics already summarizes cause by cause (the causes are their own findings). It
charges only two slices itself:
`gpu_dependency` (work already queued, the GPU waiting on a GPU-side dependency) and
`unexplained` (no host activity recorded) — a 🔴 for the latter only when it dominates the
idle time, with the capture that would explain it as the fix."""

from __future__ import annotations

from crossview.core.finding import Finding
from crossview.detectors.account_share import claims, per_step, slice_of
from crossview.detectors.common import evidence, fix_where, ms, pct, severity
from crossview.detectors.declare import Declaration
from crossview.knowledge.fixes import fix_for
from crossview.views.views import Views

PATTERN = "gpu-idle"
CAUSES = ("gpu_dependency", "unexplained")


def detect(v: Views) -> list[Finding]:
    m, lim = v.metrics, v.limits
    if m.cpu_only or m.kernel_span_ns == 0:
        return []
    if v.account is not None:
        return _from_account(v)
    idle = m.idle
    share = idle.total_ns / m.kernel_span_ns
    sev = severity(share, lim.gpu_idle_red_share, lim.gpu_idle_yellow_share)
    if sev is None:
        return []
    parts = idle.total_ns or 1
    cause = max(
        (("host wait", idle.host_wait_ns), ("kernel wait", idle.kernel_wait_ns),
         ("other", idle.other_ns)), key=lambda x: x[1])
    side = {
        "host wait": "the next kernel had not been launched yet: the host is the bottleneck",
        "kernel wait": "gaps under the launch-overhead threshold between queued kernels",
        "other": "gaps with work already queued (dependencies, syncs across streams, copies)",
    }[cause[0]]
    obs = (
        f"GPU kernels were busy {m.kernel_busy_pct:.1f}% of the {ms(m.kernel_span_ns)} kernel "
        f"span ({m.kernel_count:,} kernels); idle {ms(idle.total_ns)}: host wait "
        f"{ms(idle.host_wait_ns)} ({pct(idle.host_wait_ns / parts)}), kernel wait "
        f"{ms(idle.kernel_wait_ns)} ({pct(idle.kernel_wait_ns / parts)}), other "
        f"{ms(idle.other_ns)} ({pct(idle.other_ns / parts)}). Mostly {cause[0]}: {side}."
    )
    startup_ns = v.startup_ns[0]
    if startup_ns >= lim.startup_dominates_idle_share * idle.total_ns:
        # conventions §1: start-up inside the capture is a capture note, not a GPU-idle lever
        return [Finding(
            pattern=PATTERN, severity="yellow",
            title=f"GPU idle {pct(share)} of the kernel span, mostly during start-up work",
            observation=obs + (f" The host spent {ms(startup_ns)} in start-up frames (JIT "
                               "compilation, module loading, autotuning) inside this span: "
                               "the idle is warm-up, not steady state."),
            fix=fix_for("capture-window", v.engine), share=share,
            evidence=evidence(v, "kernel intervals and host start-up frames (frames.yaml)"),
            details={"idle_ns": idle.total_ns, "cause": "start-up",
                     "startup_ns": startup_ns},
        )]
    return [Finding(
        pattern=PATTERN, severity=sev,
        title=f"GPU idle {pct(share)} of the kernel span (mostly {cause[0]})",
        observation=obs,
        fix=fix_for(PATTERN if cause[0] != "other" else "gpu-idle-queued", v.engine,
                    fix_where(v)),
        share=share,
        evidence=evidence(v, "kernel intervals (union per device) and launch-call times"),
        expected_effect=_host_wait_effect(idle.host_wait_ns, startup_ns)
        if cause[0] == "host wait" else "",
        details={"idle_ns": idle.total_ns, "cause": cause[0], "startup_ns": startup_ns},
    )]


def _host_wait_effect(host_wait_ns: int, startup_ns: int) -> str:
    """Recoverable host-wait idle; start-up inside the span is warm-up, not a lever."""
    if not startup_ns:
        return (f"Up to {ms(host_wait_ns)} of host-wait idle is recoverable if launches run "
                "ahead of the GPU.")
    left = max(host_wait_ns - startup_ns, 0)
    return (f"Up to {ms(left)} of host-wait idle is recoverable if launches run ahead of the "
            f"GPU ({ms(host_wait_ns)} host wait less {ms(startup_ns)} in start-up frames, "
            "which is warm-up, not a lever).")



def _from_account(v: Views) -> list[Finding]:
    acc, lim = v.account, v.limits
    assert acc is not None
    idle_ns = sum(c.ns for c in acc.steady_state if c.idle)
    if not idle_ns:
        return []
    # the idle share itself is a summary: the time-account table beside the metrics shows it
    # cause by cause, and each cause is charged by the finding that owns it
    ev = evidence(v, "kernel union per device and the launching threads' host ops (time "
                     "account)")
    out: list[Finding] = []
    dep = slice_of(v, "gpu_dependency")
    if dep is not None and dep.ns:
        sev = severity(dep.share, lim.gpu_idle_red_share, lim.gpu_idle_yellow_share)
        if sev:
            out.append(Finding(
                pattern=PATTERN, severity=sev,
                title=f"GPU idle with work already queued: {pct(dep.share)} of the step",
                observation=(f"{per_step(v)} the GPU idled {ms(dep.ns)} ({pct(dep.share)}) "
                             "although the next kernel had already been launched: it waited "
                             "on a GPU-side dependency (another stream's event, a copy, a "
                             "collective's peer), not on the host."),
                fix=fix_for("gpu-idle-queued", v.engine, fix_where(v)), share=dep.share,
                evidence=ev, details=claims("gpu_dependency"),
            ))
    un = slice_of(v, "unexplained")
    if un is not None and un.ns:
        sev = severity(un.share, lim.gpu_idle_red_share, lim.gpu_idle_yellow_share)
        if sev == "red" and un.ns < lim.unexplained_dominates_share * idle_ns:
            sev = "yellow"
        if sev:
            out.append(Finding(
                pattern=PATTERN, severity=sev,
                title=f"GPU idle with no host activity recorded: {pct(un.share)} of the step",
                observation=(f"{per_step(v)} the GPU idled {ms(un.ns)} ({pct(un.share)}, "
                             f"{pct(un.ns / idle_ns)} of all idle) while the capture shows no "
                             "host op on the launching thread(s): the cause is not in this "
                             "capture."),
                fix=fix_for("gpu-idle-unexplained", v.engine), share=un.share, evidence=ev,
                details=claims("unexplained"),
            ))
    return out


DECLARATION = Declaration(
    patterns=(PATTERN,), detect=detect, causes=CAUSES,
    thresholds=("gpu_idle_red_share", "gpu_idle_yellow_share", "startup_dominates_idle_share",
                "unexplained_dominates_share"),
    fix_keys=(PATTERN, "gpu-idle-queued", "gpu-idle-unexplained", "capture-window"))

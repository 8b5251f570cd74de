"""gpu-idle: the GPU waits on the host (busy share of the kernel span, idle by cause).

With a time account (views/device/account.py) gpu-idle is a symptom that the account table
beside the metrics already summarizes cause by cause (the causes are their own claims). It
charges only two slices itself: `gpu_dependency` (work already queued, the GPU waiting on a
GPU-side dependency) and `unexplained` (no host activity recorded) — at the top cut for the
latter only when it dominates the idle time, with the capture that would explain it as the
fix."""

from __future__ import annotations

from crossview.core.claim import Claim, Count, Facts, FixPart, Ns, Owns, Pct, Phrasing, Share
from crossview.detectors.account_share import per_step, slice_of
from crossview.detectors.common import cites, crossed, ms, pct
from crossview.detectors.declare import About, Declaration
from crossview.views.views import Views

PATTERN = "gpu-idle"
CAUSES = ("gpu_dependency", "unexplained")


class SpanIdle(Facts, frozen=True, kw_only=True):
    """Without a time account: the kernel span's idle by HTA's classes."""

    busy_pct: Pct
    span_ns: Ns
    kernels: Count
    idle_ns: Ns
    host_wait_ns: Ns
    kernel_wait_ns: Ns
    other_ns: Ns
    cause: str  # the largest class: host wait | kernel wait | other
    startup_ns: Ns  # host time in start-up frames inside the span


class AccountIdle(Facts, frozen=True, kw_only=True):
    ns: Ns  # per steady step
    idle_share: Share  # of all idle (unexplained only)
    startup_only: bool


_SIDE = {
    "host wait": "the next kernel had not been launched yet: the host is the bottleneck",
    "kernel wait": "gaps under the launch-overhead threshold between queued kernels",
    "other": "gaps with work already queued (dependencies, syncs across streams, copies)",
}


def detect(v: Views) -> list[Claim]:
    m, lim = v.metrics, v.limits
    if m.cpu_only or m.kernel_span_ns == 0:
        return []
    if v.account is not None:
        return _from_account(v)
    idle = m.idle
    share = idle.total_ns / m.kernel_span_ns
    cut = crossed(share, lim.gpu_idle_red_share, lim.gpu_idle_yellow_share,
                  ("gpu_idle_red_share", "gpu_idle_yellow_share"))
    if cut is None:
        return []
    cause = max((("host wait", idle.host_wait_ns), ("kernel wait", idle.kernel_wait_ns),
                 ("other", idle.other_ns)), key=lambda x: x[1])[0]
    startup_ns = v.startup_ns[0]
    f = SpanIdle(busy_pct=m.kernel_busy_pct, span_ns=m.kernel_span_ns, kernels=m.kernel_count,
                 idle_ns=idle.total_ns, host_wait_ns=idle.host_wait_ns,
                 kernel_wait_ns=idle.kernel_wait_ns, other_ns=idle.other_ns, cause=cause,
                 startup_ns=startup_ns)
    if startup_ns >= lim.startup_dominates_idle_share * idle.total_ns:
        # conventions §1: start-up inside the capture is a capture note, not a GPU-idle lever
        return [Claim(pattern=PATTERN, form="startup", share=share, tier="consider",
                      cutoff=cut[1], fix=(FixPart(key="capture-window"),),
                      cites=cites(v, "idle-startup"), facts=f)]
    return [Claim(
        pattern=PATTERN, form="span", share=share, tier=cut[0], cutoff=cut[1],
        fix=(FixPart(key=PATTERN if cause != "other" else "gpu-idle-queued", located=True),),
        cites=cites(v, "idle-launch"), facts=f)]


def _host_wait_effect(host_wait_ns: int, startup_ns: int) -> str:
    """(phrasing) Recoverable host-wait idle; start-up inside the span is warm-up, not a
    lever."""
    if not startup_ns:
        return (f"Up to {ms(host_wait_ns)} of host-wait idle is recoverable if launches run "
                "ahead of the GPU.")
    left = max(host_wait_ns - startup_ns, 0)
    return (f"Up to {ms(left)} of host-wait idle is recoverable if launches run ahead of the "
            f"GPU ({ms(host_wait_ns)} host wait less {ms(startup_ns)} in start-up frames, "
            "which is warm-up, not a lever).")


def _from_account(v: Views) -> list[Claim]:
    acc, lim = v.account, v.limits
    assert acc is not None
    idle_ns = sum(c.ns for c in acc.steady_state if c.idle)
    if not idle_ns:
        return []
    # the idle share itself is a summary: the time-account table beside the metrics shows it
    # cause by cause, and each cause is charged by the claim that owns it
    ev = cites(v, "idle-account")
    out: list[Claim] = []
    dep = slice_of(v, "gpu_dependency")
    if dep is not None and dep.ns:
        cut = crossed(dep.share, lim.gpu_idle_red_share, lim.gpu_idle_yellow_share,
                      ("gpu_idle_red_share", "gpu_idle_yellow_share"))
        if cut:
            out.append(Claim(
                pattern=PATTERN, form="queued", share=dep.share, tier=cut[0], cutoff=cut[1],
                owns=Owns(causes=("gpu_dependency",)),
                fix=(FixPart(key="gpu-idle-queued", located=True),), cites=ev,
                facts=AccountIdle(ns=dep.ns, idle_share=dep.ns / idle_ns,
                                  startup_only=acc.steady_fallback)))
    un = slice_of(v, "unexplained")
    if un is not None and un.ns:
        cut = crossed(un.share, lim.gpu_idle_red_share, lim.gpu_idle_yellow_share,
                      ("gpu_idle_red_share", "gpu_idle_yellow_share"))
        if cut and cut[0] == "top" and un.ns < lim.unexplained_dominates_share * idle_ns:
            cut = ("consider", cut[1])  # the top cut needs the unexplained idle to dominate
        if cut:
            out.append(Claim(
                pattern=PATTERN, form="unexplained", share=un.share, tier=cut[0],
                cutoff=cut[1], owns=Owns(causes=("unexplained",)),
                fix=(FixPart(key="gpu-idle-unexplained"),), cites=ev,
                facts=AccountIdle(ns=un.ns, idle_share=un.ns / idle_ns,
                                  startup_only=acc.steady_fallback)))
    return out


def phrase(c: Claim) -> Phrasing:
    f = c.facts
    if isinstance(f, SpanIdle):
        parts = f.idle_ns or 1
        obs = (
            f"GPU kernels were busy {f.busy_pct:.1f}% of the {ms(f.span_ns)} kernel "
            f"span ({f.kernels:,} kernels); idle {ms(f.idle_ns)}: host wait "
            f"{ms(f.host_wait_ns)} ({pct(f.host_wait_ns / parts)}), kernel wait "
            f"{ms(f.kernel_wait_ns)} ({pct(f.kernel_wait_ns / parts)}), other "
            f"{ms(f.other_ns)} ({pct(f.other_ns / parts)}). Mostly {f.cause}: "
            f"{_SIDE[f.cause]}.")
        if c.form == "startup":
            return Phrasing(
                title=f"GPU idle {pct(c.share)} of the kernel span, mostly during start-up work",
                observation=obs + (f" The host spent {ms(f.startup_ns)} in start-up frames "
                                   "(JIT compilation, module loading, autotuning) inside this "
                                   "span: the idle is warm-up, not steady state."),
                details={"idle_ns": f.idle_ns, "cause": "start-up",
                         "startup_ns": f.startup_ns})
        return Phrasing(
            title=f"GPU idle {pct(c.share)} of the kernel span (mostly {f.cause})",
            observation=obs,
            effect=_host_wait_effect(f.host_wait_ns, f.startup_ns)
            if f.cause == "host wait" else "",
            details={"idle_ns": f.idle_ns, "cause": f.cause, "startup_ns": f.startup_ns})
    assert isinstance(f, AccountIdle)
    if c.form == "queued":
        return Phrasing(
            title=f"GPU idle with work already queued: {pct(c.share)} of the step",
            observation=(f"{per_step(f.startup_only)} the GPU idled {ms(f.ns)} "
                         f"({pct(c.share)}) although the next kernel had already been "
                         "launched: it waited on a GPU-side dependency (another stream's "
                         "event, a copy, a collective's peer), not on the host."))
    return Phrasing(
        title=f"GPU idle with no host activity recorded: {pct(c.share)} of the step",
        observation=(f"{per_step(f.startup_only)} the GPU idled {ms(f.ns)} ({pct(c.share)}, "
                     f"{pct(f.idle_share)} of all idle) while the capture shows no host op on "
                     "the launching thread(s): the cause is not in this capture."))


DECLARATION = Declaration(
    patterns=(PATTERN,), detect=detect, phrase=phrase, causes=CAUSES,
    thresholds=("gpu_idle_red_share", "gpu_idle_yellow_share", "startup_dominates_idle_share",
                "unexplained_dominates_share"),
    fix_keys=(PATTERN, "gpu-idle-queued", "gpu-idle-unexplained", "capture-window"),
    about=About(side="host", corroborated_by=("host-cpu",)))

"""Host CPU samples (views/counters/host_cpu.py, rigor L3) as evidence about a waiting GPU.

`detect` emits `host-cpu-pinned` (one core saturated while the others idle: a single-threaded
host loop) or `cpu-oversubscribed` (every CPU busy: more runnable threads than cores) — only
when the GPU waits (trace idle share, or counters' utilization below the starved cut), since a
busy host under a busy GPU is no bottleneck. `corroborate` adds the host CPU reading to the
host-side findings (gpu-idle, host-python-overhead, dataloader-starved, kernel-launch-bound) so
each says whether the host ran out of CPU or only of latency. Windows: the filter's (f_metrics).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from crossview.core.finding import Evidence, Finding
from crossview.detectors.common import evidence, fix_where, pct
from crossview.detectors.declare import Declaration
from crossview.knowledge.fixes import fix_for
from crossview.views.counters.device_counters import util
from crossview.views.views import Views

if TYPE_CHECKING:  # imported where a capture has host CPU samples (decision 0760)
    from crossview.views.counters.host_cpu import HostCpu, HostWindow

PINNED = "host-cpu-pinned"
OVERSUB = "cpu-oversubscribed"
# the host-side findings a host CPU reading speaks to
CORROBORATES = ("gpu-idle", "host-python-overhead", "dataloader-starved", "kernel-launch-bound")


@dataclass
class GpuWait:
    share: float  # fraction of the span (trace) or of time (counters) the GPU was idle
    text: str
    evidence: list[Evidence]


def gpu_wait(v: Views) -> GpuWait | None:
    """The GPU idles enough to be waiting on the host: the trace first (L2), else counters."""
    m, lim = v.metrics, v.limits
    if m.kernel_span_ns:
        share = m.idle.total_ns / m.kernel_span_ns
        if share >= lim.gpu_idle_yellow_share:
            return GpuWait(share, f"the GPU idles {pct(share)} of the kernel span (trace)",
                           evidence(v, "kernel intervals and idle gaps per device"))
        return None
    for d in v.gpu_metrics.devices:
        u = util(d)
        if u is not None and lim.counters_idle_util_pct <= u < lim.counters_starved_util_pct:
            return GpuWait(1 - u / 100, f"{d.label} utilization is {u:.1f}% (counters)",
                           [Evidence(d.artifact, f"{'/'.join(d.sources)} GPU utilization")])
    return None


def _ev(h: HostCpu, w: HostWindow) -> Evidence:
    span = f", {w.window_s:,.1f} s" if w.window_s else ""
    return Evidence(h.artifact, f"host CPU /proc/stat shares (all CPUs and per core), "
                                f"{w.samples} samples{span}")


def reading(h: HostCpu, v: Views) -> str:
    """One sentence: what the host CPU did in the filter's window."""
    w, lim = h.scoped, v.limits
    b, rest = w.busiest, w.others_mean_pct()
    core = (f", busiest core cpu{b.core} {b.mean_pct:.1f}%"
            + (f" (others {rest:.1f}%)" if rest is not None else "") if b else "")
    base = (f"Host CPU samples ({h.name}, L3): all CPUs {w.busy_mean_pct or 0:.1f}% busy"
            f"{core}, iowait {w.iowait_mean_pct or 0:.1f}%")
    r = w.regime(lim.host_core_pinned_pct, lim.host_cpu_oversub_pct)
    if r == "pinned":
        return base + " — one host thread is saturated: the GPU waits on that thread."
    if r == "oversubscribed":
        return base + (" — every core is busy: the host is out of CPU (oversubscribed), so "
                       "more worker processes add contention, not throughput.")
    if (w.iowait_mean_pct or 0) >= lim.host_iowait_high_pct:
        return base + " — the host waits on storage (input files), not on CPU."
    if not w.cores:
        return base + " — no per-core samples, so a pinned single thread cannot be ruled out."
    return base + (" — the host has spare CPU: the wait is per-call latency (launches, syncs, "
                   "Python), not CPU capacity.")


def detect(v: Views) -> list[Finding]:
    out: list[Finding] = []
    wait = None
    for h in v.gpu_metrics.host_cpu:
        w, lim = h.scoped, v.limits
        r = w.regime(lim.host_core_pinned_pct, lim.host_cpu_oversub_pct) if w.samples else None
        if r is None:
            continue
        wait = wait or gpu_wait(v)
        if wait is None:
            return []  # the GPU does not wait: a busy host is not the bottleneck
        b = w.busiest
        if r == "pinned" and b is not None:
            title = (f"Single-threaded host bottleneck: cpu{b.core} pinned at "
                     f"{b.mean_pct:.0f}% while {wait.text.split(' (')[0]}")
            pattern, details = PINNED, {"core": b.core, "core_busy_pct": b.mean_pct,
                                        "others_busy_pct": w.others_mean_pct()}
        else:
            title = (f"CPU oversubscribed: all CPUs {w.busy_mean_pct or 0:.0f}% busy while "
                     f"{wait.text.split(' (')[0]}")
            pattern, details = OVERSUB, {"busy_pct": w.busy_mean_pct,
                                         "cpus": h.cpus or len(w.cores) or None}
        out.append(Finding(
            pattern=pattern, severity="yellow", title=title,
            observation=f"{reading(h, v)} Meanwhile {wait.text}.",
            fix=fix_for(pattern, v.engine, fix_where(v)), share=wait.share,
            evidence=[_ev(h, w), *wait.evidence], rigor="L3",
            expected_effect="Bounded by the GPU's idle share "
                            f"({pct(wait.share)}); confirm with a trace of the same window.",
            details={**details, "gpu_idle_share": wait.share}))
    return out


def corroborate(v: Views, findings: list[Finding]) -> None:
    """Add the host CPU reading (sentence, evidence, details) to host-side findings."""
    hosts = [h for h in v.gpu_metrics.host_cpu if h.scoped.samples]
    if not hosts:
        return
    for f in findings:
        if f.pattern not in CORROBORATES:
            continue
        for h in hosts:
            f.observation = f"{f.observation.rstrip()} {reading(h, v)}"
            f.evidence.append(_ev(h, h.scoped))
            b = h.scoped.busiest
            f.details["host_cpu"] = {"artifact": h.artifact,
                                     "busy_pct": h.scoped.busy_mean_pct,
                                     "busiest_core": b.core if b else None,
                                     "busiest_core_pct": b.mean_pct if b else None,
                                     "iowait_pct": h.scoped.iowait_mean_pct}


DECLARATION = Declaration(
    patterns=(PINNED, OVERSUB), detect=detect, causes=(),
    thresholds=("counters_idle_util_pct", "counters_starved_util_pct", "gpu_idle_yellow_share",
        "host_core_pinned_pct", "host_cpu_oversub_pct", "host_iowait_high_pct"),
    fix_keys=(PINNED, OVERSUB))

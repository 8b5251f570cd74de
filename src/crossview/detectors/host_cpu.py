"""Host CPU samples (views/counters/host_cpu.py, rigor L3) as evidence about a waiting GPU.

`detect` claims `host-cpu-pinned` (one core saturated while the others idle: a single-threaded
host loop) or `cpu-oversubscribed` (every CPU busy: more runnable threads than cores) — only
when the GPU waits (trace idle share, or counters' utilization below the starved cut), since a
busy host under a busy GPU is no bottleneck. `readings` gives the verdict the host CPU reading
it adds to the host-side findings that declare it (About.corroborated_by "host-cpu"), so each
says whether the host ran out of CPU or only of latency. Windows: the filter's (f_metrics).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from msgspec import Struct

from crossview.core.claim import (
    Cite,
    Claim,
    Count,
    Cutoff,
    Facts,
    FixPart,
    Pct,
    Phrasing,
    Seconds,
    Share,
)
from crossview.core.device_counters import util
from crossview.detectors.common import cites, pct
from crossview.detectors.declare import About, Declaration
from crossview.views.views import Views

if TYPE_CHECKING:  # imported where a capture has host CPU samples (decision 0760)
    from crossview.views.counters.host_cpu import HostCpu

PINNED = "host-cpu-pinned"
OVERSUB = "cpu-oversubscribed"


class Reading(Struct, frozen=True, kw_only=True):
    """What the host CPU did in the filter's window (typed; `reading_text` says it)."""

    artifact: str
    samples: Count
    window_s: Seconds | None
    busy_pct: Pct | None
    busiest_core: int | None
    busiest_pct: Pct | None
    others_pct: Pct | None
    iowait_pct: Pct | None
    cores: Count
    cpus: Count | None
    regime: str | None  # pinned | oversubscribed | None
    iowait_high: bool


class GpuWait(Struct, frozen=True, kw_only=True):
    share: Share  # of the kernel span (trace) or of time (counters) the GPU was idle
    label: str | None = None  # the counter group, when read from counters
    util_pct: Pct | None = None


class HostBound(Facts, frozen=True, kw_only=True):
    reading: Reading
    wait: GpuWait


def _reading(h: HostCpu, v: Views) -> Reading:
    w, lim = h.scoped, v.limits
    b = w.busiest
    return Reading(artifact=h.artifact, samples=w.samples, window_s=w.window_s,
                   busy_pct=w.busy_mean_pct, busiest_core=b.core if b else None,
                   busiest_pct=b.mean_pct if b else None, others_pct=w.others_mean_pct(),
                   iowait_pct=w.iowait_mean_pct, cores=len(w.cores), cpus=h.cpus,
                   regime=w.regime(lim.host_core_pinned_pct, lim.host_cpu_oversub_pct),
                   iowait_high=(w.iowait_mean_pct or 0) >= lim.host_iowait_high_pct)


def readings(v: Views) -> list[Reading]:
    """The host CPU readings in the filter's window (one per host-CPU artifact with samples)."""
    return [_reading(h, v) for h in v.gpu_metrics.host_cpu if h.scoped.samples]


def cite(r: Reading) -> Cite:
    return Cite(artifact=r.artifact, read="host-cpu-window" if r.window_s else "host-cpu",
                fill=(("samples", str(r.samples)), ("window_s", f"{r.window_s or 0:,.1f}")))


def reading_text(r: Reading) -> str:
    """(phrasing) One sentence: what the host CPU did in the filter's window."""
    core = (f", busiest core cpu{r.busiest_core} {r.busiest_pct:.1f}%"
            + (f" (others {r.others_pct:.1f}%)" if r.others_pct is not None else "")
            if r.busiest_core is not None else "")
    base = (f"Host CPU samples ({Path(r.artifact).name}, L3): all CPUs {r.busy_pct or 0:.1f}% "
            f"busy{core}, iowait {r.iowait_pct or 0:.1f}%")
    if r.regime == "pinned":
        return base + " — one host thread is saturated: the GPU waits on that thread."
    if r.regime == "oversubscribed":
        return base + (" — every core is busy: the host is out of CPU (oversubscribed), so "
                       "more worker processes add contention, not throughput.")
    if r.iowait_high:
        return base + " — the host waits on storage (input files), not on CPU."
    if not r.cores:
        return base + " — no per-core samples, so a pinned single thread cannot be ruled out."
    return base + (" — the host has spare CPU: the wait is per-call latency (launches, syncs, "
                   "Python), not CPU capacity.")


def reading_details(r: Reading) -> dict[str, object]:
    return {"artifact": r.artifact, "busy_pct": r.busy_pct, "busiest_core": r.busiest_core,
            "busiest_core_pct": r.busiest_pct, "iowait_pct": r.iowait_pct}


def _gpu_wait(v: Views) -> tuple[GpuWait, tuple[Cite, ...], Cutoff] | None:
    """The GPU idles enough to be waiting on the host: the trace first (L2), else counters."""
    m, lim = v.metrics, v.limits
    if m.kernel_span_ns:
        share = m.idle.total_ns / m.kernel_span_ns
        if share >= lim.gpu_idle_yellow_share:
            return (GpuWait(share=share), cites(v, "idle-gaps"),
                    Cutoff("gpu_idle_yellow_share", lim.gpu_idle_yellow_share, share))
        return None
    for d in v.gpu_metrics.devices:
        u = util(d)
        if u is not None and lim.counters_idle_util_pct <= u < lim.counters_starved_util_pct:
            return (GpuWait(share=1 - u / 100, label=d.label, util_pct=u),
                    (Cite(artifact=d.artifact, read="counters-util",
                          fill=(("sources", "/".join(d.sources)),)),),
                    Cutoff("counters_starved_util_pct", lim.counters_starved_util_pct, u))
    return None


def detect(v: Views) -> list[Claim]:
    out: list[Claim] = []
    wait = None
    for h in v.gpu_metrics.host_cpu:
        r = _reading(h, v) if h.scoped.samples else None
        if r is None or r.regime is None:
            continue
        wait = wait or _gpu_wait(v)
        if wait is None:
            return []  # the GPU does not wait: a busy host is not the bottleneck
        pattern = PINNED if r.regime == "pinned" and r.busiest_core is not None else OVERSUB
        out.append(Claim(
            pattern=pattern, share=wait[0].share, tier="consider", cutoff=wait[2], rigor="L3",
            fix=(FixPart(key=pattern, located=True),), cites=(cite(r), *wait[1]),
            facts=HostBound(reading=r, wait=wait[0])))
    return out


def _wait_text(w: GpuWait) -> str:
    return (f"{w.label} utilization is {w.util_pct:.1f}% (counters)" if w.label else
            f"the GPU idles {pct(w.share)} of the kernel span (trace)")


def phrase(c: Claim) -> Phrasing:
    f = c.facts
    assert isinstance(f, HostBound)
    r, w = f.reading, f.wait
    short_wait = _wait_text(w).split(" (")[0]
    if c.pattern == PINNED:
        title = (f"Single-threaded host bottleneck: cpu{r.busiest_core} pinned at "
                 f"{r.busiest_pct or 0:.0f}% while {short_wait}")
        details: dict[str, object] = {"core": r.busiest_core, "core_busy_pct": r.busiest_pct,
                                      "others_busy_pct": r.others_pct}
    else:
        title = (f"CPU oversubscribed: all CPUs {r.busy_pct or 0:.0f}% busy while {short_wait}")
        details = {"busy_pct": r.busy_pct, "cpus": r.cpus or r.cores or None}
    return Phrasing(
        title=title, observation=f"{reading_text(r)} Meanwhile {_wait_text(w)}.",
        effect=f"Bounded by the GPU's idle share ({pct(w.share)}); confirm with a trace of the "
               "same window.",
        details={**details, "gpu_idle_share": w.share})


DECLARATION = Declaration(
    patterns=(PINNED, OVERSUB), detect=detect, phrase=phrase, causes=(),
    thresholds=("counters_idle_util_pct", "counters_starved_util_pct", "gpu_idle_yellow_share",
                "host_core_pinned_pct", "host_cpu_oversub_pct", "host_iowait_high_pct"),
    fix_keys=(PINNED, OVERSUB), about=About(side="host"))

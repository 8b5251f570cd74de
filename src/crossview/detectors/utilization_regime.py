"""What limits a loaded GPU, from workload counters (rigor L3): host-starved, kernel-
inefficient (busy but few SMs active) or memory-bound (DRAM activity leads).

One concept — the counter-based regime of a device — so one module claims whichever of
`gpu-idle`, `below-roofline`, `memory-bandwidth-bound` applies. Per device group (a capture's
idle and load sections are judged apart). Host-starved is left to the trace when the bundle has
kernels (its gpu-idle claim is exact, L2). Counters never prove "at roofline" (conventions §1):
these are DRAFT pointers to confirm with a trace or ncu.
"""

from __future__ import annotations

from crossview.core.claim import Cite, Claim, CountF, Cutoff, Facts, FixPart, Pct, Phrasing
from crossview.core.device_counters import DeviceCounters, util
from crossview.detectors.declare import About, Declaration
from crossview.views.views import Views


class Regime(Facts, frozen=True, kw_only=True):
    label: str
    util_pct: Pct
    util_min_pct: Pct | None = None  # gpu_util recorded (else graphics-engine activity)
    util_max_pct: Pct | None = None
    busy_engine: str | None = None  # "<engine> reports N requests running on average"
    running_mean: CountF | None = None
    sm_pct: Pct | None = None
    dram_pct: Pct | None = None
    tensor_pct: Pct | None = None


def _ev(d: DeviceCounters, *metrics: str) -> tuple[Cite, ...]:
    raws = [r for m in metrics if (s := d.get(m)) for r in s.raw_names]
    read = "counters-samples-window" if d.window_s else "counters-samples"
    return (Cite(artifact=d.artifact, read=read, fill=(
        ("sources", "/".join(d.sources)), ("label", d.label), ("names", ", ".join(raws)),
        ("samples", str(d.samples)), ("window_s", f"{d.window_s or 0:,.0f}"))),)


def _serving_busy(v: Views) -> tuple[str, float] | None:
    """Evidence that the engine had work during the capture (so an idle GPU is starved)."""
    for s in v.gpu_metrics.serving:
        run = s.gauges.get("requests_running") or s.gauges.get("requests_inflight")
        if run is not None and run.mean > 0:
            return s.engine, run.mean
    return None


def _starved(v: Views, d: DeviceCounters, u: float) -> Claim:
    busy = _serving_busy(v)
    g = d.get("gpu_util")
    return Claim(
        pattern="gpu-idle", form="counters", share=1.0 - u / 100.0,
        tier="top" if busy else "consider",
        cutoff=Cutoff("counters_starved_util_pct", v.limits.counters_starved_util_pct, u),
        rigor="L3", fix=(FixPart(key="counters-host-starved"),),
        cites=_ev(d, "gpu_util", "gr_engine_active"),
        facts=Regime(label=d.label, util_pct=u, util_min_pct=g.min if g else None,
                     util_max_pct=g.max if g else None, busy_engine=busy[0] if busy else None,
                     running_mean=busy[1] if busy else None))


def _busy(v: Views, d: DeviceCounters, u: float) -> Claim | None:
    lim = v.limits
    sm, dram, tensor = d.mean("sm_active"), d.mean("dram_active"), d.mean("tensor_active")
    if dram is not None and dram >= lim.sol_latency_max_pct and \
            dram >= (tensor or 0.0) + lim.sol_bottleneck_gap_pct:
        return Claim(
            pattern="memory-bandwidth-bound", form="counters", share=dram / 100.0,
            tier="consider", cutoff=Cutoff("sol_latency_max_pct", lim.sol_latency_max_pct, dram),
            rigor="L3", fix=(FixPart(key="counters-memory-bound"),),
            cites=_ev(d, "dram_active", "tensor_active", "gpu_util"),
            facts=Regime(label=d.label, util_pct=u, dram_pct=dram, tensor_pct=tensor))
    if sm is not None and sm < lim.sm_active_low_pct:
        return Claim(
            pattern="below-roofline", form="counters", share=(u - sm) / 100.0, tier="consider",
            cutoff=Cutoff("sm_active_low_pct", lim.sm_active_low_pct, sm), rigor="L3",
            fix=(FixPart(key="counters-small-grids"),), cites=_ev(d, "sm_active", "gpu_util"),
            facts=Regime(label=d.label, util_pct=u, sm_pct=sm))
    return None


def detect(v: Views) -> list[Claim]:
    out: list[Claim] = []
    lim = v.limits
    trace_has_kernels = v.metrics.kernel_count > 0
    for d in v.gpu_metrics.devices:
        u = util(d)
        if u is None or u < lim.counters_idle_util_pct:
            continue  # no load: metrics_capture.py reports an idle capture
        if u < lim.counters_starved_util_pct:
            if not trace_has_kernels:
                out.append(_starved(v, d, u))
        elif u >= lim.counters_busy_util_pct:
            c = _busy(v, d, u)
            if c is not None:
                out.append(c)
    return out


def phrase(c: Claim) -> Phrasing:
    f = c.facts
    assert isinstance(f, Regime)
    u = f.util_pct
    if c.pattern == "gpu-idle":
        obs = (f"{f.label}: GPU utilization {u:.1f}% on average (min {f.util_min_pct:.0f}%, "
               f"max {f.util_max_pct:.0f}%)" if f.util_min_pct is not None else
               f"{f.label}: graphics engine active {u:.1f}% on average")
        obs += (f" while {f.busy_engine} reports {f.running_mean:,.1f} requests running on "
                "average: the engine has work but the GPU waits on the host."
                if f.busy_engine else
                ": the GPU waits more than it computes (host-side or input-bound).")
        return Phrasing(
            title=f"GPU under-used: {u:.0f}% utilization ({f.label})", observation=obs,
            effect=f"Up to {100 - u:.0f}% more GPU time to use if the host keeps up.",
            details={"util_pct": u})
    if c.pattern == "memory-bandwidth-bound":
        t = f", tensor pipes {f.tensor_pct:.1f}%" if f.tensor_pct is not None else ""
        return Phrasing(
            title=f"Memory-bandwidth-bound by counters ({f.label})",
            observation=(f"{f.label}: DRAM active {f.dram_pct:.1f}% of the time (≈ that share "
                         f"of peak bandwidth in use) at {u:.0f}% utilization{t}: memory "
                         "traffic, not math, sets the pace (typical of decode)."),
            effect="Throughput scales with bytes saved per token; confirm per kernel "
                   "with ncu before expecting the full gain.",
            details={"dram_active_pct": f.dram_pct, "tensor_active_pct": f.tensor_pct,
                     "util_pct": u})
    return Phrasing(
        title=f"Busy GPU, few SMs active ({f.label})",
        observation=(f"{f.label}: a kernel runs {u:.0f}% of the time but SMs are active "
                     f"only {f.sm_pct:.1f}% of it: kernels too small to fill the GPU "
                     "(latency-bound, small grids)."),
        effect="More work per launch raises throughput at the same utilization.",
        details={"sm_active_pct": f.sm_pct, "util_pct": u})


DECLARATION = Declaration(
    patterns=("gpu-idle", "memory-bandwidth-bound", "below-roofline"), detect=detect,
    phrase=phrase, causes=(),
    thresholds=("counters_busy_util_pct", "counters_idle_util_pct", "counters_starved_util_pct",
                "sm_active_low_pct", "sol_bottleneck_gap_pct", "sol_latency_max_pct"),
    fix_keys=("counters-host-starved", "counters-memory-bound", "counters-small-grids"),
    about=About(side="GPU kernel"),
    per_pattern={"gpu-idle": About(side="host", corroborated_by=("host-cpu",))})

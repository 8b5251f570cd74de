"""What limits a loaded GPU, from workload counters (rigor L3): host-starved, kernel-
inefficient (busy but few SMs active) or memory-bound (DRAM activity leads).

One concept — the counter-based regime of a device — so one module emits whichever of
`gpu-idle`, `below-roofline`, `memory-bandwidth-bound` applies. Per device group (a capture's
idle and load sections are judged apart). Host-starved is left to the trace when the bundle has
kernels (its gpu-idle finding is exact, L2). Counters never prove "at roofline" (conventions §1):
these are DRAFT pointers to confirm with a trace or ncu.
"""

from __future__ import annotations

from crossview.core.finding import Evidence, Finding
from crossview.detectors.declare import Declaration
from crossview.knowledge.fixes import fix_for
from crossview.views.counters.device_counters import DeviceCounters, util
from crossview.views.views import Views


def _ev(d: DeviceCounters, *metrics: str) -> list[Evidence]:
    raws = [r for m in metrics if (s := d.get(m)) for r in s.raw_names]
    span = f", {d.samples} samples" + (f" over {d.window_s:,.0f} s" if d.window_s else "")
    return [Evidence(d.artifact, f"{'/'.join(d.sources)} {d.label}: {', '.join(raws)}{span}")]


def _serving_busy(v: Views) -> str | None:
    """Evidence that the engine had work during the capture (so an idle GPU is starved)."""
    for s in v.gpu_metrics.serving:
        run = s.gauges.get("requests_running") or s.gauges.get("requests_inflight")
        if run is not None and run.mean > 0:
            return f"{s.engine} reports {run.mean:,.1f} requests running on average"
    return None


def _starved(v: Views, d: DeviceCounters, u: float) -> Finding:
    busy = _serving_busy(v)
    g = d.get("gpu_util")
    obs = (f"{d.label}: GPU utilization {u:.1f}% on average (min {g.min:.0f}%, "
           f"max {g.max:.0f}%)" if g else
           f"{d.label}: graphics engine active {u:.1f}% on average")
    obs += (f" while {busy}: the engine has work but the GPU waits on the host."
            if busy else ": the GPU waits more than it computes (host-side or input-bound).")
    return Finding(
        pattern="gpu-idle", severity="red" if busy else "yellow",
        title=f"GPU under-used: {u:.0f}% utilization ({d.label})", observation=obs,
        fix=fix_for("counters-host-starved", v.engine, ""), share=1.0 - u / 100.0,
        evidence=_ev(d, "gpu_util", "gr_engine_active"), rigor="L3",
        expected_effect=f"Up to {100 - u:.0f}% more GPU time to use if the host keeps up.",
        details={"util_pct": u})


def _busy(v: Views, d: DeviceCounters, u: float) -> Finding | None:
    lim = v.limits
    sm, dram, tensor = d.mean("sm_active"), d.mean("dram_active"), d.mean("tensor_active")
    if dram is not None and dram >= lim.sol_latency_max_pct and \
            dram >= (tensor or 0.0) + lim.sol_bottleneck_gap_pct:
        t = f", tensor pipes {tensor:.1f}%" if tensor is not None else ""
        return Finding(
            pattern="memory-bandwidth-bound", severity="yellow",
            title=f"Memory-bandwidth-bound by counters ({d.label})",
            observation=(f"{d.label}: DRAM active {dram:.1f}% of the time (≈ that share of "
                         f"peak bandwidth in use) at {u:.0f}% utilization{t}: memory traffic, "
                         "not math, sets the pace (typical of decode)."),
            fix=fix_for("counters-memory-bound", v.engine, ""), share=dram / 100.0,
            evidence=_ev(d, "dram_active", "tensor_active", "gpu_util"), rigor="L3",
            expected_effect="Throughput scales with bytes saved per token; confirm per kernel "
                            "with ncu before expecting the full gain.",
            details={"dram_active_pct": dram, "tensor_active_pct": tensor, "util_pct": u})
    if sm is not None and sm < lim.sm_active_low_pct:
        return Finding(
            pattern="below-roofline", severity="yellow",
            title=f"Busy GPU, few SMs active ({d.label})",
            observation=(f"{d.label}: a kernel runs {u:.0f}% of the time but SMs are active "
                         f"only {sm:.1f}% of it: kernels too small to fill the GPU "
                         "(latency-bound, small grids)."),
            fix=fix_for("counters-small-grids", v.engine, ""), share=(u - sm) / 100.0,
            evidence=_ev(d, "sm_active", "gpu_util"), rigor="L3",
            expected_effect="More work per launch raises throughput at the same utilization.",
            details={"sm_active_pct": sm, "util_pct": u})
    return None


def detect(v: Views) -> list[Finding]:
    out: list[Finding] = []
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
            f = _busy(v, d, u)
            if f is not None:
                out.append(f)
    return out


DECLARATION = Declaration(
    patterns=("gpu-idle", "memory-bandwidth-bound", "below-roofline"), detect=detect, causes=(),
    thresholds=("counters_busy_util_pct", "counters_idle_util_pct", "counters_starved_util_pct",
        "sm_active_low_pct", "sol_bottleneck_gap_pct", "sol_latency_max_pct"),
    fix_keys=("counters-host-starved", "counters-memory-bound", "counters-small-grids"))

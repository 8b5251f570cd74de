"""capture-window: what the capture itself holds (start-up work, or no GPU activity at all)."""

from __future__ import annotations

from crossview.detectors.common import artifact_kinds, evidence, ms, pct, short
from crossview.knowledge.fixes import fix_for
from crossview.model.finding import Finding
from crossview.views.views import Views

PATTERN = "capture-window"


def detect(v: Views) -> list[Finding]:
    m, lim = v.metrics, v.limits
    if m.cpu_only:
        held = (f"{m.cpu_samples:,} CPU samples, ~{ms(m.cpu_sampled_ns)} of thread time, L1"
                if m.cpu_sampled_ns else f"{m.cpu_samples:,} CPU samples, period unknown, L1"
                if m.cpu_samples else f"{ms(m.host_time_ns)} of host time")
        nsys = "nsys" in artifact_kinds(v).values()
        return [Finding(
            pattern=PATTERN, severity="info",
            title="CPU-only capture: no GPU kernels in the trace",
            observation=(f"The trace holds host activity only ({held}); GPU metrics and the "
                         "GPU view are not available."),
            fix=fix_for("capture-no-cuda", "nsys" if nsys else None),
            share=0.0, evidence=evidence(v, "no kernel / memcpy / memset events"),
        )]
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
        fix=fix_for(PATTERN, v.engine), share=share,
        evidence=evidence(v, "host frames matching frames.yaml: startup"),
    )]

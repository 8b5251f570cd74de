"""sync-bound: host synchronizations that drain the GPU (judged by GPU idle they open)."""

from __future__ import annotations

from crossview.detectors.common import evidence, ms, pct, severity, short
from crossview.knowledge.fixes import fix_for
from crossview.model.finding import Finding
from crossview.views.views import Views

PATTERN = "sync-bound"


def detect(v: Views) -> list[Finding]:
    m, lim = v.metrics, v.limits
    if m.cpu_only or m.kernel_span_ns == 0 or not m.sync_apis:
        return []
    where, params = v.sync_where()
    eff = v.gpu_inside(where, params)
    if eff.count == 0:
        return []
    share = eff.gaps_opened_inside_ns / m.kernel_span_ns
    names = ", ".join(f"{short(a.name, 40)} ×{a.count:,} ({ms(a.time_ns)})"
                      for a in m.sync_apis[:4])
    obs = (
        f"Synchronizing calls: {names}. The host spent {ms(eff.host_ns)} blocked inside the "
        f"kernel span; the GPU stayed busy {eff.gpu_busy_inside_pct:.1f}% of that time. "
        f"Idle gaps that opened while the host was blocked total "
        f"{ms(eff.gaps_opened_inside_ns)} ({pct(share)} of the span)"
    )
    sev = severity(share, lim.sync_red_share, lim.sync_yellow_share)
    if sev is None:
        if eff.host_ns < lim.sync_yellow_share * m.kernel_span_ns:
            return []  # too little blocked time to mention
        # waits during which the GPU keeps working are the host waiting for real work
        return [Finding(
            pattern=PATTERN, severity="info",
            title="Host syncs present but not draining the GPU",
            observation=obs + ": the host waits for real work, not sync-bound.",
            fix="None needed for throughput; keep syncs out of the inner loop.", share=share,
            evidence=evidence(v, "sync API intervals against device idle gaps"),
        )]
    return [Finding(
        pattern=PATTERN, severity=sev,
        title=f"Sync-bound: GPU drains during host syncs ({pct(share)} of the span idle)",
        observation=obs + ": each sync empties the queue, then the GPU waits for the host.",
        fix=fix_for(PATTERN, v.engine, v.where_text()), share=share,
        evidence=evidence(v, "sync API intervals against device idle gaps"),
        expected_effect=f"Up to {ms(eff.gaps_opened_inside_ns)} of GPU idle if the syncs go.",
    )]

"""capture-window: what the capture itself holds (start-up work, or no GPU activity at all)."""

from __future__ import annotations

from crossview.detectors.common import artifact_kinds, evidence, ms, pct
from crossview.knowledge import api_roles
from crossview.knowledge.fixes import fix_for
from crossview.model.finding import Finding
from crossview.views.views import Views

PATTERN = "capture-window"


def detect(v: Views) -> list[Finding]:
    m, lim = v.metrics, v.limits
    if m.cpu_only:
        held = (f"{m.cpu_samples:,} CPU samples, ~{ms(m.cpu_sampled_ns)} of thread time, L1"
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
    startup = api_roles.names_with_role("startup")
    row = v.store.sql(
        "SELECT count(*), coalesce(sum(dur_ns), 0) FROM f_host WHERE kind = 'runtime'"
        " AND name IN (SELECT unnest($n))", {"n": startup},
    ).fetchall()[0]
    n, t = int(row[0]), int(row[1])
    span = m.host_span_ns or 1
    share = t / span
    if n == 0 or share < lim.startup_yellow_share:
        return []
    return [Finding(
        pattern=PATTERN, severity="yellow",
        title=f"Start-up work inside the capture ({pct(share)} of host time span)",
        observation=(f"{n:,} start-up calls (module loading, allocation) took {ms(t)}; "
                     "they are warm-up, not steady state."),
        fix=fix_for(PATTERN, v.engine), share=share,
        evidence=evidence(v, "start-up API calls (api_roles.yaml: startup)"),
    )]

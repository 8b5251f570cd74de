"""dataloader-starved: the GPU idles while the input pipeline runs."""

from __future__ import annotations

from crossview.detectors.common import evidence, ms, pct, severity
from crossview.knowledge import frames
from crossview.knowledge.fixes import fix_for
from crossview.model.finding import Finding
from crossview.views.views import Views

PATTERN = "dataloader-starved"


def detect(v: Views) -> list[Finding]:
    m, lim = v.metrics, v.limits
    if m.cpu_only or m.kernel_span_ns == 0:
        return []
    # ILIKE first: a cheap filter before the regex on every host event name
    eff = v.gpu_inside("name ILIKE '%dataloader%' AND regexp_matches(name, $p)",
                       {"p": frames.dataloader_pattern()})
    if eff.count == 0 or eff.host_ns == 0:
        return []
    share = eff.gpu_idle_inside_ns / m.kernel_span_ns
    sev = severity(share, lim.dataloader_red_share, lim.dataloader_yellow_share)
    if sev is None:
        return []
    return [Finding(
        pattern=PATTERN, severity=sev,
        title=f"DataLoader-starved: GPU idle {pct(share)} of the span while batches load",
        observation=(
            f"{eff.count:,} DataLoader fetches took {ms(eff.host_ns)} inside the kernel span; "
            f"the GPU was busy only {eff.gpu_busy_inside_pct:.1f}% of that time "
            f"({ms(eff.gpu_idle_inside_ns)} idle)."
        ),
        fix=fix_for(PATTERN, v.engine, v.where_text()), share=share,
        evidence=evidence(v, "DataLoader host intervals against device idle gaps"),
    )]

"""gpu-gap: stretches where a device runs no GPU op at all for longer than a threshold (the nsys
expert rule `gpu_gaps`, default 500 ms), each named with the host op that covers it.

gpu-idle judges the idle share and its cause; this names *where* the long holes are, so a user
can re-query them with `--window`. Kernels, memcpy and memset all count as GPU work here.
"""

from __future__ import annotations

from crossview.core.finding import Finding
from crossview.detectors.common import evidence, fix_where, ms, pct, short
from crossview.detectors.declare import Declaration
from crossview.knowledge.fixes import fix_for
from crossview.views.device import gpu_activity
from crossview.views.views import Views

PATTERN = "gpu-gap"
SHOWN = 3


def detect(v: Views) -> list[Finding]:
    lim = v.limits
    acts = v.device_activity
    span = sum(a.last - a.first for a in acts)
    if span <= 0:
        return []
    res = gpu_activity.gaps(v.store, acts, lim.gpu_gap_min_ns)
    if not res.count:
        return []
    found, total = res.longest, res.total_ns
    share = total / span
    parts = []
    for g in found[:SHOWN]:
        # the op covering most of the gap, with how much it covers: a 0.26 ms cudaMalloc in
        # a 1.629 s gap is no explanation of the gap (nvFuser 2025.1)
        host = (f"; host in `{short(g.host, 60)}` ({g.host_kind}) for {ms(g.host_ns)} of it"
                if g.host else "; no host event recorded meanwhile")
        parts.append(f"{ms(g.dur_ns)} on device {g.device} at {g.start_ns}–"
                     f"{g.start_ns + g.dur_ns} ns{host}")
    more = f" (+{res.count - SHOWN:,} more)" if res.count > SHOWN else ""
    return [Finding(
        pattern=PATTERN,
        severity="yellow" if share >= lim.nsys_rule_yellow_share else "info",
        title=(f"{res.count:,} GPU gap{'s' if res.count > 1 else ''} longer than "
               f"{ms(lim.gpu_gap_min_ns)} ({ms(total)}, {pct(share)} of the GPU-op span)"),
        observation=(f"No kernel, memcpy or memset ran for {ms(total)} in gaps over "
                     f"{ms(lim.gpu_gap_min_ns)}: " + "; ".join(parts) + more + "."),
        fix=fix_for(PATTERN, v.engine, fix_where(v)), share=share,
        evidence=evidence(v, "GPU op intervals (kernel, memcpy, memset) per device and the "
                             "host calls / NVTX ranges overlapping each gap"),
        details={"gaps": [{"artifact": g.artifact, "device": g.device, "start_ns": g.start_ns,
                           "dur_ns": g.dur_ns, "host": g.host} for g in found],
                 "count": res.count, "total_ns": total, "min_gap_ns": lim.gpu_gap_min_ns},
    )]


DECLARATION = Declaration(
    patterns=(PATTERN,), detect=detect, causes=(),
    thresholds=("gpu_gap_min_ns", "nsys_rule_yellow_share"),
    fix_keys=(PATTERN,), summarizes=("*",))

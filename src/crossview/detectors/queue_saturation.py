"""queue-saturation: requests wait while the running batch is at its cap.

Two readings of the same thing: the gauges (waiting > 0 in scrapes where running is at the
cap) and the histograms (share of end-to-end request time spent queued; Triton: queue time ÷
request time). The larger one decides; with fewer than queue_min_firm_scrapes scrapes and no
recorded cap the gauge reading is at most yellow (one instant is not a steady state).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from crossview.core.finding import Finding, Severity
from crossview.detectors.common import pct, severity
from crossview.detectors.declare import Declaration
from crossview.detectors.serving_common import batch_cap, ev, fmt_s, where
from crossview.knowledge.fixes import fix_for
from crossview.views.views import Views

if TYPE_CHECKING:  # imported where a capture has serving metrics (decision 0760)
    from crossview.views.workload.serving import ServingSummary

PATTERN = "queue-saturation"
_RANK = {"red": 2, "yellow": 1, None: 0}


def _gauge_reading(v: Views, s: ServingSummary) -> tuple[float | None, str, bool]:
    run, wait = s.gauges.get("requests_running"), s.gauges.get("requests_waiting")
    if run is None or wait is None:
        return None, "", False
    cap, cap_src = batch_cap(v, s)
    seqs = sorted(set(run.by_scrape) & set(wait.by_scrape))
    if not seqs or cap is None:
        return None, "", False
    sat = [q for q in seqs if wait.by_scrape[q] > 0
           and run.by_scrape[q] >= v.limits.running_at_cap_ratio * cap]
    share = len(sat) / len(seqs)
    text = (f"in {len(sat)} of {len(seqs)} scrapes requests were waiting (up to "
            f"{wait.max:,.0f}, mean {wait.mean:,.1f}) while {run.max:,.0f} ran — at the cap, "
            f"{cap_src}")
    firm = len(seqs) >= v.limits.queue_min_firm_scrapes
    return share, text, cap_src.startswith("max_num_seqs") or firm


def _latency_reading(v: Views, s: ServingSummary) -> tuple[float | None, str]:
    qt, e2e = s.hist("queue_time"), s.hist("e2e_latency")
    if qt and e2e and e2e.sum > 0 and e2e.count >= v.limits.serving_min_requests:
        share = qt.sum / e2e.sum
        return share, (f"requests spent {pct(share)} of their end-to-end time queued (mean "
                       f"queue {fmt_s(qt.mean)} of {fmt_s(e2e.mean)} per request, p99 queue "
                       f"{qt.p99.text(fmt_s) if qt.p99 else 'n/a'}, {e2e.count:,.0f} "
                       "requests)")
    q, r = s.counter("queue_time_total"), s.counter("request_time_total")
    n = s.finished or 0
    if q is not None and r and n >= v.limits.serving_min_requests:
        return q / r, (f"requests spent {pct(q / r)} of their server time queued "
                       f"({fmt_s(q / n)} mean queue per request, {n:,.0f} requests)")
    return None, ""


def detect(v: Views) -> list[Finding]:
    out: list[Finding] = []
    lim = v.limits
    for s in v.gpu_metrics.serving:
        g_share, g_text, g_firm = _gauge_reading(v, s)
        l_share, l_text = _latency_reading(v, s)
        g_sev = severity(g_share, lim.queue_waiting_red_share,
                         lim.queue_waiting_yellow_share) if g_share else None
        if g_sev == "red" and not g_firm:
            g_sev = "yellow"
        l_sev = severity(l_share, lim.red_share, lim.yellow_share) if l_share else None
        sev: Severity | None = g_sev if _RANK[g_sev] >= _RANK[l_sev] else l_sev
        if sev is None:
            continue
        parts = [t for t in (g_text, l_text) if t]
        share = max(x for x in (g_share, l_share) if x is not None)
        model = f" ({s.model})" if s.model else ""
        out.append(Finding(
            pattern=PATTERN, severity=sev,
            title=f"Requests queue for a batch slot in {s.engine}{model}",
            observation=f"{s.engine} /metrics, {where(s)}: " + "; ".join(parts) + ".",
            fix=fix_for(PATTERN, s.engine, ""), share=share,
            evidence=ev(s, "requests_waiting", "requests_running", "queue_time",
                        "e2e_latency", "queue_time_total"),
            rigor="L3",
            expected_effect="Lower TTFT and e2e latency by up to the queued share; throughput "
                            "rises only if the GPU has headroom (check KV use and utilization).",
            details={"scrape_share_at_cap_waiting": g_share, "queued_latency_share": l_share},
        ))
    return out


DECLARATION = Declaration(
    patterns=(PATTERN,), detect=detect, causes=(),
    thresholds=("queue_min_firm_scrapes", "queue_waiting_red_share", "queue_waiting_yellow_share",
        "red_share", "yellow_share", "running_at_cap_ratio", "serving_min_requests"),
    fix_keys=(PATTERN,))

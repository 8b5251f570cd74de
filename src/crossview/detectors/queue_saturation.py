"""queue-saturation: requests wait while the running batch is at its cap.

Two readings of the same thing: the gauges (waiting > 0 in scrapes where running is at the
cap) and the histograms (share of end-to-end request time spent queued; Triton: queue time ÷
request time). The larger one decides; with fewer than queue_min_firm_scrapes scrapes and no
recorded cap the gauge reading is at most a mention (one instant is not a steady state).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from msgspec import Struct

from crossview.core.claim import (
    Claim,
    Count,
    CountF,
    Cutoff,
    Facts,
    FixPart,
    Phrasing,
    Seconds,
    Share,
    Tier,
)
from crossview.detectors.common import crossed, pct
from crossview.detectors.declare import About, Declaration
from crossview.detectors.serving_common import Scrapes, batch_cap, ev, fmt_s, model, scrapes, where
from crossview.views.views import Views

if TYPE_CHECKING:  # imported where a capture has serving metrics (decision 0760)
    from crossview.views.workload.serving import ServingSummary

PATTERN = "queue-saturation"
_RANK: dict[Tier | None, int] = {"top": 2, "consider": 1, None: 0}


class Gauges(Struct, frozen=True, kw_only=True):
    at_cap: Count  # scrapes with requests waiting while running was at the cap
    seen: Count
    waiting_max: CountF
    waiting_mean: CountF
    running_max: CountF
    cap: CountF
    cap_from: str  # recorded | observed
    cap_artifact: str | None


class Latency(Struct, frozen=True, kw_only=True):
    queued: Share
    queue_mean_s: Seconds | None = None
    e2e_mean_s: Seconds | None = None
    p99_queue: str | None = None  # the histogram bucket interval, as read
    requests: CountF
    server_time: bool = False  # queue ÷ server time counters (Triton) rather than histograms


class Queueing(Facts, frozen=True, kw_only=True):
    where: Scrapes
    gauges: Gauges | None
    latency: Latency | None
    gauge_share: Share | None
    latency_share: Share | None


def _gauge_reading(v: Views, s: ServingSummary) -> tuple[float | None, Gauges | None, bool]:
    run, wait = s.gauges.get("requests_running"), s.gauges.get("requests_waiting")
    if run is None or wait is None:
        return None, None, False
    cap, cap_from, cap_art = batch_cap(v, s)
    seqs = sorted(set(run.by_scrape) & set(wait.by_scrape))
    if not seqs or cap is None:
        return None, None, False
    sat = [q for q in seqs if wait.by_scrape[q] > 0
           and run.by_scrape[q] >= v.limits.running_at_cap_ratio * cap]
    share = len(sat) / len(seqs)
    firm = len(seqs) >= v.limits.queue_min_firm_scrapes
    g = Gauges(at_cap=len(sat), seen=len(seqs), waiting_max=wait.max, waiting_mean=wait.mean,
               running_max=run.max, cap=cap, cap_from=cap_from, cap_artifact=cap_art)
    return share, g, cap_from == "recorded" or firm


def _latency_reading(v: Views, s: ServingSummary) -> tuple[float | None, Latency | None]:
    qt, e2e = s.hist("queue_time"), s.hist("e2e_latency")
    if qt and e2e and e2e.sum > 0 and e2e.count >= v.limits.serving_min_requests:
        share = qt.sum / e2e.sum
        return share, Latency(queued=share, queue_mean_s=qt.mean, e2e_mean_s=e2e.mean,
                              p99_queue=qt.p99.text(fmt_s) if qt.p99 else None,
                              requests=e2e.count)
    q, r = s.counter("queue_time_total"), s.counter("request_time_total")
    n = s.finished or 0
    if q is not None and r and n >= v.limits.serving_min_requests:
        return q / r, Latency(queued=q / r, queue_mean_s=q / n, requests=n, server_time=True)
    return None, None


def detect(v: Views) -> list[Claim]:
    out: list[Claim] = []
    lim = v.limits
    for s in v.gpu_metrics.serving:
        g_share, g, g_firm = _gauge_reading(v, s)
        l_share, lat = _latency_reading(v, s)
        g_cut = crossed(g_share, lim.queue_waiting_red_share, lim.queue_waiting_yellow_share,
                        ("queue_waiting_red_share", "queue_waiting_yellow_share")) \
            if g_share else None
        if g_cut and g_cut[0] == "top" and not g_firm:
            g_cut = ("consider", g_cut[1])
        l_cut = crossed(l_share, lim.red_share, lim.yellow_share, ("red_share", "yellow_share")) \
            if l_share else None
        cut: tuple[Tier, Cutoff] | None = g_cut if _RANK[g_cut[0] if g_cut else None] >= \
            _RANK[l_cut[0] if l_cut else None] else l_cut
        if cut is None:
            continue
        share = max(x for x in (g_share, l_share) if x is not None)
        out.append(Claim(
            pattern=PATTERN, share=share, basis="requests", tier=cut[0], cutoff=cut[1],
            rigor="L3",
            fix=(FixPart(key=PATTERN),),
            cites=ev(s, "requests_waiting", "requests_running", "queue_time", "e2e_latency",
                     "queue_time_total"),
            facts=Queueing(where=scrapes(s), gauges=g,
                           latency=lat, gauge_share=g_share,
                           latency_share=l_share)))
    return out


def phrase(c: Claim) -> Phrasing:
    f = c.facts
    assert isinstance(f, Queueing)
    parts: list[str] = []
    if f.gauges is not None:
        g = f.gauges
        src = (f"max_num_seqs {int(g.cap)} (from {g.cap_artifact})" if g.cap_from == "recorded"
               else f"the highest running count observed ({g.cap:,.0f}; cap not recorded)")
        parts.append(f"in {g.at_cap} of {g.seen} scrapes requests were waiting (up to "
                     f"{g.waiting_max:,.0f}, mean {g.waiting_mean:,.1f}) while "
                     f"{g.running_max:,.0f} ran — at the cap, {src}")
    if f.latency is not None:
        lt = f.latency
        parts.append(
            f"requests spent {pct(lt.queued)} of their server time queued "
            f"({fmt_s(lt.queue_mean_s)} mean queue per request, {lt.requests:,.0f} requests)"
            if lt.server_time else
            f"requests spent {pct(lt.queued)} of their end-to-end time queued (mean "
            f"queue {fmt_s(lt.queue_mean_s)} of {fmt_s(lt.e2e_mean_s)} per request, p99 queue "
            f"{lt.p99_queue or 'n/a'}, {lt.requests:,.0f} requests)")
    w = f.where
    return Phrasing(
        title=f"Requests queue for a batch slot in {w.engine}{model(w)}",
        observation=f"{w.engine} /metrics, {where(w)}: " + "; ".join(parts) + ".",
        effect="Lower TTFT and e2e latency by up to the queued share; throughput "
               "rises only if the GPU has headroom (check KV use and utilization).",
        details={"scrape_share_at_cap_waiting": f.gauge_share,
                 "queued_latency_share": f.latency_share})


DECLARATION = Declaration(
    patterns=(PATTERN,), detect=detect, phrase=phrase, causes=(),
    thresholds=("queue_min_firm_scrapes", "queue_waiting_red_share",
                "queue_waiting_yellow_share", "red_share", "yellow_share",
                "running_at_cap_ratio", "serving_min_requests"),
    fix_keys=(PATTERN,), about=About(side="workload"))

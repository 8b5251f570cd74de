"""kv-cache-pressure: the KV cache runs full (usage near 100%) or requests get preempted.

Preemptions are the harm (a preempted request loses its KV and recomputes its prefill): the
top cut when they reach preemption_red_rate per finished request. High usage without
preemptions is the warning sign (a mention). Swapped requests (vLLM V0) count as preempted.
"""

from __future__ import annotations

from msgspec import Struct

from crossview.core.claim import Claim, Count, CountF, Cutoff, Facts, FixPart, Pct, Phrasing, Ratio
from crossview.detectors.common import pct
from crossview.detectors.declare import About, Declaration
from crossview.detectors.serving_common import Scrapes, ev, model, scrapes, where
from crossview.views.views import Views

PATTERN = "kv-cache-pressure"


class KvUse(Struct, frozen=True, kw_only=True):
    max_pct: Pct
    mean_pct: Pct
    high_scrapes: Count
    scrapes: Count


class KvPressure(Facts, frozen=True, kw_only=True):
    where: Scrapes
    high_pct: Pct  # the usage cut
    kv: KvUse | None
    preemptions: CountF
    finished: CountF | None
    rate: Ratio | None  # preemptions per finished request
    swapped_max: CountF


def detect(v: Views) -> list[Claim]:
    out: list[Claim] = []
    lim = v.limits
    for s in v.gpu_metrics.serving:
        kv = s.gauges.get("kv_cache_usage")
        pre = s.counter("preemptions") or 0.0
        swapped = s.gauges.get("requests_swapped")
        fin = s.finished
        high = kv is not None and kv.max >= lim.kv_usage_high_pct
        if pre <= 0 and not high and not (swapped and swapped.max > 0):
            continue
        rate = pre / fin if fin else None
        red = pre > 0 and (rate is None or rate >= lim.preemption_red_rate)
        share = rate if rate is not None else (kv.mean / 100 if kv else 0.0)
        out.append(Claim(
            pattern=PATTERN, share=min(1.0, share), basis="requests",
            tier="top" if red else "consider",
            cutoff=(Cutoff("preemption_red_rate", lim.preemption_red_rate, rate or 0.0) if red
                    else Cutoff("kv_usage_high_pct", lim.kv_usage_high_pct,
                                kv.max if kv else 0.0)),
            rigor="L3", fix=(FixPart(key=PATTERN),),
            cites=ev(s, "kv_cache_usage", "preemptions", "requests_finished",
                     "requests_swapped"),
            facts=KvPressure(
                where=scrapes(s), high_pct=lim.kv_usage_high_pct,
                kv=KvUse(max_pct=kv.max, mean_pct=kv.mean, scrapes=len(kv.by_scrape),
                         high_scrapes=sum(1 for x in kv.by_scrape.values()
                                          if x >= lim.kv_usage_high_pct))
                if kv is not None else None,
                preemptions=pre, finished=fin, rate=rate,
                swapped_max=swapped.max if swapped else 0.0)))
    return out


def phrase(c: Claim) -> Phrasing:
    f = c.facts
    assert isinstance(f, KvPressure)
    parts: list[str] = []
    if f.kv is not None:
        parts.append(f"KV-cache use peaked at {f.kv.max_pct:.1f}% (mean {f.kv.mean_pct:.1f}%; at "
                     f"or above {f.high_pct:.0f}% in {f.kv.high_scrapes} of {f.kv.scrapes} "
                     "scrapes)")
    if f.preemptions > 0:
        per = (f", {pct(f.rate)} of {f.finished:,.0f} finished requests"
               if f.rate is not None and f.finished is not None else "")
        over = "in the window" if f.where.scrapes > 1 else "since the engine started"
        parts.append(f"{f.preemptions:,.0f} preemptions {over}{per}")
    if f.swapped_max > 0:
        parts.append(f"up to {f.swapped_max:,.0f} requests swapped out")
    w = f.where
    return Phrasing(
        title=f"KV cache under pressure in {w.engine}{model(w)}",
        observation=f"{w.engine} /metrics, {where(w)}: " + "; ".join(parts) + ".",
        effect="Fewer preemptions remove recomputed prefills from the tail "
               "(TTFT/e2e p99); more KV room also lets the batch grow.",
        details={"kv_usage_max_pct": f.kv.max_pct if f.kv else None,
                 "preemptions": f.preemptions, "preemptions_per_request": f.rate})


DECLARATION = Declaration(
    patterns=(PATTERN,), detect=detect, phrase=phrase, causes=(),
    thresholds=("kv_usage_high_pct", "preemption_red_rate"),
    fix_keys=(PATTERN,), about=About(side="workload"))

"""kv-cache-pressure: the KV cache runs full (usage near 100%) or requests get preempted.

Preemptions are the harm (a preempted request loses its KV and recomputes its prefill): red
when they reach preemption_red_rate per finished request. High usage without preemptions is the
warning sign (yellow). Swapped requests (vLLM V0) count as preempted.
"""

from __future__ import annotations

from crossview.core.finding import Finding
from crossview.detectors.common import pct
from crossview.detectors.declare import Declaration
from crossview.detectors.serving_common import ev, where
from crossview.knowledge.fixes import fix_for
from crossview.views.views import Views

PATTERN = "kv-cache-pressure"


def detect(v: Views) -> list[Finding]:
    out: list[Finding] = []
    lim = v.limits
    for s in v.gpu_metrics.serving:
        kv = s.gauges.get("kv_cache_usage")
        pre = s.counter("preemptions") or 0.0
        swapped = s.gauges.get("requests_swapped")
        fin = s.finished
        high = kv is not None and kv.max >= lim.kv_usage_high_pct
        if pre <= 0 and not high and not (swapped and swapped.max > 0):
            continue
        parts: list[str] = []
        if kv is not None:
            at_high = sum(1 for x in kv.by_scrape.values() if x >= lim.kv_usage_high_pct)
            parts.append(f"KV-cache use peaked at {kv.max:.1f}% (mean {kv.mean:.1f}%; at or "
                         f"above {lim.kv_usage_high_pct:.0f}% in {at_high} of "
                         f"{len(kv.by_scrape)} scrapes)")
        rate = pre / fin if fin else None
        if pre > 0:
            per = f", {pct(rate)} of {fin:,.0f} finished requests" if rate is not None else ""
            over = "in the window" if s.scrapes > 1 else "since the engine started"
            parts.append(f"{pre:,.0f} preemptions {over}{per}")
        if swapped and swapped.max > 0:
            parts.append(f"up to {swapped.max:,.0f} requests swapped out")
        red = pre > 0 and (rate is None or rate >= lim.preemption_red_rate)
        share = rate if rate is not None else (kv.mean / 100 if kv else 0.0)
        model = f" ({s.model})" if s.model else ""
        out.append(Finding(
            pattern=PATTERN, severity="red" if red else "yellow",
            title=f"KV cache under pressure in {s.engine}{model}",
            observation=f"{s.engine} /metrics, {where(s)}: " + "; ".join(parts) + ".",
            fix=fix_for(PATTERN, s.engine, ""), share=min(1.0, share),
            evidence=ev(s, "kv_cache_usage", "preemptions", "requests_finished",
                        "requests_swapped"),
            rigor="L3",
            expected_effect="Fewer preemptions remove recomputed prefills from the tail "
                            "(TTFT/e2e p99); more KV room also lets the batch grow.",
            details={"kv_usage_max_pct": kv.max if kv else None, "preemptions": pre,
                     "preemptions_per_request": rate},
        ))
    return out


DECLARATION = Declaration(
    patterns=(PATTERN,), detect=detect, causes=(),
    thresholds=("kv_usage_high_pct", "preemption_red_rate"),
    fix_keys=(PATTERN,))

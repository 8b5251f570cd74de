"""prefix-cache-miss: prompts rarely reuse cached prefixes (low hit rate over enough lookups).

Hit rate = cached ÷ queried prompt tokens (vLLM counters) or the engine's own rate gauge
(SGLang cache_hit_rate, vLLM V0). Always yellow at most: a low rate may be the workload (no
shared prefixes), which only the prompt layout can change. Prefix caching switched off while the
engine served requests is an info note.
"""

from __future__ import annotations

from crossview.core.finding import Finding
from crossview.detectors.declare import Declaration
from crossview.detectors.serving_common import ev, where
from crossview.knowledge.fixes import fix_for
from crossview.views.views import Views

PATTERN = "prefix-cache-miss"


def detect(v: Views) -> list[Finding]:
    out: list[Finding] = []
    lim = v.limits
    for s in v.gpu_metrics.serving:
        model = f" ({s.model})" if s.model else ""
        enabled = (s.info.get("cache_config") or {}).get("enable_prefix_caching")
        queries = s.counter("prefix_cache_queries")
        rate = s.prefix_hit_rate_pct
        served = (s.finished or 0) >= lim.serving_min_requests or (
            queries or 0) >= lim.prefix_min_query_tokens
        if enabled == "False" and served:
            out.append(Finding(
                pattern=PATTERN, severity="info",
                title=f"Prefix caching is off in {s.engine}{model}",
                observation=(f"vllm:cache_config_info reports enable_prefix_caching=False "
                             f"while the engine served requests ({where(s)})."),
                fix=fix_for(PATTERN, s.engine, ""), share=0.0,
                evidence=ev(s, "cache_config"), rigor="L3"))
            continue
        if rate is None or not served:
            continue
        if queries is not None and queries < lim.prefix_min_query_tokens:
            continue
        if rate >= lim.prefix_hit_low_pct:
            continue
        looked = f" of {queries:,.0f} queried prompt tokens" if queries is not None else ""
        out.append(Finding(
            pattern=PATTERN, severity="yellow",
            title=f"Low prefix-cache hit rate in {s.engine}{model}",
            observation=(f"{s.engine} /metrics, {where(s)}: prefix-cache hit rate "
                         f"{rate:.1f}%{looked} (under {lim.prefix_hit_low_pct:.0f}%): prompts "
                         "rarely reuse a cached prefix, so most prefill is recomputed."),
            fix=fix_for(PATTERN, s.engine, ""),
            share=(100.0 - rate) / 100.0 * lim.prefix_miss_share_weight,
            evidence=ev(s, "prefix_cache_queries", "prefix_cache_hits",
                        "prefix_cache_hit_rate"),
            rigor="L3",
            expected_effect="Each cached prompt token is prefill work (and TTFT) saved; the "
                            "gain is bounded by how much of the prompts is really shared.",
            details={"hit_rate_pct": rate, "queried_tokens": queries},
        ))
    return out


DECLARATION = Declaration(
    patterns=(PATTERN,), detect=detect, causes=(),
    thresholds=("prefix_hit_low_pct", "prefix_min_query_tokens", "prefix_miss_share_weight",
                "serving_min_requests"),
    fix_keys=(PATTERN,))

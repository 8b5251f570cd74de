"""prefix-cache-miss: prompts rarely reuse cached prefixes (low hit rate over enough lookups).

Hit rate = cached ÷ queried prompt tokens (vLLM counters) or the engine's own rate gauge
(SGLang cache_hit_rate, vLLM V0). A mention at most: a low rate may be the workload (no
shared prefixes), which only the prompt layout can change. Prefix caching switched off while the
engine served requests is a note.
"""

from __future__ import annotations

from crossview.core.claim import Claim, CountF, Cutoff, Facts, FixPart, Pct, Phrasing
from crossview.detectors.declare import About, Declaration
from crossview.detectors.serving_common import Scrapes, ev, model, scrapes, where
from crossview.views.views import Views

PATTERN = "prefix-cache-miss"


class PrefixCache(Facts, frozen=True, kw_only=True):
    where: Scrapes
    off: bool  # enable_prefix_caching=False while serving
    rate_pct: Pct | None = None
    queried: CountF | None = None
    low_pct: Pct = 0.0


def detect(v: Views) -> list[Claim]:
    out: list[Claim] = []
    lim = v.limits
    for s in v.gpu_metrics.serving:
        enabled = (s.info.get("cache_config") or {}).get("enable_prefix_caching")
        queries = s.counter("prefix_cache_queries")
        rate = s.prefix_hit_rate_pct
        served = (s.finished or 0) >= lim.serving_min_requests or (
            queries or 0) >= lim.prefix_min_query_tokens
        if enabled == "False" and served:
            out.append(Claim(pattern=PATTERN, form="off", share=0.0, tier="note", rigor="L3",
                             fix=(FixPart(key=PATTERN),), cites=ev(s, "cache_config"),
                             facts=PrefixCache(where=scrapes(s), off=True)))
            continue
        if rate is None or not served:
            continue
        if queries is not None and queries < lim.prefix_min_query_tokens:
            continue
        if rate >= lim.prefix_hit_low_pct:
            continue
        out.append(Claim(
            pattern=PATTERN, basis="requests",
            share=(100.0 - rate) / 100.0 * lim.prefix_miss_share_weight,
            tier="consider", cutoff=Cutoff("prefix_hit_low_pct", lim.prefix_hit_low_pct, rate),
            rigor="L3", fix=(FixPart(key=PATTERN),),
            cites=ev(s, "prefix_cache_queries", "prefix_cache_hits", "prefix_cache_hit_rate"),
            facts=PrefixCache(where=scrapes(s), off=False, rate_pct=rate, queried=queries,
                              low_pct=lim.prefix_hit_low_pct)))
    return out


def phrase(c: Claim) -> Phrasing:
    f = c.facts
    assert isinstance(f, PrefixCache)
    w = f.where
    if f.off:
        return Phrasing(title=f"Prefix caching is off in {w.engine}{model(w)}",
                        observation=(f"vllm:cache_config_info reports "
                                     f"enable_prefix_caching=False while the engine served "
                                     f"requests ({where(w)})."))
    looked = f" of {f.queried:,.0f} queried prompt tokens" if f.queried is not None else ""
    return Phrasing(
        title=f"Low prefix-cache hit rate in {w.engine}{model(w)}",
        observation=(f"{w.engine} /metrics, {where(w)}: prefix-cache hit rate "
                     f"{f.rate_pct or 0:.1f}%{looked} (under {f.low_pct:.0f}%): prompts "
                     "rarely reuse a cached prefix, so most prefill is recomputed."),
        effect="Each cached prompt token is prefill work (and TTFT) saved; the "
               "gain is bounded by how much of the prompts is really shared.",
        details={"hit_rate_pct": f.rate_pct, "queried_tokens": f.queried})


DECLARATION = Declaration(
    patterns=(PATTERN,), detect=detect, phrase=phrase, causes=(),
    thresholds=("prefix_hit_low_pct", "prefix_min_query_tokens", "prefix_miss_share_weight",
                "serving_min_requests"),
    fix_keys=(PATTERN,), about=About(side="workload"))

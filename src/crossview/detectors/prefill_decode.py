"""prefill-decode-interference: inter-token latency spikes when long prompts are prefilled
in the same steps as running decodes.

Read from the engine's ITL histogram (p99 ÷ p50) with its prompt-length histogram, and from
benchmark results (p99 ÷ median ITL, mean prompt length; with --save-detailed, the share of
token gaps above itl_spike_ratio × the median). At the top cut when the Context records
chunked prefill off; a mention otherwise (chunking on but a step budget too large still
interferes).
"""

from __future__ import annotations

from crossview.core.claim import (
    Cite,
    Claim,
    Count,
    CountF,
    Cutoff,
    Facts,
    FixPart,
    Ms,
    Phrasing,
    Ratio,
    Share,
    Tokens,
    TokensN,
)
from crossview.detectors.declare import About, Declaration
from crossview.detectors.serving_common import Scrapes, ev, fmt_s, model, scrapes, where
from crossview.views.views import Views

PATTERN = "prefill-decode-interference"


class EngineItl(Facts, frozen=True, kw_only=True):
    where: Scrapes
    p99: str  # the histogram bucket interval, as read
    p50: str
    ratio: Ratio  # lower bound of p99 ÷ median
    gaps: CountF
    prompt_tokens: Tokens


class BenchItl(Facts, frozen=True, kw_only=True):
    arm: str
    trials: Count
    p99_ms: Ms
    p50_ms: Ms
    ratio: Ratio
    isl: TokensN
    spike_share: Share | None
    spike_gaps: Count | None
    spike_ratio: Ratio
    max_ms: Ms | None
    chunked: str  # on | off | not recorded


def _chunked(ctx: dict[str, object]) -> str:
    val = ctx.get("enable_chunked_prefill")
    if val is True or val is False:
        return "on" if val else "off"
    return "not recorded"


def _from_engine(v: Views) -> list[Claim]:
    out: list[Claim] = []
    lim = v.limits
    for s in v.gpu_metrics.serving:
        itl = s.hist("itl")
        if (itl is None or itl.count < lim.serving_min_requests or not itl.p50
                or not itl.p99 or itl.p50.hi <= 0):
            continue
        # buckets give intervals: the ratio's lower bound (p99 ≥ lo, median ≤ hi) is what
        # the data shows for sure
        ratio = itl.p99.lo / itl.p50.hi
        plen = s.hist("prompt_len")
        isl = plen.mean if plen else None
        if isl is None and s.finished and (prompt_tokens := s.counter("prompt_tokens")):
            isl = prompt_tokens / s.finished
        if ratio < lim.itl_spike_ratio or isl is None or isl < lim.long_prompt_tokens:
            continue
        out.append(Claim(
            pattern=PATTERN, form="engine", share=lim.yellow_share, basis="requests",
            tier="consider",
            cutoff=Cutoff("itl_spike_ratio", lim.itl_spike_ratio, ratio), rigor="L3",
            fix=(FixPart(key=PATTERN),), cites=ev(s, "itl", "prompt_len", "prompt_tokens"),
            facts=EngineItl(where=scrapes(s), p99=itl.p99.text(fmt_s), p50=itl.p50.text(fmt_s),
                            ratio=ratio, gaps=itl.count, prompt_tokens=isl)))
    return out


def _from_bench(v: Views) -> list[Claim]:
    out: list[Claim] = []
    lim = v.limits
    for b in v.gpu_metrics.bench:
        p50, p99 = b.median("median_itl_ms"), b.median("p99_itl_ms")
        r = b.requests
        if (p50 is None or p99 is None) and r is not None:
            p50, p99 = r.itl_p50_ms, r.itl_p99_ms
        if not p50 or not p99:
            continue
        ratio = p99 / p50
        isl = b.context.get("isl")
        if not isinstance(isl, int | float) or isinstance(isl, bool):
            isl = b.context.get("isl_measured_mean")
        if not isinstance(isl, int | float) or isinstance(isl, bool):
            isl = r.isl_mean if r is not None else None
        if ratio < lim.itl_spike_ratio or isl is None or isl < lim.long_prompt_tokens:
            continue
        chunked = _chunked(b.context)
        spike = r.itl_spike_share if r is not None else None
        engine = str(b.context.get("engine") or "")
        out.append(Claim(
            pattern=PATTERN, form="bench", share=spike if spike else lim.yellow_share,
            basis="requests",
            tier="top" if chunked == "off" else "consider",
            cutoff=Cutoff("itl_spike_ratio", lim.itl_spike_ratio, ratio), rigor="L3",
            fix=(FixPart(key=PATTERN, known=(("engine", engine),) if engine else ()),),
            cites=(Cite(artifact=b.artifact, read="bench-itl", fill=(
                ("arm", b.arm), ("per_request", ", per-request itls" if r is not None
                                 else ""))),),
            facts=BenchItl(arm=b.arm, trials=b.trials, p99_ms=p99, p50_ms=p50, ratio=ratio,
                           isl=isl, spike_share=spike,
                           spike_gaps=r.itl_count if r is not None else None,
                           spike_ratio=lim.itl_spike_ratio,
                           max_ms=r.itl_max_ms if r is not None else None, chunked=chunked)))
    return out


def detect(v: Views) -> list[Claim]:
    return _from_engine(v) + _from_bench(v)


def phrase(c: Claim) -> Phrasing:
    f = c.facts
    if isinstance(f, EngineItl):
        w = f.where
        return Phrasing(
            title=f"ITL spikes with long prompts in {w.engine}{model(w)}",
            observation=(f"{w.engine} /metrics, {where(w)}: inter-token latency p99 "
                         f"{f.p99} is at least {f.ratio:.1f}× the median {f.p50} "
                         f"({f.gaps:,.0f} token gaps) with prompts of {f.prompt_tokens:,.0f} "
                         "tokens on average: decode steps stall behind prefills (histogram "
                         "estimate: bucket-width precision)."),
            effect="A flatter ITL tail (p99 toward the median) at a small TTFT cost "
                   "for long prompts.",
            details={"itl_p99_over_p50": f.ratio, "mean_prompt_tokens": f.prompt_tokens})
    assert isinstance(f, BenchItl)
    spikes = (f"; {100 * f.spike_share:.1f}% of {f.spike_gaps or 0:,} token gaps exceed "
              f"{f.spike_ratio:g}× the median (max {f.max_ms or 0:,.1f} ms)"
              if f.spike_share is not None else "")
    return Phrasing(
        title=f"ITL spikes with long prompts (benchmark arm {f.arm})",
        observation=(f"{f.trials} trial(s): ITL p99 {f.p99_ms:,.1f} ms is {f.ratio:.1f}× the "
                     f"median {f.p50_ms:,.1f} ms with prompts of {f.isl:,.0f} tokens"
                     f"{spikes}; chunked prefill {f.chunked}."),
        effect="A flatter ITL tail (p99 toward the median); verify with the same "
               "benchmark before/after (≥ 3 trials per arm).",
        details={"itl_p99_over_p50": f.ratio, "isl": f.isl, "chunked_prefill": f.chunked})


DECLARATION = Declaration(
    patterns=(PATTERN,), detect=detect, phrase=phrase, causes=(),
    thresholds=("itl_spike_ratio", "long_prompt_tokens", "serving_min_requests",
                "yellow_share"),
    fix_keys=(PATTERN,), about=About(side="workload"))

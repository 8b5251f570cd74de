"""prefill-decode-interference: inter-token latency spikes when long prompts are prefilled
in the same steps as running decodes.

Read from the engine's ITL histogram (p99 ÷ p50) with its prompt-length histogram, and from
benchmark results (p99 ÷ median ITL, mean prompt length; with --save-detailed, the share of
token gaps above itl_spike_ratio × the median). Red when the Context records chunked prefill
off; yellow otherwise (chunking on but a step budget too large still interferes).
"""

from __future__ import annotations

from crossview.core.finding import Evidence, Finding
from crossview.detectors.common import pct
from crossview.detectors.declare import Declaration
from crossview.detectors.serving_common import ev, fmt_s, where
from crossview.knowledge.fixes import fix_for
from crossview.views.views import Views

PATTERN = "prefill-decode-interference"


def _chunked(ctx: dict[str, object]) -> str:
    val = ctx.get("enable_chunked_prefill")
    if val is True or val is False:
        return "on" if val else "off"
    return "not recorded"


def _from_engine(v: Views) -> list[Finding]:
    out: list[Finding] = []
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
        model = f" ({s.model})" if s.model else ""
        out.append(Finding(
            pattern=PATTERN, severity="yellow",
            title=f"ITL spikes with long prompts in {s.engine}{model}",
            observation=(f"{s.engine} /metrics, {where(s)}: inter-token latency p99 "
                         f"{itl.p99.text(fmt_s)} is at least {ratio:.1f}× the median "
                         f"{itl.p50.text(fmt_s)} "
                         f"({itl.count:,.0f} token gaps) with prompts of {isl:,.0f} tokens on "
                         "average: decode steps stall behind prefills (histogram estimate: "
                         "bucket-width precision)."),
            fix=fix_for(PATTERN, s.engine, ""), share=lim.yellow_share,
            evidence=ev(s, "itl", "prompt_len", "prompt_tokens"), rigor="L3",
            expected_effect="A flatter ITL tail (p99 toward the median) at a small TTFT cost "
                            "for long prompts.",
            details={"itl_p99_over_p50": ratio, "mean_prompt_tokens": isl},
        ))
    return out


def _from_bench(v: Views) -> list[Finding]:
    out: list[Finding] = []
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
        spikes = ""
        if r is not None and r.itl_spike_share is not None:
            spikes = (f"; {pct(r.itl_spike_share)} of {r.itl_count:,} token gaps exceed "
                      f"{lim.itl_spike_ratio:g}× the median (max {r.itl_max_ms:,.1f} ms)")
        out.append(Finding(
            pattern=PATTERN, severity="red" if chunked == "off" else "yellow",
            title=f"ITL spikes with long prompts (benchmark arm {b.arm})",
            observation=(f"{b.trials} trial(s): ITL p99 {p99:,.1f} ms is {ratio:.1f}× the "
                         f"median {p50:,.1f} ms with prompts of {float(isl):,.0f} tokens"
                         f"{spikes}; chunked prefill {chunked}."),
            fix=fix_for(PATTERN, str(b.context.get("engine") or "default"), ""),
            share=r.itl_spike_share if r is not None and r.itl_spike_share else lim.yellow_share,
            evidence=[Evidence(b.artifact, f"benchmark trials ({b.arm}): median_itl_ms, "
                               "p99_itl_ms, input tokens" + (", per-request itls"
                                                             if r is not None else ""))],
            rigor="L3",
            expected_effect="A flatter ITL tail (p99 toward the median); verify with the same "
                            "benchmark before/after (≥ 3 trials per arm).",
            details={"itl_p99_over_p50": ratio, "isl": isl, "chunked_prefill": chunked},
        ))
    return out


def detect(v: Views) -> list[Finding]:
    return _from_engine(v) + _from_bench(v)


DECLARATION = Declaration(
    patterns=(PATTERN,), detect=detect, causes=(),
    thresholds=("itl_spike_ratio", "long_prompt_tokens", "serving_min_requests",
                "yellow_share"),
    fix_keys=(PATTERN,))

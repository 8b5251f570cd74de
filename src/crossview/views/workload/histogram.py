"""Quantiles from Prometheus histogram buckets (cumulative counts per upper bound `le`),
reported only as precisely as the buckets allow (issue 17).

A quantile is the interval of the bucket holding rank q·N: (previous bound, this bound]; the
first bucket starts at 0 (latencies, lengths and counts are ≥ 0). Interpolating inside the
bucket (PromQL's histogram_quantile) invents precision the data does not have — a 0–300 ms
bucket gave a "p50 of 151 ms" next to a mean of 30.9 ms. The interval is then clipped by what
sum and count imply: at least (1 − q)·N observations are ≥ the q-quantile, each ≥ 0, so
quantile ≤ sum ÷ ((1 − q)·N) = mean ÷ (1 − q) (Markov). A rank in the +Inf bucket has no
upper bucket bound: only that clip bounds it.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import asdict, dataclass

QUANTILES = (0.5, 0.9, 0.99)


@dataclass(frozen=True)
class Quantile:
    q: float
    lo: float  # the bucket's lower bound
    hi: float  # the bucket's upper bound, or the sum/count clip when tighter
    bucket: tuple[float, float | None]  # the bucket (lower, upper; None = +Inf)
    clipped: bool  # hi comes from mean ÷ (1 − q), not from the bucket

    def text(self, fmt: Callable[[float], str]) -> str:
        how = " (clipped by mean ÷ (1 − q))" if self.clipped else ""
        if self.lo <= 0:
            return f"≤ {fmt(self.hi)}{how}"
        return f"{fmt(self.lo)}–{fmt(self.hi)}{how}"

    def to_dict(self) -> dict[str, object]:
        return {"q": self.q, "lo": self.lo, "hi": self.hi, "bucket": list(self.bucket),
                "clipped_by_mean": self.clipped}


@dataclass
class HistStat:
    metric: str
    unit: str
    count: float  # observations in the window (or since start)
    sum: float
    p50: Quantile | None
    p90: Quantile | None
    p99: Quantile | None
    over: str  # "window" (delta of two scrapes) | "since start" (one cumulative scrape)
    raw_name: str

    @property
    def mean(self) -> float | None:
        return self.sum / self.count if self.count else None

    def to_dict(self) -> dict[str, object]:
        d = asdict(self)
        for k in ("p50", "p90", "p99"):
            q = getattr(self, k)
            d[k] = q.to_dict() if q else None
        d["mean"] = self.mean
        return d


def quantile(buckets: list[tuple[float, float]], q: float, total_sum: float | None = None,
             count: float | None = None) -> Quantile | None:
    """buckets: (upper bound, cumulative count), any order; None when empty."""
    bs = sorted(buckets)
    if not bs or max(c for _, c in bs) <= 0:
        return None
    total = max(c for _, c in bs)
    rank = q * total
    prev_le, prev_c = 0.0, 0.0
    lo, hi = 0.0, math.inf
    for le, c in bs:
        if c >= rank and c > prev_c:
            lo, hi = (prev_le if prev_le < le else 0.0), le
            break
        prev_le, prev_c = le, c
    else:  # every finite bucket below the rank and no +Inf bucket listed
        lo, hi = prev_le, math.inf
    bucket = (lo, None if math.isinf(hi) else hi)
    n = count if count else total
    clip = (total_sum / ((1 - q) * n) if total_sum is not None and n and q < 1
            and total_sum >= 0 else math.inf)
    clipped = clip < hi
    hi = max(min(hi, clip), lo)
    if math.isinf(hi):
        return None  # +Inf bucket and no sum: no bound at all
    return Quantile(q, lo, hi, bucket, clipped)


def stat(metric: str, unit: str, buckets: list[tuple[float, float]], count: float, total: float,
         over: str, raw_name: str) -> HistStat:
    qs = [quantile(buckets, q, total, count) for q in QUANTILES]
    return HistStat(metric, unit, count, total, qs[0], qs[1], qs[2], over, raw_name)

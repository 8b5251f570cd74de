"""Quantiles from Prometheus histogram buckets (cumulative counts per upper bound `le`).

Same estimate as PromQL's histogram_quantile: find the bucket holding rank q·N and interpolate
linearly inside it (the first bucket starts at 0 when its bound is positive); a rank in the
+Inf bucket returns the largest finite bound. An estimate: its error is the bucket width.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

QUANTILES = (0.5, 0.9, 0.99)


@dataclass
class HistStat:
    metric: str
    unit: str
    count: float  # observations in the window (or since start)
    sum: float
    p50: float | None
    p90: float | None
    p99: float | None
    over: str  # "window" (delta of two scrapes) | "since start" (one cumulative scrape)
    raw_name: str

    @property
    def mean(self) -> float | None:
        return self.sum / self.count if self.count else None

    def to_dict(self) -> dict[str, object]:
        d = asdict(self)
        d["mean"] = self.mean
        return d


def quantile(buckets: list[tuple[float, float]], q: float) -> float | None:
    """buckets: (upper bound, cumulative count), any order; None when empty."""
    bs = sorted(buckets)
    if not bs or bs[-1][1] <= 0:
        return None
    total = bs[-1][1]
    if not math.isinf(bs[-1][0]):
        total = max(c for _, c in bs)
    rank = q * total
    prev_le, prev_c = 0.0, 0.0
    for le, c in bs:
        if c >= rank:
            if math.isinf(le):
                return prev_le  # in the +Inf bucket: the largest finite bound
            if le <= 0 or c == prev_c:
                return le
            lo = prev_le if prev_le < le else 0.0
            return lo + (le - lo) * (rank - prev_c) / (c - prev_c)
        prev_le, prev_c = le, c
    return bs[-1][0] if not math.isinf(bs[-1][0]) else prev_le


def stat(metric: str, unit: str, buckets: list[tuple[float, float]], count: float, total: float,
         over: str, raw_name: str) -> HistStat:
    qs = [quantile(buckets, q) for q in QUANTILES]
    return HistStat(metric, unit, count, total, qs[0], qs[1], qs[2], over, raw_name)

"""A/B statistics on small samples of benchmark trials (pure, no I/O).

- medians and their spread (max |x - median| ÷ median, benchstat's "±"),
- a bootstrap percentile CI on the ratio variant median ÷ baseline median (seeded),
- an exact permutation test of the rank sum (= exact Mann-Whitney): every split of the pooled
  trials when there are at most `_EXACT_MAX` of them (3 vs 3: C(6,3) = 20), else a seeded Monte
  Carlo sample. Why: it assumes only exchangeability under "no change" (no normality, which 3
  trials cannot show) and its p is exact, so P(p ≤ α) ≤ α at any n. With 3 vs 3 the smallest
  two-sided p is 2/20 = 0.10 (complete separation), hence the default α of 0.10. (A difference
  of medians was tried as the statistic: with 3 vs 3 it ties across splits, min p = 0.2.)
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np

_EXACT_MAX = 20_000  # enumerate every split up to this many (C(16,8) = 12,870)
_MC_PERMUTATIONS = 10_000
_SEED = 20260714  # fixed: the same inputs always give the same CI and p
_REL_TOL = 1e-9  # |diff| ties (float noise) count as "at least as extreme"


@dataclass(frozen=True)
class Comparison:
    base_median: float
    var_median: float
    base_spread_pct: float
    var_spread_pct: float
    delta_pct: float  # (variant ÷ baseline − 1) × 100
    ratio: float
    ci: tuple[float, float]  # on the ratio variant ÷ baseline
    p: float
    separated: bool  # every baseline trial on one side of every variant trial
    permutations: int
    exact: bool


def spread_pct(xs: np.ndarray, med: float) -> float:
    return float(np.max(np.abs(xs - med)) / abs(med) * 100) if med else math.nan


def bootstrap_ratio_ci(a: np.ndarray, b: np.ndarray, level: float, resamples: int,
                       seed: int = _SEED) -> tuple[float, float]:
    """Percentile bootstrap CI of median(b) ÷ median(a), each arm resampled on its own."""
    rng = np.random.default_rng(seed)
    ma = np.median(rng.choice(a, size=(resamples, a.size), replace=True), axis=1)
    mb = np.median(rng.choice(b, size=(resamples, b.size), replace=True), axis=1)
    ratios = mb / ma
    lo, hi = np.quantile(ratios, [(1 - level) / 2, (1 + level) / 2], method="inverted_cdf")
    return float(lo), float(hi)


def permutation_p(a: np.ndarray, b: np.ndarray, seed: int = _SEED) -> tuple[float, int, bool]:
    """Two-sided p of the rank-sum statistic over the splits of the pooled trials (the exact
    Mann-Whitney test, ties by midranks); returns (p, permutations, exact)."""
    pooled = np.concatenate([a, b])
    n, na = pooled.size, a.size
    ranks = _midranks(pooled)
    centre = na * (n + 1) / 2  # expected rank sum of `a` under "no change"
    obs = abs(float(ranks[:na].sum()) - centre)
    total = math.comb(n, na)
    if total <= _EXACT_MAX:
        idx = np.array(list(itertools.combinations(range(n), na)))
        sums = ranks[idx].sum(axis=1)
        hits = int(np.sum(np.abs(sums - centre) >= obs - _REL_TOL * n * n))
        return hits / total, total, True
    rng = np.random.default_rng(seed)
    perms = np.argsort(rng.random((_MC_PERMUTATIONS, n)), axis=1)[:, :na]
    sums = ranks[perms].sum(axis=1)
    hits = int(np.sum(np.abs(sums - centre) >= obs - _REL_TOL * n * n))
    # Monte Carlo: count the observed split too, so p is never 0 (Phipson & Smyth 2010)
    return (hits + 1) / (_MC_PERMUTATIONS + 1), _MC_PERMUTATIONS, False


def _midranks(x: np.ndarray) -> np.ndarray:
    order = np.argsort(x, kind="stable")
    ranks = np.empty(x.size)
    ranks[order] = np.arange(1, x.size + 1)
    for v in np.unique(x):  # ties share their mean rank
        same = x == v
        ranks[same] = ranks[same].mean()
    return ranks


def compare(a: list[float], b: list[float], level: float, resamples: int) -> Comparison:
    """Baseline trials a, variant trials b (finite values, both non-empty, median(a) ≠ 0)."""
    xa, xb = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    ma, mb = float(np.median(xa)), float(np.median(xb))
    p, perms, exact = permutation_p(xa, xb)
    separated = bool(xa.max() < xb.min() or xb.max() < xa.min())
    return Comparison(
        base_median=ma, var_median=mb, base_spread_pct=spread_pct(xa, ma),
        var_spread_pct=spread_pct(xb, mb), delta_pct=(mb / ma - 1) * 100, ratio=mb / ma,
        ci=bootstrap_ratio_ci(xa, xb, level, resamples), p=p, separated=separated,
        permutations=perms, exact=exact)

"""host_state._paint (innermost op per segment) against a per-segment brute force: nested
ops (disjoint at each depth: the run-writing path) and ops overlapping at one depth (the
bincount path, where a segment covered twice at a depth keeps the outer op)."""

from __future__ import annotations

import numpy as np

from crossview import intervals
from crossview.views.device.host_state import _paint


def _brute(bounds: np.ndarray, s: np.ndarray, e: np.ndarray, depth: np.ndarray,
           value: np.ndarray) -> np.ndarray:
    out = np.full(len(bounds) - 1, -1, dtype=np.int64)
    for i in range(len(bounds) - 1):
        lo, hi = bounds[i], bounds[i + 1]
        for d in sorted(set(depth.tolist())):
            cover = [k for k in range(len(s)) if depth[k] == d and e[k] > s[k]
                     and s[k] <= lo and e[k] >= hi]
            if len(cover) == 1:
                out[i] = value[cover[0]]
    return out


def _nested(rng: np.random.Generator, n: int) -> tuple[np.ndarray, ...]:
    """A tree of ops: each child lies inside its parent, siblings disjoint."""
    s, e, d = [0], [1000], [0]
    for _ in range(n):
        p = int(rng.integers(len(s)))
        a = int(rng.integers(s[p], e[p] + 1))
        b = int(rng.integers(a, e[p] + 1))
        kids = [k for k in range(len(s)) if d[k] == d[p] + 1 and s[k] < b and a < e[k]
                and s[p] <= s[k] and e[k] <= e[p]]
        if kids:  # keep siblings disjoint
            continue
        s.append(a), e.append(b), d.append(d[p] + 1)
    return (np.array(s, dtype=np.int64), np.array(e, dtype=np.int64),
            np.array(d, dtype=np.int64))


def test_paint_matches_brute_force_on_nested_and_overlapping_ops() -> None:
    rng = np.random.default_rng(7)
    for trial in range(40):
        s, e, d = _nested(rng, 25)
        if trial % 2:  # add ops that overlap others at their depth (and zero-length ones)
            extra = rng.integers(0, 1000, size=(6, 2))
            s = np.r_[s, extra.min(axis=1)]
            e = np.r_[e, extra.max(axis=1)]
            d = np.r_[d, rng.integers(0, 3, size=6)]
        value = np.arange(len(s), dtype=np.int64)
        bounds = intervals.uniq(np.concatenate([s, e]))
        got = _paint(bounds, s, e, d, value)
        assert np.array_equal(got, _brute(bounds, s, e, d, value)), trial

"""The idle pieces' host state painted on the gap cuts alone (views/device/idle_pieces.py,
host_state.paint) against the full segmentation of every op boundary it replaced: random
nested and overlapping ops on two threads, random idle gaps (some ops running past the
last gap, some before the first); every piece takes the state the full segmentation has at
its start, and the pieces tile the gaps exactly."""

from __future__ import annotations

import numpy as np

from crossview import intervals
from crossview.views.device import idle_pieces
from crossview.views.device.host_state import HostOps, _paint, paint


def _full(h: HostOps, t: np.ndarray) -> tuple[np.ndarray, ...]:
    """The state at instants t from the segmentation of every op bound (the old way)."""
    bounds = intervals.uniq(np.concatenate([h.s, h.e]))
    n = len(bounds) - 1
    rank = np.full(n, h.none, dtype=np.int64)
    frame = np.full(n, -1, dtype=np.int64)
    call = np.full(n, -1, dtype=np.int64)
    for th in intervals.uniq(h.th):
        idx = np.nonzero(h.th == th)[0]
        inner = _paint(bounds, h.s[idx], h.e[idx], h.depth[idx], idx)
        has = inner >= 0
        rk = np.where(has, h.eff[np.maximum(inner, 0)], h.none)
        better = rk < rank
        rank = np.where(better, rk, rank)
        frame = np.where(better, h.frame[np.maximum(inner, 0)], frame)
        call = np.where(better, h.call[np.maximum(inner, 0)], call)
    i = np.searchsorted(bounds, t, side="right") - 1
    ok = (i >= 0) & (i < n)
    at = np.maximum(np.minimum(i, n - 1), 0)
    return (np.where(ok, rank[at], h.none), np.where(ok, frame[at], -1),
            np.where(ok, call[at], -1))


def _ops(rng: np.random.Generator, n: int) -> HostOps:
    s = np.sort(rng.integers(0, 2000, n))
    ln = rng.integers(0, 120, n)
    depth = rng.integers(0, 4, n)
    # an outer op per thread, a few ops reaching past every gap, one ending before it starts
    s = np.r_[s, 0, 5, 1500, 900]
    e = np.r_[s[:n] + ln, 2600, 2400, 3000, 850]
    depth = np.r_[depth, 0, 0, 1, 2]
    th = rng.integers(1, 3, len(s))
    k = len(s)
    return HostOps(np.arange(k, dtype=np.int64), True, s.astype(np.int64), e.astype(np.int64),
                   depth.astype(np.int64),
                   th.astype(np.int64), rng.integers(0, 6, k).astype(np.int32),
                   rng.integers(0, 9, k).astype(np.int32),
                   rng.integers(-1, 9, k).astype(np.int32), [f"f{i}" for i in range(9)], 6)


def test_state_on_gap_cuts_matches_the_full_segmentation() -> None:
    rng = np.random.default_rng(11)
    for trial in range(60):
        h = _ops(rng, 40)
        ks = np.sort(rng.integers(100, 2200, 30))
        us, ue = intervals.merge(ks, ks + rng.integers(1, 90, 30))
        gs, ge = idle_pieces._complement(us, ue, 50, 2300)
        inner = np.concatenate([idle_pieces._inside(gs, ge, x) for x in (h.s, h.e)])
        cuts, at, gi = idle_pieces._cuts(gs, ge, inner)
        ps, pe = cuts[at], cuts[at + 1]
        # the pieces tile the gaps: same total, each inside its gap, no bound inside a piece
        assert int((pe - ps).sum()) == int((ge - gs).sum()), trial
        assert ((ps >= gs[gi]) & (pe <= ge[gi]) & (pe > ps)).all(), trial
        b = np.concatenate([h.s, h.e])
        assert not ((b[:, None] > ps) & (b[:, None] < pe)).any(), trial
        st = paint(h, cuts)
        rank, frame, call = _full(h, ps)
        assert np.array_equal(st.rank[at], rank), trial
        assert np.array_equal(st.frame[at], frame), trial
        assert np.array_equal(st.calling[at], call), trial
        # in runs of 3 gaps, with only the ops near each run: the same pieces and states
        got = []
        for g0 in range(0, len(gs), 3):
            g, e = gs[g0:g0 + 3], ge[g0:g0 + 3]
            near = h.near(int(g[0]), int(e[-1]))
            c, a, _ = idle_pieces._cuts(g, e, np.concatenate(
                [idle_pieces._inside(g, e, x) for x in (near.s, near.e)]))
            got.append(np.c_[c[a], paint(near, c).rank[a]])
        assert np.array_equal(np.concatenate(got), np.c_[ps, rank]), trial

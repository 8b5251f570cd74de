"""What the kernel-launching host thread(s) were doing at each instant, as an idle cause.

Every host op on the launching threads gets a cause rank from the precedence table
(knowledge/account.yaml, `causes.classify`); a child inherits its ancestor's cause when that
ranks higher (a copy inside `DataLoader.__next__` is data loading). The timeline is cut into
elementary segments at every op boundary; each segment takes the innermost op running then
(painted depth by depth), and, across several launching threads, the highest-ranked cause.
Pure numpy over integer columns; names stay in a small lookup list.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from crossview.knowledge import causes
from crossview.store.store import Store
from crossview.views.device import timeline

I64 = npt.NDArray[np.int64]


@dataclass
class HostTimeline:
    """Segments [bounds[i], bounds[i+1]) with the cause rank and the op that names it."""

    bounds: I64
    rank: I64  # per segment; NONE (= number of causes) when no op runs
    frame: I64  # per segment: index into `names` of the frame the cause names, -1 none
    calling: I64  # per segment: index into `names` of the nearest python frame above, -1
    names: list[str]
    none: int

    def segment_of(self, t: I64) -> I64:
        """Segment index holding each instant (-1 outside the timeline)."""
        i = np.searchsorted(self.bounds, t, side="right") - 1
        return np.where((i >= 0) & (i < len(self.rank)), i, -1)


def _paint(bounds: I64, s: I64, e: I64, depth: I64, value: I64) -> I64:
    """Innermost op index per segment: paint ops depth by depth (ops at one depth of one
    thread are disjoint; where they are not, the segment keeps the outer op)."""
    n = len(bounds) - 1
    out = np.full(n, -1, dtype=np.int64)
    a = np.searchsorted(bounds, s)
    b = np.searchsorted(bounds, e)
    for d in timeline.uniq(depth):
        sel = (depth == d) & (b > a)
        if not sel.any():
            continue
        sa, sb, sv = a[sel], b[sel], value[sel] + 1
        o = np.argsort(sa, kind="stable")
        if (sa[o][1:] >= sb[o][:-1]).all():  # disjoint (the usual case): write each op's run
            ln = sb - sa
            at = np.arange(int(ln.sum()), dtype=np.int64) + np.repeat(sa - (np.cumsum(ln) - ln),
                                                                      ln)
            out[at] = np.repeat(sv - 1, ln)
            continue
        # overlapping ops at this depth: only the segments they span; counts and values by
        # bincount (exact: integer sums far below 2**53), then running sums
        lo, hi = int(sa.min()), int(sb.max())
        m = hi - lo + 1
        cnt = np.bincount(sa - lo, minlength=m) - np.bincount(sb - lo, minlength=m)
        val = (np.bincount(sa - lo, weights=sv, minlength=m)
               - np.bincount(sb - lo, weights=sv, minlength=m)).astype(np.int64)
        v, c = np.cumsum(val)[:-1], np.cumsum(cnt)[:-1]
        part = out[lo:hi]
        out[lo:hi] = np.where(c == 1, v - 1, part)
    return out


def build(store: Store, artifact_id: int, device: int) -> HostTimeline:
    rules = causes.rules()
    none = len(rules.causes)
    # one row per op on the launching threads; threads and (name, kind) pairs as dense
    # integer ids numbered over the few distinct values and joined back (a window over the
    # op rows sorts ~1 M strings: seconds), then sorted by op id in numpy
    p = {"a": artifact_id, "d": device}
    store.sql(
        "CREATE OR REPLACE TEMP TABLE _hs_th AS SELECT pid, tid,"
        " row_number() OVER (ORDER BY pid, tid) AS th FROM (SELECT DISTINCT h.pid, h.tid"
        " FROM f_gpu g JOIN host_ops h ON h.op_id = g.launch_op_id"
        " AND h.artifact_id = g.artifact_id WHERE g.artifact_id = $a AND g.device = $d)", p)
    try:
        store.sql(
            "CREATE OR REPLACE TEMP TABLE _hs_nk AS SELECT name, kind,"
            " row_number() OVER (ORDER BY name, kind) - 1 AS nk FROM (SELECT DISTINCT"
            " f.name, f.kind FROM f_host f JOIN _hs_th t ON f.pid IS NOT DISTINCT FROM t.pid"
            " AND f.tid IS NOT DISTINCT FROM t.tid WHERE f.artifact_id = $a)", {"a": artifact_id})
        r = store.sql(
            "SELECT f.op_id, coalesce(f.parent, -1) AS parent, f.depth, f.start_ns,"
            " f.start_ns + f.dur_ns AS e, t.th, l.nk FROM f_host f"
            " JOIN _hs_th t ON f.pid IS NOT DISTINCT FROM t.pid"
            " AND f.tid IS NOT DISTINCT FROM t.tid"
            " JOIN _hs_nk l ON f.name IS NOT DISTINCT FROM l.name"
            " AND f.kind IS NOT DISTINCT FROM l.kind WHERE f.artifact_id = $a",
            {"a": artifact_id}).fetchnumpy()
        pairs = store.sql("SELECT nk, name, kind FROM _hs_nk ORDER BY nk").fetchall()
    finally:
        store.sql("DROP TABLE IF EXISTS _hs_th")
        store.sql("DROP TABLE IF EXISTS _hs_nk")
    o = np.argsort(np.asarray(r["op_id"], dtype=np.int64), kind="stable")
    r = {k: np.asarray(v)[o] for k, v in r.items()}
    n = len(r["op_id"])
    if n == 0:
        e0 = np.zeros(0, dtype=np.int64)
        return HostTimeline(np.zeros(1, dtype=np.int64), e0, e0, e0, [], none)
    op = np.asarray(r["op_id"], dtype=np.int64)
    parent = np.asarray(r["parent"], dtype=np.int64)
    depth = np.asarray(r["depth"], dtype=np.int64)
    s = np.asarray(r["start_ns"], dtype=np.int64)
    e = np.asarray(r["e"], dtype=np.int64)
    name_ix = np.asarray(r["nk"], dtype=np.int64)
    names = [str(nm) for _, nm, _ in pairs]
    rank_of = np.array([causes.classify(str(nm), str(k)) for _, nm, k in pairs], dtype=np.int64)
    py_of = np.array([k == "python" for _, _, k in pairs], dtype=bool)
    own = rank_of[name_ix]
    is_py = py_of[name_ix]
    pidx = np.searchsorted(op, parent)
    pidx = np.where((parent >= 0) & (pidx < n) & (op[np.minimum(pidx, n - 1)] == parent),
                    pidx, -1)
    # inherit down the chain, level by level: effective rank, the op that names it, and
    # the nearest python frame above (the calling frame of an API call)
    eff = own.copy()
    src = np.arange(n, dtype=np.int64)
    call = np.where(is_py, name_ix, -1)
    mode = np.array([c.frames for c in rules.causes] + ["none"], dtype=object)
    for d in timeline.uniq(depth):
        idx = np.nonzero((depth == d) & (pidx >= 0))[0]
        if len(idx) == 0:
            continue
        up = pidx[idx]
        take = eff[up] < eff[idx]  # the ancestor's cause ranks higher
        eff[idx] = np.where(take, eff[up], eff[idx])
        src[idx] = np.where(take, src[up], src[idx])
        call[idx] = np.where(is_py[idx], name_ix[idx], call[up])
    # the frame a cause names: the matching op (matched), the innermost op (innermost), or
    # the python frame that called it (calling; the op itself when none is recorded)
    m = mode[np.minimum(eff, none)]
    frame = np.where(m == "innermost", name_ix, name_ix[src])
    frame = np.where((m == "calling") & (call >= 0), call, frame)
    # one segmentation for all launching threads; highest-ranked cause across threads
    bounds = timeline.uniq(np.concatenate([s, e]))
    seg_rank = np.full(len(bounds) - 1, none, dtype=np.int64)
    seg_frame = np.full(len(bounds) - 1, -1, dtype=np.int64)
    seg_call = np.full(len(bounds) - 1, -1, dtype=np.int64)
    th = np.asarray(r["th"], dtype=np.int64)
    for t in timeline.uniq(th):
        sel = th == t
        idx = np.nonzero(sel)[0]
        inner = _paint(bounds, s[sel], e[sel], depth[sel], idx)
        has = inner >= 0
        rk = np.where(has, eff[np.maximum(inner, 0)], none)
        better = rk < seg_rank
        seg_rank = np.where(better, rk, seg_rank)
        seg_frame = np.where(better, frame[np.maximum(inner, 0)], seg_frame)
        seg_call = np.where(better, call[np.maximum(inner, 0)], seg_call)
    return HostTimeline(bounds, seg_rank, seg_frame, seg_call, names, none)

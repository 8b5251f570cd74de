"""What the kernel-launching host thread(s) were doing at each instant, as an idle cause.

Every host op on the launching threads gets a cause rank from the precedence table
(knowledge/account.yaml, `causes.classify`); a child inherits its ancestor's cause when that
ranks higher (a copy inside `DataLoader.__next__` is data loading). `ops` reads the ops and
their inherited causes once; `paint` evaluates them on a caller's segmentation (the idle
pieces of a device: views/device/idle_pieces.py), so only the instants the account needs are
painted, never a segmentation of every op boundary. Each segment takes the innermost op
running then (painted depth by depth), and, across several launching threads, the
highest-ranked cause. Pure numpy over integer columns; names stay in a small lookup list.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from crossview import intervals
from crossview.knowledge import causes
from crossview.store.store import Store

I64 = npt.NDArray[np.int64]
I32 = npt.NDArray[np.int32]


@dataclass
class HostOps:
    """The ops of the launching threads (sorted by op id) with their inherited cause."""

    op: I64  # op id (sorted)
    complete: bool  # the scope holds every host op of the artifact (no host filter)
    s: I64
    e: I64
    depth: I32
    th: I32  # dense thread number (threads in (pid, tid) order)
    eff: I32  # cause rank the op stands for (own or inherited); `none` for no cause
    frame: I32  # index into `names` of the frame the cause names
    call: I32  # index into `names` of the nearest python frame above (-1 none)
    names: list[str]
    none: int  # = number of causes: no host op running

    def near(self, t0: int, t1: int) -> HostOps:
        """The ops running at some instant of [t0, t1) (all that can paint a cut there), and
        any op ending before it starts (a bound of its inside [t0, t1) still cuts)."""
        return self.take(np.nonzero(((self.s < t1) & (self.e > t0)) | (self.e < self.s))[0])

    def take(self, m: I64) -> HostOps:
        """The ops at indices m (sorted), or self when m holds every op."""
        if len(m) == len(self.s):
            return self
        return HostOps(self.op[m], self.complete, self.s[m], self.e[m], self.depth[m],
                       self.th[m], self.eff[m], self.frame[m], self.call[m], self.names,
                       self.none)

    def touching(self, gs: I64, ge: I64, i: I64) -> npt.NDArray[np.bool_]:
        """Which ops reach into a gap of the sorted disjoint gaps [gs, ge) (i: per op, the
        first gap ending after its start): every op with a bound strictly inside a gap and
        every op covering part of one, the only ops that cut or paint an idle piece (an op in
        busy time only does neither); also ops ending before they start, as `near` keeps."""
        if len(gs) == 0:
            return self.e < self.s
        hit = (i < len(gs)) & (gs[np.minimum(i, len(gs) - 1)] < np.maximum(self.s, self.e))
        return hit | (self.e < self.s)


@dataclass
class HostState:
    """Per segment of a caller's cuts: the cause rank (`none` when no op runs), the frame it
    names and the calling python frame (indices into `names`, -1 none)."""

    rank: I32
    frame: I32
    calling: I32
    names: list[str]
    none: int


def _paint_idx(n: int, a: I64, b: I64, depth: npt.NDArray[np.integer], value: I64) -> I64:
    """Innermost op value per segment 0..n-1, each op covering segments [a, b): paint ops
    depth by depth (ops at one depth of one thread are disjoint; where they are not, the
    segment keeps the outer op)."""
    out = np.full(n, -1, dtype=np.int64)
    for sa, sb, sv in _by_depth(a, b, depth, value):
        if intervals.is_sorted(sa):  # in start order already (ops by op id): no sort
            disjoint = bool((sa[1:] >= sb[:-1]).all())
        else:
            o = np.argsort(sa, kind="stable")
            disjoint = bool((sa[o][1:] >= sb[o][:-1]).all())
        if disjoint:  # the usual case: write each op's run
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


def _by_depth(a: I64, b: I64, depth: npt.NDArray[np.integer], value: I64
              ) -> Iterator[tuple[I64, I64, I64]]:
    """Per depth, outermost first, its ops spanning a segment (a, b, value + 1) in their
    given order: one stable sort by depth, not a mask of every op per depth (Kineto 334 MB:
    6 depths; nsys: one depth, no copy)."""
    span = b > a
    if not span.all():
        a, b, depth, value = a[span], b[span], depth[span], value[span]
    if len(a) == 0:
        return
    if (depth[0] == depth).all():
        yield a, b, value + 1
        return
    o = np.argsort(depth, kind="stable")
    a, b, value, depth = a[o], b[o], value[o] + 1, depth[o]
    cut = np.r_[0, np.nonzero(depth[1:] != depth[:-1])[0] + 1, len(depth)]
    for lo, hi in zip(cut[:-1], cut[1:], strict=True):
        yield a[lo:hi], b[lo:hi], value[lo:hi]


def _paint(bounds: I64, s: I64, e: I64, depth: I64, value: I64) -> I64:
    """Innermost op index per segment [bounds[i], bounds[i+1])."""
    return _paint_idx(len(bounds) - 1, np.searchsorted(bounds, s), np.searchsorted(bounds, e),
                      depth, value)


def ops(store: Store, artifact_id: int, device: int, launch_op: I64 | None = None) -> HostOps:
    """launch_op: the device's kernels' launch op ids (-1 none), when the caller has read
    them: the launching threads are then found among the ops read here (no join of the
    kernels to host_ops) where the scope holds every host op of the artifact."""
    complete = bool(store.sql(
        "SELECT (SELECT count(*) FROM f_host WHERE artifact_id = $a)"
        " = (SELECT count(*) FROM host_ops WHERE artifact_id = $a)",
        {"a": artifact_id}).fetchall()[0][0])
    rows = _by_node(store, artifact_id, launch_op) if complete and launch_op is not None \
        else None
    return _ops(*(rows or _joined(store, artifact_id, device)), complete,
                _returned_early(store, artifact_id, device),
                _first_loads(store, artifact_id, device))


# copy calls that returned before their copy on this device ended: they queued it and went
# on (a cudaMemcpyAsync from pinned or device memory), so the host did not block in them
_RETURNED_EARLY = """
SELECT DISTINCT g.launch_op_id FROM f_gpu g JOIN host_ops h ON h.op_id = g.launch_op_id
 AND h.artifact_id = g.artifact_id
WHERE g.artifact_id = $a AND g.device = $d AND g.kind IN ('memcpy', 'memset')
  AND h.start_ns + h.dur_ns < g.start_ns + g.dur_ns
ORDER BY 1
"""


# launch calls of at least startup_frame_min_ns whose kernel is the first of its name on the
# device: the driver loads the kernel's module on its first launch (lazy loading), a one-off
# cost; a long launch call later in the run is the launch queue pushing back, not this. (One
# aggregate per kernel name: a filter of the slow calls joined back to every kernel cost
# 0.2 s and 380 MB on a 1 M-kernel export. A first kernel launched before the capture has no
# launch: arg_min_null keeps that NULL, so a later slow launch is not taken for the load.)
_FIRST_LOADS = """
SELECT f.l AS launch_op_id FROM (
  SELECT arg_min_null(launch_op_id, start_ns) AS l FROM f_gpu
  WHERE artifact_id = $a AND device = $d AND kind = 'kernel' GROUP BY name) f
JOIN host_ops h ON h.op_id = f.l AND h.artifact_id = $a
WHERE h.dur_ns >= $min ORDER BY 1
"""


def _first_loads(store: Store, artifact_id: int, device: int) -> I64:
    r = store.sql(_FIRST_LOADS, {"a": artifact_id, "d": device,
                                 "min": causes.rules().startup_frame_min_ns}).fetchnumpy()
    return np.asarray(r["launch_op_id"], dtype=np.int64)


def _returned_early(store: Store, artifact_id: int, device: int) -> I64:
    r = store.sql(_RETURNED_EARLY, {"a": artifact_id, "d": device}).fetchnumpy()
    return np.asarray(r["launch_op_id"], dtype=np.int64)


def _joined(store: Store, artifact_id: int, device: int
            ) -> tuple[dict[str, Any], list[tuple[str, str]]]:
    """The op rows of the launching threads (threads from a join of the device's kernels to
    their launch calls) with (name, kind) ids, and the (name, kind) pairs in id order."""
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
        pairs = store.sql("SELECT name, kind FROM _hs_nk ORDER BY nk").fetchall()
    finally:
        store.sql("DROP TABLE IF EXISTS _hs_th")
        store.sql("DROP TABLE IF EXISTS _hs_nk")
    return dict(r), pairs


def _by_node(store: Store, artifact_id: int, launch_op: I64
             ) -> tuple[dict[str, Any], list[tuple[str, str]]] | None:
    """The rows of `_joined` from one read of the artifact's ops, numbered the same way:
    launching threads are the threads of the ops `launch_op` names, and (name, kind) comes
    from the op's frame node (frames hold each op's name and kind; 1 M nsys ops: 0.37 s of
    joins → 0.12 s). None when some op has no frame node (rows written without one)."""
    a = {"a": artifact_id}
    # threads numbered as the join numbers them, each known by hash(pid, tid): the ops' rows
    # carry the hash instead of a join on the two strings, so a plain scan keeps the stored
    # op id order (Kineto: no sort of the rows after the join; docs/decisions/0690)
    t = store.sql(
        "SELECT hash(pid, tid) AS h, row_number() OVER (ORDER BY pid, tid) AS th FROM"
        " (SELECT DISTINCT pid, tid FROM f_host WHERE artifact_id = $a) ORDER BY h", a
    ).fetchnumpy()
    th_hash = np.asarray(t["h"], dtype=np.uint64)
    if (th_hash[1:] == th_hash[:-1]).any():  # two threads of one hash: the joins tell them
        return None
    # the rows in op id order for `_ops`: as stored where a reader wrote them so (Kineto);
    # ids that are one consecutive block in another order (nsys writes thread by thread)
    # are put in place by their offset (1 M ops: DuckDB's sort 130-220 ms of CPU, the
    # scatter 15-30 ms); else (rare: no reader writes so) read again sorted by DuckDB (a
    # third of a numpy argsort and gather of every column)
    query = ("SELECT op_id, coalesce(parent, -1) AS parent, depth, start_ns,"
             " start_ns + dur_ns AS e, hash(pid, tid) AS h, coalesce(node_id, -1) AS node"
             " FROM f_host WHERE artifact_id = $a")
    r = store.sql(query, a).fetchnumpy()
    op = np.asarray(r["op_id"], dtype=np.int64)
    at = None if intervals.is_sorted(op) else _block_offsets(op)
    if at is None and not intervals.is_sorted(op):
        del r, op
        r = store.sql(query + " ORDER BY op_id", a).fetchnumpy()
        op = np.asarray(r["op_id"], dtype=np.int64)
        at = None if intervals.is_sorted(op) else _block_offsets(op)
    if at is not None:  # each row to its place in the block
        r = {c: _scatter(np.asarray(v), at) for c, v in r.items()}
        op = np.asarray(r["op_id"], dtype=np.int64)
    elif not intervals.is_sorted(op):  # DuckDB keeps a scan's order: only repeated op ids come
        o = np.argsort(op, kind="stable")
        r = {c: np.asarray(v)[o] for c, v in r.items()}
        op = np.asarray(r["op_id"], dtype=np.int64)
        del o
    th = np.asarray(t["th"], dtype=np.int64)[np.searchsorted(th_hash, np.asarray(r.pop("h")))]
    # the launching threads (in (pid, tid) order, as the join numbers them), then their ops
    i = intervals.find(op, launch_op)
    launching = intervals.uniq(th[i[i >= 0]])
    del i
    every = len(launching) == len(intervals.uniq(th))  # (the usual case: no copy)
    keep = slice(None) if every else np.nonzero(np.isin(th, launching))[0]
    node = np.asarray(r.pop("node"), dtype=np.int64)[keep]
    if (node < 0).any():
        return None
    nodes = intervals.uniq(node)
    nk = store.sql(
        "SELECT node_id, dense_rank() OVER (ORDER BY name, kind) - 1 AS nk, name, kind"
        " FROM frames WHERE node_id IN (SELECT unnest($n)) ORDER BY node_id",
        {"n": nodes.tolist()}).fetchall()
    if len(nk) != len(nodes):
        return None
    pairs = sorted({(int(k), n, kd) for _, k, n, kd in nk})
    out = {c: np.asarray(r.pop(c))[keep] for c in ("op_id", "parent", "depth", "start_ns", "e")}
    out["th"] = _lookup(launching, np.arange(1, len(launching) + 1), th[keep])
    del r, th
    out["nk"] = _lookup(nodes, np.array([k for _, k, _, _ in nk], dtype=np.int64), node)
    return out, [(n, kd) for _, n, kd in pairs]


def _block_offsets(ids: npt.NDArray[np.integer]) -> I64 | None:
    """Each id's offset in the consecutive block the ids fill once each (any order), or
    None when they do not (a gap or a repeat)."""
    if len(ids) == 0:
        return None
    lo = int(ids.min())
    if int(ids.max()) - lo != len(ids) - 1:
        return None
    at = ids.astype(np.int64) - lo
    seen = np.zeros(len(ids), dtype=bool)
    seen[at] = True
    return at if bool(seen.all()) else None


def _scatter(v: npt.NDArray[Any], at: I64) -> npt.NDArray[Any]:
    out = np.empty_like(v)
    out[at] = v
    return out


def _lookup(keys: I64, values: I64, x: I64) -> I64:
    """values[j] where keys[j] == x, for x among the sorted distinct `keys`: a table indexed
    by value where the keys span a small range (node ids, thread numbers), else a search."""
    if len(keys) == 0:
        return np.zeros(len(x), dtype=np.int64)
    lo, hi = int(keys[0]), int(keys[-1])
    if hi - lo <= len(x) + (1 << 16):
        table = np.zeros(hi - lo + 1, dtype=np.int64)
        table[keys - lo] = values
        return table[x - lo]
    return values[np.searchsorted(keys, x)]


def _ops(r: dict[str, Any], pairs: list[tuple[str, str]], complete: bool,
         early: I64 | None = None, loads: I64 | None = None) -> HostOps:
    """early: sorted ids of copy calls that returned before their copy ended — not blocking
    copies but calls that queue work: ranked as launch-API overhead (B200 vLLM: 146 DtoD
    cudaMemcpyAsync calls return ~1 µs before their copy starts). loads: sorted ids of
    first launches of a kernel that took ≥ 1 ms (its module loaded): start-up (JIT rank)."""
    rules = causes.rules()
    none = len(rules.causes)
    op = np.asarray(r.pop("op_id"), dtype=np.int64)
    o = slice(None) if intervals.is_sorted(op) else np.argsort(op, kind="stable")
    op = op[o]
    parent, depth, s, e, th, name_ix = (np.asarray(r.pop(c), dtype=np.int64)[o] for c in
                                        ("parent", "depth", "start_ns", "e", "th", "nk"))
    del r, o
    n = len(op)
    names = [str(nm) for nm, _ in pairs]
    if n == 0:
        e0 = np.zeros(0, dtype=np.int64)
        e1 = np.zeros(0, dtype=np.int32)
        return HostOps(e0, complete, e0, e0, e1, e1, e1, e1, e1, names, none)
    rank_of = np.array([causes.classify(str(nm), str(k)) for nm, k in pairs], dtype=np.int64)
    py_of = np.array([k == "python" for _, k in pairs], dtype=bool)
    own = rank_of[name_ix]
    if early is not None and len(early):
        hit = intervals.find(early, op) >= 0
        blocking = rules.rank("blocking_copy")
        own = np.where(hit & (own == blocking), rules.rank("launch_overhead"), own)
    if loads is not None and len(loads):  # a kernel's first launch loading its module
        hit = intervals.find(loads, op) >= 0
        own = np.where(hit & (own == rules.rank("launch_overhead")),
                       rules.rank("jit_compile"), own)
    # a short JIT / autotune frame (not a module-load call) is a per-step cache lookup
    api = np.array([k == "runtime" for _, k in pairs], dtype=bool)[name_ix]
    lookup = (own == rules.rank("jit_compile")) & ~api & (e - s < rules.startup_frame_min_ns)
    own = np.where(lookup, rules.rank("cpu_dispatch"), own)
    is_py = py_of[name_ix]
    pidx = np.where(parent >= 0, intervals.find(op, parent), -1)
    del parent
    # inherit down the chain, level by level: effective rank, the op that names it, and
    # the nearest python frame above (the calling frame of an API call)
    eff = own
    src = np.arange(n, dtype=np.int64)
    call = np.where(is_py, name_ix, -1)
    modes = [c.frames for c in rules.causes] + ["none"]
    for d in intervals.uniq(depth):
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
    # (per cause rank, a flag table indexed by the op's rank: no per-op string compare)
    at = np.minimum(eff, none)
    innermost = np.array([m == "innermost" for m in modes], dtype=bool)[at]
    calling = np.array([m == "calling" for m in modes], dtype=bool)[at]
    frame = np.where(innermost, name_ix, name_ix[src])
    frame = np.where(calling & (call >= 0), call, frame)
    return HostOps(op, complete, s, e, depth.astype(np.int32), th.astype(np.int32),
                   eff.astype(np.int32), frame.astype(np.int32), call.astype(np.int32), names,
                   none)


def paint(host: HostOps, cuts: I64) -> HostState:
    """The host state on each segment [cuts[i], cuts[i+1]) of sorted distinct cuts. Every op
    bound inside a segment the caller reads must be a cut (a segment spanning an op bound
    takes the op state at its start only where no bound falls inside it)."""
    n = max(len(cuts) - 1, 0)
    if n == 0 or len(host.s) == 0:
        return _unpainted(n, host)
    # segments [a, b) each op covers (an op past the last cut covers up to the last segment)
    a = np.minimum(np.searchsorted(cuts, host.s), n)
    b = np.minimum(np.searchsorted(cuts, host.e), n)
    # only ops spanning a segment paint anything
    live = np.nonzero(b > a)[0]
    a, b, th, depth = a[live], b[live], host.th[live], host.depth[live]
    if len(th) and (th[0] == th).all():  # one launching thread (nsys): no merge of threads
        return _one_thread(host, _paint_idx(n, a, b, depth, live))
    out = _unpainted(n, host)
    rank, frame, calling = out.rank, out.frame, out.calling
    for t in intervals.uniq(th):
        sel = np.nonzero(th == t)[0]
        inner = _paint_idx(n, a[sel], b[sel], depth[sel], live[sel])
        has = inner >= 0
        at = inner[has]
        rk = host.eff[at]
        better = rk < rank[has]
        idx = np.nonzero(has)[0][better]
        rank[idx] = rk[better]
        frame[idx] = host.frame[at[better]]
        calling[idx] = host.call[at[better]]
    return out


def _unpainted(n: int, host: HostOps) -> HostState:
    return HostState(np.full(n, host.none, dtype=np.int32), np.full(n, -1, dtype=np.int32),
                     np.full(n, -1, dtype=np.int32), host.names, host.none)


def _one_thread(host: HostOps, inner: I64) -> HostState:
    """`paint`'s merge of threads for one thread: the innermost op's state where it names a
    cause (ranks below `none`), else none (no masks, gathers and scatters of the merge)."""
    rk = np.where(inner >= 0, host.eff[inner], host.none)
    better = rk < host.none
    return HostState(np.where(better, rk, host.none).astype(np.int32, copy=False),
                     np.where(better, host.frame[inner], -1).astype(np.int32, copy=False),
                     np.where(better, host.call[inner], -1).astype(np.int32, copy=False),
                     host.names, host.none)

"""The host side of the replay graph, in arrays (graph.py `build`): each thread's time cut at
runtime-call and top-level op boundaries (and the steps' marks and its per-tensor collective
loops' bounds) into a chain of nodes; long quiet gaps that end just after another thread's op
boundary become waits on it; a thread's first op woken by another thread's op waits on it.

One pass of numpy per thread over its ops (the cut points, the call each segment lies in, the
tags) instead of a Python step per segment; only the outermost-call selection, the long quiet
gaps and the lanes' first nodes are walked in Python (a few per step). The nodes, their order
and their constraints are those of the step-by-step build this replaced (decision 0843)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from operator import itemgetter

import numpy as np
import numpy.typing as npt

from crossview import intervals
from crossview.knowledge import causes
from crossview.knowledge.api_roles import role_of
from crossview.knowledge.frames import dataloader_pattern, grad_sync_ops
from crossview.knowledge.loader import load_yaml
from crossview.replay.lane_index import LaneIndex

I64 = npt.NDArray[np.int64]
# host node kinds: a host op's own time, time outside any op, a runtime call, a wait
CPU, GAP, CALL, WAIT = "cpu", "gap", "call", "wait"
# tags a host segment may carry, in the order their patterns are tried on an op's name
TAGS = ("dataloader", "startup", "collective", "ddp", "graph_region", "graph_eager")
LOOP_TAG = "collective_loop"
# the tags of an untagged node, shared (most nodes: 10⁵ empty sets cost ~10 ms a build); a
# node's tags are replaced, never changed in place (graph_gpu.py, rank_graph.py)
NO_TAGS: frozenset[str] = frozenset()


@dataclass
class Nodes:
    """The graph's nodes in order (parallel lists), the edges between them, and what the
    host side hands the GPU side (graph_gpu.py)."""
    kind: list[str] = field(default_factory=list)
    lane: list[str] = field(default_factory=list)
    name: list[str] = field(default_factory=list)
    dur: list[int] = field(default_factory=list)
    mstart: list[int] = field(default_factory=list)
    op_ref: list[int | None] = field(default_factory=list)
    tags: list[AbstractSet[str]] = field(default_factory=list)
    family: list[str | None] = field(default_factory=list)
    nbytes: list[int | None] = field(default_factory=list)
    # each thread's chain: nodes n0..n1, each after the one before it (offset 0), every
    # node's first constraint (graph.py `build` makes them; no 5-tuple per chain edge)
    chains: list[tuple[int, int]] = field(default_factory=list)
    quiet: list[int] = field(default_factory=list)  # host nodes tagged "quiet" (no op ran)
    # the other edges in the order they were added: (node, pred, at_end, offset, why)
    edges: list[tuple[int, int, bool, int, str]] = field(default_factory=list)
    at: LaneIndex = field(default_factory=LaneIndex)
    end_at: LaneIndex = field(default_factory=LaneIndex)
    launch_node: dict[int, int] = field(default_factory=dict)  # launching call op_id → node
    blocking: list[tuple[int, int, int]] = field(default_factory=list)  # sync calls
    pageable: dict[int, int] = field(default_factory=dict)  # async copy op_id → return node

    def __len__(self) -> int:
        return len(self.kind)


def _inside(ms: I64, me: I64, a: I64, b: I64) -> npt.NDArray[np.bool_]:
    """Each [a, b) lies inside one merged span (intervals.merge)."""
    if not len(ms):
        return np.zeros(len(a), dtype=bool)
    i = np.searchsorted(ms, a, side="right") - 1
    ok = i >= 0
    j = np.maximum(i, 0)
    return ok & (ms[j] <= a) & (b <= me[j])


class _Tagger:
    """The tag of an op name (one of TAGS or None), each distinct name matched once."""

    def __init__(self, region: list[str], eager: list[str]) -> None:
        self.dl = re.compile(dataloader_pattern())
        self.su = [re.compile(x) for x in load_yaml("frames.yaml")["startup"]]
        self.coll = grad_sync_ops()[1]
        rules = causes.rules()
        self.ddp = rules.causes[rules.rank("ddp_bookkeeping")].regex
        self.region = [re.compile(x) for x in region]
        self.eager = [re.compile(x) for x in eager]
        self.known: dict[str, int] = {}

    def code(self, name: str) -> int:
        """Index into TAGS, -1 for none."""
        got = self.known.get(name)
        if got is None:
            tag = ("dataloader" if self.dl.search(name) else "startup"
                   if any(x.search(name) for x in self.su) else "collective"
                   if name.startswith(self.coll) else "ddp"
                   if any(x.search(name) for x in self.ddp) else "graph_region"
                   if any(x.search(name) for x in self.region) else "graph_eager"
                   if any(x.search(name) for x in self.eager) else None)
            got = self.known[name] = TAGS.index(tag) if tag is not None else -1
        return got


def build_host(rows: dict[str, np.ndarray], marks: Mapping[str, set[int]],
               loops: dict[str, list[tuple[int, int]]], p: dict, region: dict) -> Nodes:
    """Every thread's chain, then the waits between threads (graph.py `build`). p: replay.yaml
    `graph`; region: the graph-region lever's region and eager-island patterns."""
    out = Nodes()
    tagger = _Tagger(region["regions"], region["eager"])
    short_startup = causes.rules().startup_frame_min_ns
    pid, tid = rows["pid"], rows["tid"]
    n = len(pid)
    if n:
        change = np.flatnonzero((pid[1:] != pid[:-1]) | (tid[1:] != tid[:-1])) + 1
        starts = [0, *change.tolist(), n]
        runs = [((str(pid[a]), str(tid[a])), a, b)
                for a, b in zip(starts, starts[1:], strict=False)]
        # the same thread key in two runs (a NULL id read as "None"): one chain, as before
        merged: dict[tuple[str, str], list[tuple[int, int]]] = {}
        for k, a, b in runs:
            merged.setdefault(k, []).append((a, b))
        for (tp, tt), parts in merged.items():
            idx = np.concatenate([np.arange(a, b) for a, b in parts])
            lane = f"T {tp}/{tt}"
            _thread(out, lane, {c: v[idx] for c, v in rows.items()}, marks.get(lane, set()),
                    loops.get(lane, []), tagger, short_startup)
    _thread_waits(out, p)
    return out


def _thread(out: Nodes, lane: str, r: dict[str, np.ndarray], marks: set[int],
            loops: list[tuple[int, int]], tagger: _Tagger, short_startup: int) -> None:
    rt = r["rt"].astype(bool)
    names = r["name"]
    s = r["start_ns"].astype(np.int64)
    e = r["e"].astype(np.int64)
    depth = r["depth"].astype(np.int64)
    tag = np.full(len(s), -1, dtype=np.int64)
    other = np.flatnonzero(~rt)
    if len(other):
        get, code = tagger.known.get, tagger.code  # one regex pass per distinct name
        tag[other] = [c if (c := get(x)) is not None else code(str(x))
                      for x in names[other].tolist()]
        short = (tag == TAGS.index("startup")) & (e - s < short_startup)
        tag[short] = -1
    cut = rt | (depth <= 1) | (tag >= 0)
    if not cut.any():
        return
    pts = np.concatenate([s[cut], e[cut]])
    lo, hi = int(pts.min()), int(pts.max())
    extra = [x for x in marks if lo < x < hi] + [x for w in loops for x in w if lo < x < hi]
    points = intervals.uniq(np.concatenate([pts, np.asarray(extra, dtype=np.int64)]))
    if len(points) < 2:
        return
    bounds = intervals.uniq(np.concatenate([s, e]))
    top = depth == 0
    cover = intervals.merge(s[top], e[top])
    spans = [intervals.merge(s[tag == k], e[tag == k]) for k in range(len(TAGS))]
    if loops:
        spans.append(intervals.merge(np.asarray([a for a, _ in loops], dtype=np.int64),
                             np.asarray([b for _, b in loops], dtype=np.int64)))
    tag_names = [*TAGS, LOOP_TAG]
    a, b = points[:-1], points[1:]
    # the outermost call starting at a point names the segments until it ends: the first
    # runtime call per start, taken when no chosen call is still open (calls nest rarely)
    ci = np.flatnonzero(rt)
    cs = s[ci]
    if intervals.is_sorted(cs):  # one run of the thread's rows: in start order already
        first = np.flatnonzero(np.r_[True, cs[1:] != cs[:-1]][:len(cs)])
    else:
        _, first = np.unique(cs, return_index=True)  # first call in list order per start
    ci = ci[first]
    ci = ci[s[ci] < hi]
    if len(ci) < 2 or bool((s[ci][1:] >= e[ci][:-1]).all()):
        sel_a = ci  # no call opens before the one before it ended: each is outermost
    else:
        sel: list[int] = []
        open_end: int | None = None
        for i, cst, cen in zip(ci.tolist(), s[ci].tolist(), e[ci].tolist(), strict=True):
            if open_end is None or cst >= open_end:
                sel.append(i)
                open_end = cen
        sel_a = np.asarray(sel, dtype=np.int64)
    ss, se = s[sel_a], e[sel_a]
    j = np.searchsorted(ss, a, side="right") - 1
    jj = np.maximum(j, 0)
    in_call = (j >= 0) & (a < se[jj]) if len(sel_a) else np.zeros(len(a), dtype=bool)
    at_call = in_call & (ss[jj] == a) if len(sel_a) else in_call
    inside = _inside(*cover, a, b)
    k = np.searchsorted(bounds, a, side="right")
    quiet = (k >= len(bounds)) | (bounds[np.minimum(k, len(bounds) - 1)] >= b)
    seg_tags = [_inside(ms, me, a, b) for ms, me in spans]
    op_ids = r["op_id"]
    call_op = op_ids[sel_a][jj] if len(sel_a) else np.zeros(len(a), dtype=np.int64)
    call_name = names[sel_a][jj] if len(sel_a) else np.full(len(a), "", dtype=object)
    # the role of each segment's call where the segment starts it (else none)
    role = np.full(len(a), None, dtype=object)
    starting = np.flatnonzero(at_call)
    cnames = call_name[starting].tolist()
    roles = {c: role_of(c) for c in set(cnames)}
    of_call = np.empty(len(cnames), dtype=object)
    of_call[:] = [roles[c] for c in cnames]  # kept as Python objects (a list of str → '<U')
    role[starting] = of_call
    copy = at_call & (role == "async_memcpy")  # two nodes: the call (launch), its return
    rows = 1 + copy.astype(np.int64)
    base = len(out)
    last = base + np.cumsum(rows) - 1  # each segment's last node
    first = last - rows + 1
    seg = np.repeat(np.arange(len(a)), rows)  # the segment of each node
    ret = np.zeros(len(seg), dtype=bool)  # a copy's return node
    ret[(last - base)[copy]] = True
    call_first = np.zeros(len(seg), dtype=bool)  # a copy's call node
    call_first[(first - base)[copy]] = True
    nc = in_call[seg]
    kind = np.where(nc, CALL, np.where(inside[seg], CPU, GAP))
    name = np.where(nc, call_name[seg], np.where(inside[seg], "host", "")).astype(object)
    if ret.any():
        name[ret] = [f"{x} (return)" for x in name[ret].tolist()]
    dur = np.where(call_first, 0, (b - a)[seg])
    keep = nc & ~ret  # a copy's return node has no op of its own
    out.kind += kind.tolist()
    out.lane += [lane] * len(seg)
    out.name += name.tolist()
    out.dur += np.maximum(dur, 0).tolist()
    out.mstart += a[seg].tolist()
    refs = call_op[seg].astype(object)
    refs[~keep] = None
    out.op_ref += refs.tolist()
    out.family += [None] * len(seg)
    out.nbytes += [None] * len(seg)
    # a segment's tags (quiet, then TAGS…, LOOP_TAG) as bits; its last node holds them as one
    # frozenset per distinct combination, shared by every node holding it (a lever replaces a
    # node's set whole, never edits it): V100 DDP's 44 k tagged nodes, no set built per node
    bits = (~in_call & quiet).astype(np.int64)
    for bit, hit in enumerate(seg_tags, start=1):
        bits |= hit.astype(np.int64) << bit
    bit_names = ["quiet", *tag_names]
    tags = np.full(len(seg), NO_TAGS, dtype=object)
    tagged = np.flatnonzero(bits)
    masks, which = np.unique(bits[tagged], return_inverse=True)
    combos = np.empty(len(masks), dtype=object)
    combos[:] = [frozenset(t for j, t in enumerate(bit_names) if m >> j & 1)
                 for m in masks.tolist()]
    tags[(last - base)[tagged]] = combos[which]
    out.tags += tags.tolist()
    out.quiet += (last[bits & 1 == 1]).tolist()
    launch = np.flatnonzero(at_call)
    out.launch_node.update(zip(call_op[launch].tolist(), first[launch].tolist(), strict=True))
    sync = np.flatnonzero(at_call & ~copy & np.isin(role, ["sync", "sync_memcpy"]))
    out.blocking += zip(first[sync].tolist(), a[sync].tolist(), b[sync].tolist(), strict=True)
    out.pageable.update(zip(call_op[copy].tolist(), last[copy].tolist(), strict=True))
    out.at.put(lane, a, first)
    out.end_at.put(lane, b, last)
    # segments abut: each node waits for the one before it with offset 0
    out.chains.append((int(first[0]), int(last[-1])))


def _thread_waits(out: Nodes, p: dict) -> None:
    """A long gap on one thread that ends just after another thread's op boundary waits on
    it (cross-thread hand-offs the trace does not name); then each lane's first node woken
    by another thread (graph.py `_thread_waits`, `_first_wakes`)."""
    n = len(out)
    if not n:
        return
    ms = np.asarray(out.mstart, dtype=np.int64)
    end = ms + np.asarray(out.dur, dtype=np.int64)
    quiet = np.zeros(n, dtype=bool)
    quiet[out.quiet] = True
    loud = np.flatnonzero(~quiet)
    o = np.lexsort((loud, end[loud]))  # by end, then node
    order = loud[o]
    keys = end[order]
    lanes = out.lane
    gap_min, window = p["thread_wait_gap_min_ns"], p["wake_window_ns"]
    dur = np.asarray(out.dur, dtype=np.int64)
    has_cons = np.zeros(n, dtype=bool)
    has_cons[np.fromiter(map(itemgetter(0), out.edges), dtype=np.int64,
                         count=len(out.edges))] = True
    for n0, n1 in out.chains:
        has_cons[n0 + 1:n1 + 1] = True
    for i in np.flatnonzero(quiet & (dur >= gap_min)).tolist():
        a, b = out.mstart[i], out.mstart[i] + out.dur[i]
        j = int(np.searchsorted(keys, b, side="right")) - 1
        while j >= 0 and keys[j] >= a and lanes[order[j]] == lanes[i]:
            j -= 1
        if j < 0 or keys[j] < a or b - keys[j] > window:
            continue
        other = int(order[j])
        out.kind[i] = WAIT
        out.name[i] = f"wait for {lanes[other]}"
        out.dur[i] = 0
        out.edges.append((i, other, True, int(b - keys[j]), "thread"))
        has_cons[i] = True
    first: dict[str, int] = {}
    for i in np.flatnonzero(~has_cons).tolist():
        ln = lanes[i]
        if ln not in first or out.mstart[i] < out.mstart[first[ln]]:
            first[ln] = i
    wake = p["first_wake_window_ns"]
    for ln, i in first.items():
        b = out.mstart[i]
        j = int(np.searchsorted(keys, b, side="right")) - 1
        while j >= 0 and lanes[order[j]] == ln:
            j -= 1
        if j < 0 or b - keys[j] > wake:
            continue
        out.edges.append((i, int(order[j]), True, int(b - keys[j]), "thread"))

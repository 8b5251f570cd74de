"""Idle pieces: a device's idle time cut at every host-op boundary of its launching threads and
every GPU copy boundary, each piece with one cause (knowledge/account.yaml): the host state
at the piece (views/device/host_state.py), then the gap-level rules. Pieces are disjoint and
cover the idle time exactly; views/device/account.py sums them per step.

Only bounds inside an idle gap cut anything: the cuts are built gap by gap (gap start, the
bounds inside it, gap end) without sorting the gaps themselves, and the host state is painted
on those cuts alone.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from crossview import intervals
from crossview.knowledge import causes
from crossview.store.store import Store
from crossview.views.device import graph_windows, host_state
from crossview.views.distributed import collective_loops

I64 = npt.NDArray[np.int64]
I32 = npt.NDArray[np.int32]
CHUNK_GAPS = 1 << 18  # gaps cut and painted per pass (memory, not answers: any size is exact)


@dataclass
class Pieces:
    s: I64
    e: I64
    cause: I32  # rank into the cause table
    frame: I32  # index into names (-1 none)
    calling: I32
    names: list[str]


def _complement(us: I64, ue: I64, lo: int, hi: int) -> tuple[I64, I64]:
    """Holes of a sorted disjoint union inside [lo, hi)."""
    s = np.concatenate([[lo], np.clip(ue, lo, hi)])
    e = np.concatenate([np.clip(us, lo, hi), [hi]])
    keep = e > s
    return s[keep].astype(np.int64), e[keep].astype(np.int64)


def _inside(gs: I64, ge: I64, t: I64, i: I64 | None = None) -> I64:
    """The instants of t strictly inside a gap (gs < t < ge); i: the search below, if done."""
    if len(gs) == 0 or len(t) == 0:
        return t[:0]
    if i is None:
        i = np.searchsorted(ge, t, side="right")  # first gap ending after t
    # (whole-array gathers at a clipped index: no boolean-indexed gathers and scatters)
    return t[(i < len(gs)) & (gs[np.minimum(i, len(gs) - 1)] < t)]


def _touching(host: host_state.HostOps, gs: I64, ge: I64
              ) -> tuple[host_state.HostOps, I64]:
    """The ops' starts strictly inside a gap, and the ops that reach into a gap (the same
    cuts and paint from fewer ops) when that drops a quarter of them or more (Kineto 334 MB:
    half the ops lie in busy time); one search serves both."""
    if len(gs) == 0 or len(host.s) == 0:
        return host, _inside(gs, ge, host.s)
    i = np.searchsorted(ge, host.s, side="right")
    starts = _inside(gs, ge, host.s, i)
    m = np.nonzero(host.touching(gs, ge, i))[0]
    return (host.take(m) if len(m) <= 0.75 * len(host.s) else host), starts


def _cuts(gs: I64, ge: I64, inner: I64) -> tuple[I64, I64, I64]:
    """Sorted cuts gap by gap (gs, the distinct inner bounds of the gap, ge); returns the cuts,
    the cut index of each piece start (every cut but a gap end) and each piece's gap."""
    inner = intervals.uniq(inner)
    g = len(gs)
    # each gap's inner bounds are one run of the sorted bounds: found by searching the gap
    # starts among them (g searches, not one per bound: Kineto 334 MB, 134 k gaps, 616 k bounds)
    cnt = np.diff(np.append(np.searchsorted(inner, gs), len(inner)))
    gi = np.repeat(np.arange(g, dtype=np.int64), cnt)
    at_gs = 2 * np.arange(g, dtype=np.int64) + (np.cumsum(cnt) - cnt)
    at_ge = at_gs + cnt + 1
    cuts = np.empty(2 * g + len(inner), dtype=np.int64)
    cuts[at_gs] = gs
    cuts[at_ge] = ge
    cuts[np.arange(len(inner), dtype=np.int64) + 2 * gi + 1] = inner
    start = np.ones(len(cuts), dtype=bool)
    start[at_ge] = False
    return cuts, np.nonzero(start)[0], np.repeat(np.arange(g, dtype=np.int64), cnt + 1)


def _behind(us: I64, first_end: tuple[I64, I64]) -> bool:
    """The device's first captured kernel started behind work the capture does not hold: its
    launch is not in the capture, or it started more than queued_latency_ns after its launch
    call returned (the GPU was busy with something else)."""
    ks, kl = first_end
    j = int(np.searchsorted(ks, us[0]))
    if j >= len(ks) or ks[j] != us[0]:
        return True
    return int(us[0]) - int(kl[j]) > causes.rules().queued_latency_ns


def pieces(store: Store, a: int, d: int, lo: int, hi: int, us: I64, ue: I64,
           first_end: tuple[I64, I64], box: list[host_state.HostOps],
           loops: tuple[I64, I64] | None = None) -> tuple[Pieces, I64, I64]:
    """first_end: per distinct kernel start, the earliest end of its launch call
    (launch_queue.first_launch_end); box: the launching threads' ops (host_state.ops), taken
    out of the list (freed once painted); loops: the artifact's collective loop spans when
    the caller has them (else read here). The gaps are cut and judged CHUNK_GAPS at a time
    (the ops spanning each run of gaps only): memory bounded by the chunk, not the capture."""
    host = box.pop()
    gs, ge = _complement(us, ue, lo, hi)
    cp = store.sql(
        "SELECT start_ns, start_ns + dur_ns AS e FROM f_gpu WHERE artifact_id = $a AND"
        " device = $d AND kind IN ('memcpy', 'memset') ORDER BY 1", {"a": a, "d": d},
    ).fetchnumpy()
    cs, ce = intervals.merge(np.asarray(cp["start_ns"], dtype=np.int64),
                            np.asarray(cp["e"], dtype=np.int64))
    graphs = graph_windows.windows(store, a, d)
    loops = loops if loops is not None else collective_loops.windows(store, a)
    edges = (int(us[0]), int(ue[-1]), _behind(us, first_end)) if len(us) else (hi, lo, True)
    parts = [_chunk(host.near(int(gs[g0]), int(ge[min(g0 + CHUNK_GAPS, len(gs)) - 1])),
                    gs[g0:g0 + CHUNK_GAPS], ge[g0:g0 + CHUNK_GAPS], cs, ce, first_end, edges,
                    graphs, loops)
             for g0 in range(0, len(gs), CHUNK_GAPS)]
    names = host.names
    del host  # before the parts are joined
    if not parts:
        e0 = np.zeros(0, dtype=np.int64)
        e1 = np.zeros(0, dtype=np.int32)
        return Pieces(e0, e0, e1, e1, e1, names), gs, ge
    cols: list[Any] = []
    for i in range(5):  # one column at a time, each part's column freed once copied
        cols.append(np.concatenate([c[i] for c in parts]) if len(parts) > 1 else parts[0][i])
        for c in parts:
            c[i] = None
    return Pieces(cols[0], cols[1], cols[2], cols[3], cols[4], names), gs, ge


def _chunk(host: host_state.HostOps, gs: I64, ge: I64, cs: I64, ce: I64,
           first_end: tuple[I64, I64], edges: tuple[int, int, bool],
           graphs: tuple[I64, I64], loops: tuple[I64, I64]) -> list[Any]:
    """The pieces of a run of gaps: start, end, cause, frame, calling frame."""
    rules = causes.rules()
    rk = {c.id: i for i, c in enumerate(rules.causes)}
    host, starts = _touching(host, gs, ge)
    cuts, at, gi = _cuts(gs, ge, np.concatenate([starts] + [_inside(gs, ge, x)
                                                            for x in (host.e, cs, ce, *graphs,
                                                                      *loops)]))
    ps, pe = cuts[at], cuts[at + 1]
    st = host_state.paint(host, cuts)
    none = host.none
    del host
    cause = st.rank[at].astype(np.int64)
    frame, calling = st.frame[at], st.calling[at]
    del st, cuts, at
    first_k, last_k, behind = edges
    # gap rule 1: a gap opened while the host was blocked in a sync → the sync owns the
    # refill (cpu_dispatch / launch_overhead pieces of that gap); every gap's first piece
    # starts at the gap start
    first = np.r_[True, gi[1:] != gi[:-1]] if len(gi) else np.zeros(0, dtype=bool)
    g_cause = cause[first]
    g_frame = frame[first]
    synced = g_cause[gi] == rk["sync_drained"]
    refill = synced & ((cause == rk["cpu_dispatch"]) | (cause == rk["launch_overhead"]))
    cause[refill] = rk["sync_drained"]
    frame = np.where(refill, g_frame[gi], frame)
    # gap rule 2: the kernel ending the gap was launched (its launch call returned) before the
    # gap opened → queued work
    # waiting on a GPU-side dependency (a GPU copy running then is a blocking copy)
    ks, kl = first_end
    j = np.searchsorted(ks, ge)
    found = (j < len(ks)) & (ks[np.minimum(j, max(len(ks) - 1, 0))] == ge) if len(ks) else \
        np.zeros(len(ge), dtype=bool)
    launch_at = np.where(found, kl[np.minimum(j, max(len(ks) - 1, 0))] if len(ks) else 0,
                         np.iinfo(np.int64).max)
    # ... or launched during the gap but started much later than launched (the GPU had the
    # work and did not run it: another stream, the copy engine, work outside the capture)
    late = (ge - np.minimum(launch_at, ge)) > rules.queued_latency_ns
    queued = (launch_at < gs)[gi] | ((ps >= launch_at[gi]) & late[gi])
    # the GPU copying (memcpy / memset) while no kernel runs is copy time, whatever generic
    # work the host does meanwhile (specific host causes ranked above blocking_copy keep theirs)
    if len(cs):
        ci = np.searchsorted(cs, ps, side="right") - 1
        in_copy = (ci >= 0) & (ps < ce[np.maximum(ci, 0)])
    else:
        in_copy = np.zeros(len(ps), bool)
    copying = in_copy & (cause > rk["blocking_copy"])
    cause[copying] = rk["blocking_copy"]
    frame = np.where(copying, -1, frame)
    # ... unless the host itself is blocked waiting (a copy, a sync, a collective): then host
    # and GPU wait on the same thing and the host's blocking call names it
    waiting = ((cause == rk["blocking_copy"]) | (cause == rk["sync_drained"])
               | (cause == rk["collective_wait"]))
    queued &= ~waiting
    # before the capture's first kernel / after its last, what the GPU ran is not in the
    # capture (the MI300X vLLM graph replay starts 6 ms after hipGraphLaunch, behind work
    # launched before the profiler started): queued time there is the capture's boundary
    edge = (pe <= first_k) | (ps >= last_k)
    cause = np.where(queued, np.where(edge, rk["capture_boundary"], np.where(
        in_copy, rk["blocking_copy"], rk["gpu_dependency"])), cause)
    # generic host work there (dispatch, launch calls) says nothing about why the GPU idled
    # when the GPU may have run uncaptured work: after the last kernel, or before the first one
    # when that kernel started behind work the capture does not hold (its launch is missing or
    # it started late). Before a first kernel launched and started normally, the host's own
    # work is the step's (issue 37: preprocessing at a step's start is the workload, not
    # start-up). Specific causes (data loading, JIT, copies, syncs) stay.
    uncaptured = (ps >= last_k) | ((pe <= first_k) & behind)
    generic = uncaptured & ((cause == rk["cpu_dispatch"]) | (cause == rk["launch_overhead"]))
    cause[generic] = rk["capture_boundary"]
    frame[queued] = -1
    # no host op: before the first / after the last kernel → capture boundary
    cause = np.where(cause == none, np.where(edge, rk["capture_boundary"], rk["unexplained"]),
                     cause)
    # inside a per-tensor collective loop the GPU waits on the loop's per-tensor host work,
    # whatever generic op the thread is in at that instant (views/distributed/
    # collective_loops.py); specific causes (data loading, syncs, copies) keep theirs
    loop_generic = ((cause == rk["cpu_dispatch"]) | (cause == rk["launch_overhead"])
                    | (cause == rk["collective_call"]) | (cause == rk["unexplained"])
                    | (cause == rk["gpu_dependency"]))
    in_loop = graph_windows.inside(ps, *loops) & loop_generic
    cause[in_loop] = rk["collective_loop"]
    # inside one CUDA-graph replay the GPU runs the graph's nodes: idle there is work the
    # trace did not record, whatever the host does (views/device/graph_windows.py)
    in_graph = graph_windows.inside(ps, *graphs) & ~in_copy  # a copy node running is busy
    cause[in_graph] = rk["graph_unrecorded"]
    frame = np.where(in_graph, -1, frame)
    return [ps, pe, cause.astype(np.int32), frame, calling]

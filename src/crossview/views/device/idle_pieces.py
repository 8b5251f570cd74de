"""Idle pieces: a device's idle time cut at every host-op boundary of its launching threads and
every GPU copy boundary, each piece with one cause (knowledge/account.yaml): the per-instant
host state (views/device/host_state.py), then the gap-level rules. Pieces are disjoint and cover the
idle time exactly; views/device/account.py sums them per step.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from crossview.knowledge import causes
from crossview.store.store import Store
from crossview.views.device import host_state, launch_queue, timeline

I64 = npt.NDArray[np.int64]


@dataclass
class Pieces:
    s: I64
    e: I64
    cause: I64  # rank into the cause table
    frame: I64  # index into names (-1 none)
    calling: I64
    names: list[str]


def _complement(us: I64, ue: I64, lo: int, hi: int) -> tuple[I64, I64]:
    """Holes of a sorted disjoint union inside [lo, hi)."""
    s = np.concatenate([[lo], np.clip(ue, lo, hi)])
    e = np.concatenate([np.clip(us, lo, hi), [hi]])
    keep = e > s
    return s[keep].astype(np.int64), e[keep].astype(np.int64)


def pieces(store: Store, a: int, d: int, lo: int, hi: int, us: I64, ue: I64,
           launches: launch_queue.KernelLaunches) -> tuple[Pieces, I64, I64]:
    rules = causes.rules()
    rk = {c.id: i for i, c in enumerate(rules.causes)}
    host = host_state.build(store, a, d)
    gs, ge = _complement(us, ue, lo, hi)
    cp = store.sql(
        "SELECT start_ns, start_ns + dur_ns AS e FROM f_gpu WHERE artifact_id = $a AND"
        " device = $d AND kind IN ('memcpy', 'memset') ORDER BY 1", {"a": a, "d": d},
    ).fetchnumpy()
    cs, ce = timeline.merge(np.asarray(cp["start_ns"], dtype=np.int64),
                            np.asarray(cp["e"], dtype=np.int64))
    cuts = timeline.uniq(np.concatenate([gs, ge, host.bounds, cs, ce]))
    cuts = cuts[(cuts >= lo) & (cuts <= hi)]
    ps, pe = cuts[:-1], cuts[1:]
    gi = np.searchsorted(gs, ps, side="right") - 1
    inside = (gi >= 0) & (ps < ge[np.maximum(gi, 0)])
    ps, pe, gi = ps[inside], pe[inside], gi[inside]
    seg = host.segment_of(ps)
    has = seg >= 0
    if len(host.rank):
        at = np.maximum(seg, 0)
        cause = np.where(has, host.rank[at], host.none)
        frame = np.where(has, host.frame[at], -1)
        calling = np.where(has, host.calling[at], -1)
    else:  # no host op on the launching threads (or no launch recorded at all)
        cause = np.full(len(ps), host.none, dtype=np.int64)
        frame = np.full(len(ps), -1, dtype=np.int64)
        calling = np.full(len(ps), -1, dtype=np.int64)
    # gap rule 1: a gap opened while the host was blocked in a sync → the sync owns the
    # refill (cpu_dispatch / launch_overhead pieces of that gap)
    first = np.r_[True, gi[1:] != gi[:-1]] if len(gi) else np.zeros(0, dtype=bool)
    g_cause = np.full(len(gs), host.none, dtype=np.int64)
    g_frame = np.full(len(gs), -1, dtype=np.int64)
    g_cause[gi[first]] = cause[first]
    g_frame[gi[first]] = frame[first]
    synced = g_cause[gi] == rk["sync_drained"]
    refill = synced & np.isin(cause, [rk["cpu_dispatch"], rk["launch_overhead"]])
    cause = np.where(refill, rk["sync_drained"], cause)
    frame = np.where(refill, g_frame[gi], frame)
    # gap rule 2: the kernel ending the gap was launched (its launch call returned) before the
    # gap opened → queued work
    # waiting on a GPU-side dependency (a GPU copy running then is a blocking copy)
    ks, kl = launch_queue.first_launch_end(launches)
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
    ci = np.searchsorted(cs, ps, side="right") - 1
    in_copy = (ci >= 0) & (ps < ce[np.maximum(ci, 0)]) if len(cs) else np.zeros(len(ps), bool)
    copying = in_copy & (cause > rk["blocking_copy"])
    cause = np.where(copying, rk["blocking_copy"], cause)
    frame = np.where(copying, -1, frame)
    # ... unless the host itself is blocked waiting (a copy, a sync, a collective): then host
    # and GPU wait on the same thing and the host's blocking call names it
    waiting = np.isin(cause, [rk["blocking_copy"], rk["sync_drained"], rk["collective_wait"]])
    queued &= ~waiting
    # before the capture's first kernel / after its last, what the GPU ran is not in the
    # capture (the MI300X vLLM graph replay starts 6 ms after hipGraphLaunch, behind work
    # launched before the profiler started): queued time there is the capture's boundary
    first_k, last_k = (int(us[0]), int(ue[-1])) if len(us) else (hi, lo)
    edge = (pe <= first_k) | (ps >= last_k)
    cause = np.where(queued, np.where(edge, rk["capture_boundary"], np.where(
        in_copy, rk["blocking_copy"], rk["gpu_dependency"])), cause)
    # generic host work there (dispatch, launch calls) says nothing about why the GPU idled:
    # it may have run uncaptured work; specific causes (data loading, JIT, copies, syncs) stay
    generic = edge & np.isin(cause, [rk["cpu_dispatch"], rk["launch_overhead"]])
    cause = np.where(generic, rk["capture_boundary"], cause)
    frame = np.where(queued, -1, frame)
    # no host op: before the first / after the last kernel → capture boundary
    cause = np.where(cause == host.none,
                     np.where(edge, rk["capture_boundary"], rk["unexplained"]), cause)
    return Pieces(ps, pe, cause, frame, calling, host.names), gs, ge

"""The GPU side of the replay graph (graph.py `build`): one node per kernel, copy and memset,
each starting no earlier than its launch call and its stream's previous op, or — when neither
explains its start — another stream's op that ended just before it; pageable copies' calls
and blocking sync calls wait for the GPU op they waited on.

The ops are read as arrays and decided in numpy; a Python pass runs only over the ops neither
their stream nor their launch explains (the other-stream search). The nodes and constraints
are those of the step-by-step build this replaced (decision 0843)."""

from __future__ import annotations

import bisect
from itertools import repeat
from statistics import median

import numpy as np

from crossview.replay.graph_host import NO_TAGS, WAIT, Nodes

_BIG = 1 << 62


# a GPU op's tags by (pageable copy, replayed from a CUDA graph): shared sets (a lever
# replaces a node's set whole, never edits it)
_TAGS = {(False, False): NO_TAGS, (True, False): frozenset({"pageable"}),
         (False, True): frozenset({"graph"}), (True, True): frozenset({"pageable", "graph"})}
_LAUNCH, _STREAM, _EVENT = 0, 1, 2  # what decided an op's start


def build_gpu(out: Nodes, ops: dict[str, list], p: dict) -> None:
    """Append the GPU nodes and their constraints; turn the host calls that waited on them
    into waits. Per op in arrays: its stream's previous op, the gap after it, its launch
    call and the lag from it; a Python pass only over the ops neither explains (the
    other-stream search)."""
    base = len(out)
    lanes, devs, launch_ops = ops["lane"], ops["dev"], ops["launch_op_id"]
    n = len(lanes)
    s = np.asarray(ops["start_ns"], dtype=np.int64)
    d = np.maximum(np.asarray(ops["dur_ns"], dtype=np.int64), 0)
    out.kind += ops["kind"]
    out.lane += lanes
    out.name += ops["name"]
    out.dur += d.tolist()
    out.mstart += ops["start_ns"]
    out.op_ref += ops["gpu_op_id"]
    out.family += ops["family"]
    out.nbytes += ops["bytes"]
    out.tags += [_TAGS[bool(m and "Pageable" in m), bool(v)]
                 for m, v in zip(ops["mem_kinds"], ops["via_graph"], strict=True)]
    node_of = out.launch_node
    ln_of = [node_of.get(x) if x is not None else None for x in launch_ops]
    if out.pageable:  # a pageable copy's call returns when the copy is staged
        for k, x in enumerate(launch_ops):
            if x in out.pageable:
                _pageable_wait(out, out.pageable[x], base + k)
    # each op's previous op on its stream (-1: the first), and the gap after that one ends
    codes: dict[str, int] = {}
    lane = np.fromiter((codes.setdefault(x, len(codes)) for x in lanes), np.int64, n)
    o = np.argsort(lane, kind="stable")
    same = lane[o][1:] == lane[o][:-1]
    prev = np.full(n, -1, dtype=np.int64)
    prev[o[1:][same]] = o[:-1][same]
    has_prev = prev >= 0
    pi = np.maximum(prev, 0)
    gap = np.where(has_prev, s - (s[pi] + d[pi]), 0)
    has_ln = np.fromiter((x is not None for x in ln_of), bool, n)
    ln = np.fromiter((x if x is not None else 0 for x in ln_of), np.int64, n)
    ln_start = np.fromiter((out.mstart[x] if x is not None else 0 for x in ln_of), np.int64, n)
    lag = np.where(has_ln, s - ln_start, 0)
    queued_max = p["queued_gap_max_ns"]
    cross_min, lagged_max = p["cross_stream_lag_min_ns"], p["lagged_queued_gap_max_ns"]
    queued = has_prev & (gap <= queued_max)
    decided = np.where(queued, _STREAM, _LAUNCH)
    ends: dict[str, tuple[list[int], list[int]]] = {}
    for k in np.flatnonzero(~queued & (~has_ln | (lag > cross_min))).tolist():
        if devs[k] not in ends:
            ends[devs[k]] = _device_ends(devs, s + d, base, devs[k])
        dep = _other_stream_end(out, ends[devs[k]], base + k, queued_max)
        if dep is not None:
            end = out.mstart[dep] + out.dur[dep]
            out.edges.append((base + k, dep, True, out.mstart[base + k] - end, "event"))
            decided[k] = _EVENT
        elif has_prev[k] and has_ln[k] and gap[k] <= lagged_max:
            decided[k] = _STREAM  # launched long before, started just after its stream's op
    launched = (decided == _LAUNCH) & has_ln
    decided[(decided == _LAUNCH) & ~has_ln] = _STREAM  # launched before the capture
    # launch → start when nothing else delayed it; the back-to-back gap on one stream
    typ_lag = int(median(lag[launched].tolist())) if launched.any() else 0
    typ_gap = int(median(gap[queued].tolist())) if queued.any() else 0
    at = np.flatnonzero(has_ln)
    off = np.where(decided == _LAUNCH, lag, np.minimum(lag, typ_lag))
    out.edges += zip((base + at).tolist(), ln[at].tolist(), repeat(False), off[at].tolist(),
                     repeat("launch"))
    at = np.flatnonzero(has_prev)
    off = np.where(decided == _STREAM, gap, np.minimum(gap, typ_gap))
    out.edges += zip((base + at).tolist(), (base + prev[at]).tolist(), repeat(True),
                     off[at].tolist(), repeat("stream"))
    _sync_waits(out, base, ln_of, p)


def _device_ends(devs: list[str], end: np.ndarray, base: int, dev: str
                 ) -> tuple[list[int], list[int]]:
    """The device's GPU ops by end, then node: (ends, nodes)."""
    idx = np.flatnonzero(np.fromiter((x == dev for x in devs), bool, len(devs)))
    o = np.lexsort((idx, end[idx]))
    return end[idx][o].tolist(), (base + idx[o]).tolist()


def _other_stream_end(out: Nodes, ends: tuple[list[int], list[int]], n: int,
                      window: int) -> int | None:
    """The op on another stream of the same device that ended last at or before n's start,
    within `window` of it (graph.py `_other_stream_end`)."""
    keys, nodes = ends
    s = out.mstart[n]
    j = bisect.bisect_right(keys, s) - 1
    lane = out.lane[n]
    while j >= 0 and keys[j] >= s - window:
        if out.lane[nodes[j]] != lane:
            return nodes[j]
        j -= 1
    return None


def _pageable_wait(out: Nodes, ret: int, copy: int) -> None:
    """A cudaMemcpyAsync from pageable memory first waits for the stream's earlier work and
    returns once the data is staged: its return waits on the copy's end."""
    if "pageable" not in out.tags[copy]:
        return
    end = out.mstart[ret] + out.dur[ret]
    out.kind[ret] = WAIT
    out.tags[ret] = out.tags[ret] | {"pageable-call"}  # replaced: the set may be shared
    out.dur[ret] = 0
    out.edges.append((ret, copy, True, end - (out.mstart[copy] + out.dur[copy]), "sync"))


def _sync_waits(out: Nodes, base: int, ln_of: list[int | None], p: dict) -> None:
    """A sync call returns when the GPU op it waited for ends: the op that ended last before
    the call returned, launched before the call began, and still running when it began."""
    if not out.blocking:
        return
    n_gpu = len(out) - base
    ms = np.asarray(out.mstart[base:], dtype=np.int64)
    end = ms + np.asarray(out.dur[base:], dtype=np.int64)
    o = np.lexsort((np.arange(n_gpu), end))
    keys = end[o]
    node = (o + base).tolist()
    # no launch call in the capture: launched before it began (carried in — Qwen's 431
    # kernels of the previous forward run during its first cudaDeviceSynchronize)
    launch_start = [out.mstart[ln] if ln is not None else -1 for ln in ln_of]
    slack = p["sync_slack_ns"]
    for n, s, e in out.blocking:
        j = int(np.searchsorted(keys, e + slack, side="right")) - 1
        while j >= 0 and keys[j] > s and launch_start[node[j] - base] > s:
            j -= 1
        if j < 0 or keys[j] <= s:
            continue  # nothing was running: the call did not block
        out.kind[n] = WAIT
        out.tags[n] = out.tags[n] | {"sync"}  # replaced: the set may be shared
        out.dur[n] = 0
        out.edges.append((n, node[j], True, int(e - keys[j]), "sync"))

"""The GPU side of the replay graph (graph.py `build`): one node per kernel, copy and memset,
each starting no earlier than its launch call and its stream's previous op, or — when neither
explains its start — another stream's op that ended just before it; pageable copies' calls
and blocking sync calls wait for the GPU op they waited on.

The ops are read as arrays; the per-op decisions run in one Python pass over plain lists (no
per-op dictionary or bisect work). The nodes and constraints are those of the step-by-step
build this replaced (decision 0843)."""

from __future__ import annotations

import bisect
from statistics import median

import numpy as np

from crossview.replay.graph_host import NO_TAGS, WAIT, Nodes

_BIG = 1 << 62


def build_gpu(out: Nodes, ops: dict[str, list], p: dict) -> None:
    """Append the GPU nodes and their constraints; turn the host calls that waited on them
    into waits."""
    base = len(out)
    lanes, devs, starts, durs = ops["lane"], ops["dev"], ops["start_ns"], ops["dur_ns"]
    launch_ops = ops["launch_op_id"]
    queued_max = p["queued_gap_max_ns"]
    last: dict[str, int] = {}
    prev_of: list[int | None] = []
    gap_of: list[int | None] = []
    ln_of: list[int | None] = []
    gaps: list[int] = []
    by_end: dict[str, list[tuple[int, int]]] = {}
    for k, (op_id, lane, dev, kind, name, fam, s, d, launch_op, nbytes, mem, via) in enumerate(
            zip(ops["gpu_op_id"], lanes, devs, ops["kind"], ops["name"], ops["family"], starts,
                durs, launch_ops, ops["bytes"], ops["mem_kinds"], ops["via_graph"],
                strict=True)):
        n = base + k
        out.kind.append(kind)
        out.lane.append(lane)
        out.name.append(name)
        out.dur.append(max(0, d))
        out.mstart.append(s)
        out.op_ref.append(op_id)
        out.family.append(fam)
        out.nbytes.append(nbytes)
        pageable = bool(mem and "Pageable" in mem)
        # via: replayed from a CUDA graph: it waits on the graph's earlier kernels
        out.tags.append({"pageable", "graph"} if pageable and via else {"pageable"} if pageable
                        else {"graph"} if via else NO_TAGS)
        ln_of.append(out.launch_node.get(launch_op) if launch_op is not None else None)
        prev = last.get(lane)
        gap = s - (out.mstart[prev] + out.dur[prev]) if prev is not None else None
        if gap is not None and gap <= queued_max:
            gaps.append(gap)
        prev_of.append(prev)
        gap_of.append(gap)
        last[lane] = n
        by_end.setdefault(dev, []).append((s + d, n))
        if launch_op in out.pageable:
            _pageable_wait(out, out.pageable[launch_op], n)
    ends = {dev: _sorted_ends(v) for dev, v in by_end.items()}
    decided: list[str] = []
    lags: list[int] = []
    cross_min, lagged_max = p["cross_stream_lag_min_ns"], p["lagged_queued_gap_max_ns"]
    for k in range(len(lanes)):
        n, ln, gap = base + k, ln_of[k], gap_of[k]
        lag = out.mstart[n] - out.mstart[ln] if ln is not None else None
        binding = "launch"
        if gap is not None and gap <= queued_max:
            binding = "stream"
        elif lag is None or lag > cross_min:
            dep = _other_stream_end(out, ends[devs[k]], n, queued_max)
            if dep is not None:
                end = out.mstart[dep] + out.dur[dep]
                out.edges.append((n, dep, True, out.mstart[n] - end, "event"))
                binding = "event"
            elif gap is not None and lag is not None and gap <= lagged_max:
                binding = "stream"  # launched long before, started just after its stream's op
        if binding == "launch" and lag is not None:
            lags.append(lag)
        elif binding == "launch":  # launched before the capture: its stream gap stays
            binding = "stream"
        decided.append(binding)
    typ_lag = int(median(lags)) if lags else 0  # launch → start when nothing else delayed it
    typ_gap = int(median(gaps)) if gaps else 0  # back-to-back gap on one stream
    for k, binding in enumerate(decided):
        n, ln, prev, gap = base + k, ln_of[k], prev_of[k], gap_of[k]
        if ln is not None:
            lag = out.mstart[n] - out.mstart[ln]
            out.edges.append((n, ln, False, lag if binding == "launch" else min(lag, typ_lag),
                              "launch"))
        if prev is not None and gap is not None:
            out.edges.append((n, prev, True, gap if binding == "stream" else min(gap, typ_gap),
                              "stream"))
    _sync_waits(out, base, ln_of, p)


def _sorted_ends(v: list[tuple[int, int]]) -> tuple[list[int], list[int]]:
    v.sort()
    return [e for e, _ in v], [n for _, n in v]


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

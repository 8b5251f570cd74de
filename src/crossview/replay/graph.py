"""The dependency graph of one capture (Daydream-style): host segments, GPU ops, and the
constraints that decided when each started, read from the store tables.

Every node keeps its measured duration. A constraint says "this node starts no earlier than
PRED's start (or end) + OFFSET". Offsets are set from the measured timeline so that replaying
the unchanged graph reproduces it: the constraint that actually decided a node's start (its
*binding* one) gets the measured offset, the others a typical offset capped at the measured
one (so they can only bind when a lever moves things).
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from statistics import median

from crossview.knowledge import causes
from crossview.knowledge.api_roles import role_of
from crossview.knowledge.frames import dataloader_pattern, grad_sync_ops
from crossview.knowledge.loader import load_yaml
from crossview.store.store import Store
from crossview.views.distributed import collective_loops

# node kinds
CPU, GAP, CALL, WAIT, KERNEL, MEMCPY, MEMSET = ("cpu", "gap", "call", "wait", "kernel",
                                                 "memcpy", "memset")
GPU_KINDS = frozenset({KERNEL, MEMCPY, MEMSET})


@dataclass
class Cons:
    pred: int
    at_end: bool  # False: from the pred's start (a kernel's launch call)
    offset: int
    why: str  # chain | launch | stream | event | sync | thread


@dataclass
class Graph:
    """Parallel lists, one entry per node."""

    kind: list[str] = field(default_factory=list)
    lane: list[str] = field(default_factory=list)  # "T pid/tid" or "S dev/stream"
    name: list[str] = field(default_factory=list)
    dur: list[int] = field(default_factory=list)
    mstart: list[int] = field(default_factory=list)  # measured start (ns)
    cons: list[list[Cons]] = field(default_factory=list)
    family: list[str | None] = field(default_factory=list)
    tags: list[set[str]] = field(default_factory=list)  # dataloader, startup, pageable, …
    nbytes: list[int | None] = field(default_factory=list)
    op_ref: list[int | None] = field(default_factory=list)  # host op_id / gpu_op_id
    # host node starting at a host op's measured start, per thread: (lane, ns) → node
    at: dict[tuple[str, int], int] = field(default_factory=dict)
    end_at: dict[tuple[str, int], int] = field(default_factory=dict)  # … ending there
    notes: list[str] = field(default_factory=list)

    def add(self, kind: str, lane: str, name: str, dur: int, mstart: int,
            family: str | None = None, op_ref: int | None = None,
            nbytes: int | None = None) -> int:
        self.kind.append(kind)
        self.lane.append(lane)
        self.name.append(name)
        self.dur.append(max(0, dur))
        self.mstart.append(mstart)
        self.cons.append([])
        self.family.append(family)
        self.tags.append(set())
        self.nbytes.append(nbytes)
        self.op_ref.append(op_ref)
        return len(self.kind) - 1

    def __len__(self) -> int:
        return len(self.kind)

    def copy(self) -> Graph:
        g = Graph(list(self.kind), list(self.lane), list(self.name), list(self.dur),
                  list(self.mstart), [list(c) for c in self.cons], list(self.family),
                  [set(t) for t in self.tags], list(self.nbytes), list(self.op_ref),
                  dict(self.at), dict(self.end_at), list(self.notes))
        return g


def params() -> dict:
    return load_yaml("replay.yaml")


def rows(store: Store, artifact_id: int) -> int:
    """host_ops + gpu_ops rows of the artifact: the size of its graph."""
    return int(store.sql(
        "SELECT (SELECT count(*) FROM host_ops WHERE artifact_id = $a) + "
        "(SELECT count(*) FROM gpu_ops WHERE artifact_id = $a)", {"a": artifact_id}
    ).fetchall()[0][0])


def build(store: Store, artifact_id: int,
          marks: Mapping[str, set[int]] | None = None) -> Graph:
    """The graph of one artifact (one process's Kineto trace or one nsys report). `marks`:
    per host lane, more times to cut its thread at (the steps' bounds, replay/steps.py)."""
    p = params()["graph"]
    g = Graph()
    threads = _host_threads(store, artifact_id)
    launch_node: dict[int, int] = {}  # host op_id of a launching call → its call node
    blocking: list[tuple[int, int, int]] = []  # (node, call start, call end) of sync calls
    pageable: dict[int, int] = {}  # gpu_op_id of a pageable copy → its call's wait node
    loops: dict[str, list[tuple[int, int]]] = {}  # per lane: its per-tensor collective loops
    for x in collective_loops.loops(store, artifact_id, "host_ops", "gpu_ops"):
        loops.setdefault(x.lane, []).append((x.start_ns, x.end_ns))
    for (pid, tid), ops in threads.items():
        lane = f"T {pid}/{tid}"
        _thread_chain(g, lane, ops, launch_node, blocking, pageable,
                      (marks or {}).get(lane, set()), loops.get(lane, []))
    _thread_waits(g, p)
    gpu = _gpu_ops(store, artifact_id)
    _gpu_nodes(g, gpu, launch_node, pageable, p)
    _sync_waits(g, blocking, p)
    return g


# --------------------------------------------------------------------------- host side

_HostOp = tuple[int, str, str, int, int, int]  # op_id, kind, name, start, end, depth


def _host_threads(store: Store, aid: int) -> dict[tuple[str, str], list[_HostOp]]:
    rows = store.sql(
        "SELECT pid, tid, op_id, kind, name, start_ns, start_ns + dur_ns, depth "
        "FROM host_ops WHERE artifact_id = ? AND dur_ns >= 0 ORDER BY pid, tid, start_ns",
        [aid]).fetchall()
    out: dict[tuple[str, str], list[_HostOp]] = {}
    for pid, tid, op_id, kind, name, s, e, depth in rows:
        out.setdefault((str(pid), str(tid)), []).append((op_id, kind, name, s, e, depth or 0))
    return out


def _thread_chain(g: Graph, lane: str, ops: list[_HostOp], launch_node: dict[int, int],
                  blocking: list[tuple[int, int, int]], pageable: dict[int, int],
                  marks: set[int], loops: list[tuple[int, int]]) -> None:
    """Cut the thread's time at runtime-call and top-level op boundaries (and `marks`, and
    its per-tensor collective loops' bounds) into a chain."""
    dl = re.compile(dataloader_pattern())
    su = [re.compile(x) for x in load_yaml("frames.yaml")["startup"]]
    coll = grad_sync_ops()[1]
    ddp = causes.rules().causes[causes.rules().rank("ddp_bookkeeping")].regex
    short_startup = causes.rules().startup_frame_min_ns
    gr = params()["levers"]["graph-region"]  # the graph-region lever's region and islands
    region = [re.compile(x) for x in gr["regions"]]
    eager = [re.compile(x) for x in gr["eager"]]
    calls = [o for o in ops if o[1] == "runtime"]
    tagged: dict[str, list[tuple[int, int]]] = {"dataloader": [], "startup": [],
                                                "collective": [], "ddp": [],
                                                "graph_region": [], "graph_eager": [],
                                                "collective_loop": list(loops)}
    tag_of: dict[str, str | None] = {}  # op name → its tag (None: neither)
    cuts: set[int] = set()
    top: list[tuple[int, int]] = []
    for _op_id, kind, name, s, e, depth in ops:
        if kind == "runtime" or depth <= 1:
            cuts.update((s, e))
        if depth == 0:
            top.append((s, e))
        if kind != "runtime":
            tag = tag_of.get(name, "")
            if tag == "":  # not seen yet: a thread holds ~10⁵ ops of a few hundred names
                tag = tag_of[name] = ("dataloader" if dl.search(name) else "startup"
                                      if any(x.search(name) for x in su) else "collective"
                                      if name.startswith(coll) else "ddp"
                                      if any(x.search(name) for x in ddp) else "graph_region"
                                      if any(x.search(name) for x in region) else "graph_eager"
                                      if any(x.search(name) for x in eager) else None)
            if tag == "startup" and e - s < short_startup:
                tag = None  # a per-step cache lookup, not compilation (account.yaml)
            if tag is not None:
                tagged[tag].append((s, e))
                cuts.update((s, e))
    if not cuts:
        return
    lo, hi = min(cuts), max(cuts)
    cuts.update(x for x in marks if lo < x < hi)
    cuts.update(x for w in loops for x in w if lo < x < hi)
    points = sorted(cuts)
    bounds = sorted({x for o in ops for x in (o[3], o[4])})
    cover = _merge(top)
    merged = {tag: _merge(spans) for tag, spans in tagged.items()}
    call_at: dict[int, _HostOp] = {}
    for c in calls:  # the outermost call starting at a point names the segment
        call_at.setdefault(c[3], c)
    prev = -1
    open_call: tuple[int, str, int] | None = None  # (op_id, name, end) of the call being cut
    for a, b in zip(points, points[1:], strict=False):
        at = call_at.get(a)
        if at is not None and (open_call is None or a >= open_call[2]):
            open_call = (at[0], at[2], at[4])
        else:
            at = None
        if open_call is not None and a < open_call[2]:
            op_id, cname = open_call[0], open_call[1]
            role = role_of(cname) if at is not None else None
            if role == "async_memcpy":  # the call (launch point), then its return
                n = g.add(CALL, lane, cname, 0, a, op_ref=op_id)
                launch_node[op_id] = n
                _chain(g, prev, n, a)
                g.at[(lane, a)] = n
                prev = n
                pageable[op_id] = n = g.add(CALL, lane, cname + " (return)", b - a, a)
            else:
                n = g.add(CALL, lane, cname, b - a, a, op_ref=op_id)
                if at is not None:
                    launch_node[op_id] = n
                    if role in ("sync", "sync_memcpy"):
                        blocking.append((n, a, b))
        else:
            inside = _inside(cover, a, b)
            n = g.add(CPU if inside else GAP, lane, "" if not inside else "host", b - a, a)
            k = bisect.bisect_right(bounds, a)
            if k >= len(bounds) or bounds[k] >= b:
                g.tags[n].add("quiet")  # no op of this thread begins or ends inside
        for tag, spans in merged.items():
            if spans and _inside(spans, a, b):
                g.tags[n].add(tag)
        g.at.setdefault((lane, a), n)
        g.end_at[(lane, b)] = n
        _chain(g, prev, n, a)
        prev = n


def _chain(g: Graph, prev: int, n: int, a: int) -> None:
    if prev >= 0:
        g.cons[n].append(Cons(prev, True, a - (g.mstart[prev] + g.dur[prev]), "chain"))


def _merge(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for s, e in sorted(spans):
        if out and s <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], e))
        else:
            out.append((s, e))
    return out


def _inside(merged: list[tuple[int, int]], a: int, b: int) -> bool:
    i = bisect.bisect_right(merged, (a, 1 << 62)) - 1
    return i >= 0 and merged[i][0] <= a and b <= merged[i][1]


def _thread_waits(g: Graph, p: dict) -> None:
    """A long gap on one thread that ends just after another thread's op boundary waits on
    it (cross-thread hand-offs the trace does not name)."""
    host = [i for i in range(len(g)) if g.kind[i] not in GPU_KINDS]
    ends = sorted((g.mstart[i] + g.dur[i], i) for i in host if "quiet" not in g.tags[i])
    keys = [e for e, _ in ends]
    for i in host:
        if "quiet" not in g.tags[i] or g.dur[i] < p["thread_wait_gap_min_ns"]:
            continue
        a, b = g.mstart[i], g.mstart[i] + g.dur[i]
        j = bisect.bisect_right(keys, b) - 1
        while j >= 0 and keys[j] >= a and g.lane[ends[j][1]] == g.lane[i]:
            j -= 1
        if j < 0 or keys[j] < a or b - keys[j] > p["wake_window_ns"]:
            continue
        other = ends[j][1]
        g.kind[i] = WAIT
        g.name[i] = f"wait for {g.lane[other]}"
        g.dur[i] = 0
        g.cons[i].append(Cons(other, True, b - keys[j], "thread"))
    _first_wakes(g, host, ends, keys, p)


def _first_wakes(g: Graph, host: list[int], ends: list[tuple[int, int]], keys: list[int],
                 p: dict) -> None:
    """A thread whose first recorded op starts within wake_window_ns after another thread's
    op boundary was woken by it (the autograd thread's first op in a capture, started by the
    main thread's `backward()`): without the constraint its measured start pins the replay
    ("before the lane's first recorded op" on the critical path)."""
    first: dict[str, int] = {}
    for i in host:
        if not g.cons[i] and (g.lane[i] not in first or g.mstart[i] < g.mstart[first[g.lane[i]]]):
            first[g.lane[i]] = i
    for lane, i in first.items():
        b = g.mstart[i]
        j = bisect.bisect_right(keys, b) - 1
        while j >= 0 and g.lane[ends[j][1]] == lane:
            j -= 1
        if j < 0 or b - keys[j] > p["first_wake_window_ns"]:
            continue
        g.cons[i].append(Cons(ends[j][1], True, b - keys[j], "thread"))


# --------------------------------------------------------------------------- GPU side

_GpuOp = tuple[int, int, int, str, str, str | None, int, int, int | None, int | None,
               str | None, bool]


def _gpu_ops(store: Store, aid: int) -> list[_GpuOp]:
    return store.sql(
        "SELECT gpu_op_id, device, stream, kind, name, family, start_ns, dur_ns, "
        "launch_op_id, bytes, mem_kinds, coalesce(via_graph, false) FROM gpu_ops "
        "WHERE artifact_id = ? AND kind IN ('kernel', 'memcpy', 'memset') AND dur_ns >= 0 "
        "ORDER BY start_ns, gpu_op_id", [aid]).fetchall()


def _gpu_nodes(g: Graph, ops: list[_GpuOp], launch_node: dict[int, int],
               pageable: dict[int, int], p: dict) -> None:
    queued_max = p["queued_gap_max_ns"]
    nodes: list[tuple[int, int | None, int | None, int | None]] = []  # node, launch, prev, gap
    last: dict[str, int] = {}
    gaps: list[int] = []
    by_end: dict[int, list[tuple[int, int]]] = {}  # device → (end, node), for cross-stream
    for op_id, dev, stream, kind, name, fam, s, d, launch_op, nbytes, mem, via_graph in ops:
        lane = f"S {dev}/{stream}"
        n = g.add(kind, lane, name, d, s, family=fam, op_ref=op_id, nbytes=nbytes)
        if mem and "Pageable" in mem:
            g.tags[n].add("pageable")
        if via_graph:  # replayed from a CUDA graph: it waits on the graph's earlier kernels
            g.tags[n].add("graph")
        ln = launch_node.get(launch_op) if launch_op is not None else None
        prev = last.get(lane)
        gap = s - (g.mstart[prev] + g.dur[prev]) if prev is not None else None
        if gap is not None and gap <= queued_max:
            gaps.append(gap)
        nodes.append((n, ln, prev, gap))
        last[lane] = n
        by_end.setdefault(dev, []).append((s + d, n))
        if launch_op in pageable:
            _pageable_wait(g, pageable[launch_op], n)
    ends = {dev: sorted(v) for dev, v in by_end.items()}
    decided: list[tuple[int, int | None, int | None, int | None, str]] = []
    lags = []
    for n, ln, prev, gap in nodes:
        lag = g.mstart[n] - g.mstart[ln] if ln is not None else None
        binding = "launch"
        if gap is not None and gap <= queued_max:
            binding = "stream"
        elif lag is None or lag > p["cross_stream_lag_min_ns"]:
            dep = _other_stream_end(g, ends, n, queued_max)
            if dep is not None:
                end = g.mstart[dep] + g.dur[dep]
                g.cons[n].append(Cons(dep, True, g.mstart[n] - end, "event"))
                binding = "event"
            elif gap is not None and lag is not None and gap <= p["lagged_queued_gap_max_ns"]:
                binding = "stream"  # launched long before, started just after its stream's op
        if binding == "launch" and lag is not None:
            lags.append(lag)
        elif binding == "launch":  # launched before the capture: its stream gap stays
            binding = "stream"
        decided.append((n, ln, prev, gap, binding))
    typ_lag = int(median(lags)) if lags else 0  # launch → start when nothing else delayed it
    typ_gap = int(median(gaps)) if gaps else 0  # back-to-back gap on one stream
    for n, ln, prev, gap, binding in decided:
        if ln is not None:
            lag = g.mstart[n] - g.mstart[ln]
            g.cons[n].append(Cons(ln, False, lag if binding == "launch" else min(lag, typ_lag),
                                  "launch"))
        if prev is not None and gap is not None:
            g.cons[n].append(Cons(prev, True, gap if binding == "stream" else min(gap, typ_gap),
                                  "stream"))


def _other_stream_end(g: Graph, ends: dict[int, list[tuple[int, int]]], n: int,
                      window: int) -> int | None:
    dev = g.lane[n].split()[1].split("/")[0]
    arr = next((v for k, v in ends.items() if str(k) == dev), [])
    s = g.mstart[n]
    j = bisect.bisect_right(arr, (s, 1 << 62)) - 1
    while j >= 0 and arr[j][0] >= s - window:
        if g.lane[arr[j][1]] != g.lane[n]:
            return arr[j][1]
        j -= 1
    return None


def _pageable_wait(g: Graph, ret: int, copy: int) -> None:
    """A cudaMemcpyAsync from pageable memory first waits for the stream's earlier work and
    returns once the data is staged: its return waits on the copy's end."""
    if "pageable" not in g.tags[copy]:
        return
    end = g.mstart[ret] + g.dur[ret]
    g.kind[ret] = WAIT
    g.tags[ret].add("pageable-call")
    g.dur[ret] = 0
    g.cons[ret].append(Cons(copy, True, end - (g.mstart[copy] + g.dur[copy]), "sync"))


def _sync_waits(g: Graph, blocking: list[tuple[int, int, int]], p: dict) -> None:
    """A sync call returns when the GPU op it waited for ends: the op that ended last before
    the call returned, launched before the call began, and still running when it began."""
    gpu = sorted((g.mstart[i] + g.dur[i], i) for i in range(len(g)) if g.kind[i] in GPU_KINDS)
    keys = [e for e, _ in gpu]
    launch_start = {}
    for i in range(len(g)):
        if g.kind[i] in GPU_KINDS:
            ln = next((c.pred for c in g.cons[i] if c.why == "launch"), None)
            # no launch call in the capture: launched before it began (carried in — Qwen's 431
            # kernels of the previous forward run during its first cudaDeviceSynchronize)
            launch_start[i] = g.mstart[ln] if ln is not None else -1
    for n, s, e in blocking:
        j = bisect.bisect_right(keys, e + p["sync_slack_ns"]) - 1
        while j >= 0 and keys[j] > s and launch_start[gpu[j][1]] > s:
            j -= 1
        if j < 0 or keys[j] <= s:
            continue  # nothing was running: the call did not block
        op = gpu[j][1]
        g.kind[n] = WAIT
        g.tags[n].add("sync")
        g.dur[n] = 0
        g.cons[n].append(Cons(op, True, e - keys[j], "sync"))

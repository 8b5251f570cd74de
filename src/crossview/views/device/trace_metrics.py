"""Metrics-first summary of the filtered slice: busy %, idle causes, copies, syncs, launches.

All from f_gpu / f_host (scope/resolve.py). Busy time is the union of kernel intervals per
device; idle gaps are the holes in that union, classified by HTA's rule (formats.md): host wait
when the next kernel's launch call started after the GPU went idle, kernel wait when the gap is
shorter than `kernel_wait_max_ns`, other otherwise. `idle_by_stream` is HTA's per-stream form.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import TypedDict

import numpy as np

from crossview.knowledge import api_roles
from crossview.knowledge.thresholds import Thresholds
from crossview.scope.samples import sampled_totals
from crossview.store.kernel_rows import KernelRows, key
from crossview.store.store import Store
from crossview.views import captures


@dataclass
class Idle:
    host_wait_ns: int = 0
    kernel_wait_ns: int = 0
    other_ns: int = 0

    @property
    def total_ns(self) -> int:
        return self.host_wait_ns + self.kernel_wait_ns + self.other_ns


@dataclass
class DeviceMetrics:
    artifact: str
    device: int
    name: str
    kernel_count: int
    kernel_time_ns: int
    kernel_span_ns: int
    kernel_busy_ns: int
    kernel_busy_pct: float
    first_ns: int
    last_ns: int
    idle: Idle


@dataclass
class StreamIdle:
    artifact: str
    device: int
    stream: int
    kernel_count: int
    idle: Idle


@dataclass
class CopyStats:
    kind: str  # memcpy | memset
    copy_kind: str  # HtoD, DtoH, DtoD, … ("" for memset)
    mem_kinds: str  # e.g. "Pageable -> Device"
    count: int
    time_ns: int
    bytes: int | None


@dataclass
class ApiStats:
    name: str
    role: str
    count: int
    time_ns: int


@dataclass
class LaunchStats:
    launch_calls: int
    launch_time_ns: int
    graph_launches: int
    kernels_via_graph: int
    kernels_launch_not_captured: int
    short_kernels: int  # shorter than thresholds.short_kernel_ns
    short_kernel_ns: int
    median_kernel_ns: int
    median_launch_ns: int


@dataclass
class Metrics:
    kernel_count: int
    kernel_time_ns: int
    kernel_span_ns: int
    kernel_busy_ns: int
    kernel_busy_pct: float
    idle: Idle
    cpu_only: bool
    host_time_ns: int
    host_span_ns: int
    devices: list[DeviceMetrics] = field(default_factory=list)
    idle_by_stream: list[StreamIdle] = field(default_factory=list)
    copies: list[CopyStats] = field(default_factory=list)
    sync_apis: list[ApiStats] = field(default_factory=list)
    launch: LaunchStats | None = None
    # CPU sampling in scope (nsys, rigor L1): samples and their weighted time (samples × the
    # capture's sampling period, an estimate)
    cpu_samples: int = 0
    cpu_sampled_ns: int = 0
    # sampled GPU stacks (folded / speedscope / pprof whose leaves are kernels, L1): no timeline
    gpu_samples: int = 0
    gpu_sampled_ns: int = 0
    # no timeline at all in scope, only summary tables (nsys stats CSV): nothing to time
    summary_only: bool = False

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


Gap = tuple[int, int | None, int | None, int, int, int, int, int, int, int]


def _gaps(k: KernelRows, kw: int) -> tuple[list[Gap], list[Gap]]:
    """Idle gaps per device and per stream: rows (artifact_id, device, stream (None per
    device), kernels, kernel ns, first ns, last ns, host wait ns, kernel wait ns, other ns),
    ordered by their keys. A gap opens before a kernel that starts after every earlier kernel
    of its partition (ordered by start, end) has ended."""
    if len(k) == 0:
        return [], []
    by_device = _lexsort((k.e, k.s, k.dev, k.art))
    by_stream = _lexsort((k.e, k.s, k.stream, k.dev, k.art))
    return _partition_gaps(k, False, by_device, kw), _partition_gaps(k, True, by_stream, kw)


def _lexsort(keys: tuple[np.ndarray, ...]) -> np.ndarray | None:
    """np.lexsort without the keys that hold one value (one artifact, one device): the same
    order, a sort pass less per such key; None where the rows are in that order already
    (the stable sort's identity: kernels come in start order, no sort and no gathers)."""
    keys = tuple(x for x in keys if len(x) and not (x == x[0]).all()) or keys[:1]
    return None if _in_order(keys) else np.lexsort(keys)


def _in_order(keys: tuple[np.ndarray, ...]) -> bool:
    """Whether the rows are sorted by the keys (np.lexsort's: the last key first)."""
    bad = np.zeros(max(len(keys[0]) - 1, 0), dtype=bool)
    eq = np.ones(len(bad), dtype=bool)
    for x in reversed(keys):
        bad |= eq & (x[1:] < x[:-1])
        if bad.any():
            return False
        eq &= x[1:] == x[:-1]
    return True


def _partition_gaps(k: KernelRows, per_stream: bool, order: np.ndarray | None,
                    kw: int) -> list[Gap]:
    def take(x: np.ndarray) -> np.ndarray:  # rows in order already (None): no gather
        return x if order is None else x[order]

    a, d = take(k.art), take(k.dev)
    st = take(k.stream) if per_stream else np.zeros(len(k.s), dtype=np.int64)
    s, e, launched, ls = take(k.s), take(k.e), take(k.launched), take(k.ls)
    new = np.r_[True, (a[1:] != a[:-1]) | (d[1:] != d[:-1]) | (st[1:] != st[:-1])]
    bounds = np.r_[np.nonzero(new)[0], len(s)]
    rows: list[Gap] = []
    for lo, hi in zip(bounds[:-1], bounds[1:], strict=True):
        ps, pe = s[lo:hi], e[lo:hi]
        prev_end = np.maximum.accumulate(pe)[:-1]  # before each kernel but the first
        gap = ps[1:] - prev_end
        opened = gap > 0
        host = opened & launched[lo + 1:hi] & (ls[lo + 1:hi] > prev_end)
        rest = opened & ~host
        rows.append((int(a[lo]), key(d[lo]), key(st[lo]) if per_stream else None,
                     int(hi - lo), int((pe - ps).sum()), int(ps.min()), int(pe.max()),
                     int(gap[host].sum()), int(gap[rest & (gap < kw)].sum()),
                     int(gap[rest & (gap >= kw)].sum())))
    return rows


def compute(store: Store, limits: Thresholds, kernels: KernelRows | None = None) -> Metrics:
    """`kernels`: f_gpu's kernels when the caller has them (else read here)."""
    paths = captures.paths(store)
    names = {(a, d): n for a, d, n in store.sql(
        "SELECT artifact_id, device, coalesce(name, '') FROM devices").fetchall()}
    kw = int(limits.kernel_wait_max_ns)
    devices: list[DeviceMetrics] = []
    per_device, per_stream = _gaps(kernels if kernels is not None else KernelRows(store), kw)
    for a, d, _, n, t, first, last, hw, kwt, oth in per_device:
        span = int(last - first)
        idle = Idle(int(hw), int(kwt), int(oth))
        busy = span - idle.total_ns
        devices.append(DeviceMetrics(
            artifact=paths[a], device=int(d) if d is not None else -1,
            name=names.get((a, d), ""), kernel_count=int(n), kernel_time_ns=int(t),
            kernel_span_ns=span, kernel_busy_ns=busy,
            kernel_busy_pct=round(100.0 * busy / span, 4) if span else 0.0,
            first_ns=int(first), last_ns=int(last), idle=idle,
        ))
    streams = [
        StreamIdle(paths[a], int(d) if d is not None else -1,
                   int(s) if s is not None else -1, int(n), Idle(int(hw), int(kwt), int(oth)))
        for a, d, s, n, _t, _f, _l, hw, kwt, oth in per_stream
    ]
    span = sum(x.kernel_span_ns for x in devices)
    busy = sum(x.kernel_busy_ns for x in devices)
    host_time, host_first, host_last = store.sql(
        "SELECT coalesce(sum(self_ns), 0), min(start_ns), max(start_ns + dur_ns) FROM f_host"
    ).fetchall()[0]
    return Metrics(
        kernel_count=sum(x.kernel_count for x in devices),
        kernel_time_ns=sum(x.kernel_time_ns for x in devices),
        kernel_span_ns=span,
        kernel_busy_ns=busy,
        kernel_busy_pct=round(100.0 * busy / span, 4) if span else 0.0,
        idle=Idle(
            sum(x.idle.host_wait_ns for x in devices),
            sum(x.idle.kernel_wait_ns for x in devices),
            sum(x.idle.other_ns for x in devices),
        ),
        # host events but no GPU ops; a bundle with no trace at all (metrics only) is not
        # "CPU-only" (Views.has_trace tells that case)
        cpu_only=not devices and not sampled_totals(store, "gpu")[0]
        and (host_first is not None or sampled_totals(store)[0] > 0),
        host_time_ns=int(host_time),
        host_span_ns=int(host_last - host_first) if host_first is not None else 0,
        devices=devices,
        idle_by_stream=streams,
        copies=_copies(store),
        sync_apis=_sync_apis(store),
        launch=_launch(store, limits) if devices else None,
        **_sampled(store, has_host=host_first is not None),
    )


class _Sampled(TypedDict):
    cpu_samples: int
    cpu_sampled_ns: int
    gpu_samples: int
    gpu_sampled_ns: int
    summary_only: bool


def _sampled(store: Store, has_host: bool) -> _Sampled:
    n, t = sampled_totals(store)
    gpu_rows = store.sql("SELECT count(*) FROM f_gpu").fetchall()[0][0]
    summaries = store.sql(
        "SELECT count(*) FROM summary_stats WHERE artifact_id IN"
        " (SELECT artifact_id FROM artifacts WHERE status = 'ok')").fetchall()[0][0]
    gn, gt = sampled_totals(store, "gpu")
    return {"cpu_samples": int(n), "cpu_sampled_ns": int(t), "gpu_samples": gn,
            "gpu_sampled_ns": gt,
            "summary_only": bool(summaries) and not (n or gn or gpu_rows or has_host)}


def _copies(store: Store) -> list[CopyStats]:
    return [
        CopyStats(k, ck or "", mk or "", int(n), int(t), int(b) if b is not None else None)
        for k, ck, mk, n, t, b in store.sql(
            "SELECT kind, copy_kind, mem_kinds, count(*), sum(dur_ns), sum(bytes) FROM f_gpu"
            " WHERE kind IN ('memcpy', 'memset') GROUP BY ALL ORDER BY 5 DESC"
        ).fetchall()
    ]


def _sync_apis(store: Store) -> list[ApiStats]:
    roles = {n: r for r in ("sync", "sync_memcpy", "sync_ops", "async_memcpy")
             for n in api_roles.names_with_role(r)}
    rows = store.sql(
        "SELECT name, count(*), sum(dur_ns) FROM f_host WHERE name IN (SELECT unnest($n))"
        " GROUP BY name ORDER BY 3 DESC",
        {"n": list(roles)},
    ).fetchall()
    return [ApiStats(n, roles[n], int(c), int(t)) for n, c, t in rows]


def _launch(store: Store, limits: Thresholds) -> LaunchStats:
    launch = api_roles.names_with_role("launch")
    graph = api_roles.names_with_role("graph_launch")
    lc, lt, ml = store.sql(
        "SELECT count(*), coalesce(sum(dur_ns), 0), coalesce(median(dur_ns), 0) FROM f_host"
        " WHERE kind = 'runtime' AND name IN (SELECT unnest($n))", {"n": launch},
    ).fetchall()[0]
    gl = store.sql(
        "SELECT count(*) FROM f_host WHERE kind = 'runtime' AND name IN (SELECT unnest($n))",
        {"n": graph},
    ).fetchall()[0][0]
    vg, nc, short, med = store.sql(
        "SELECT count(*) FILTER (via_graph), count(*) FILTER (launch_op_id IS NULL),"
        " count(*) FILTER (dur_ns < $s), coalesce(median(dur_ns), 0)"
        " FROM f_gpu WHERE kind = 'kernel'", {"s": int(limits.short_kernel_ns)},
    ).fetchall()[0]
    return LaunchStats(
        launch_calls=int(lc), launch_time_ns=int(lt), graph_launches=int(gl),
        kernels_via_graph=int(vg), kernels_launch_not_captured=int(nc),
        short_kernels=int(short), short_kernel_ns=int(limits.short_kernel_ns),
        median_kernel_ns=int(med), median_launch_ns=int(ml),
    )

"""Metrics-first summary of the filtered slice: busy %, idle causes, copies, syncs, launches.

All from f_gpu / f_host (scope/resolve.py). Busy time is the union of kernel intervals per
device; idle gaps are the holes in that union, classified by HTA's rule (formats.md): host wait
when the next kernel's launch call started after the GPU went idle, kernel wait when the gap is
shorter than `kernel_wait_max_ns`, other otherwise. `idle_by_stream` is HTA's per-stream form.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import TypedDict

from crossview.knowledge import api_roles
from crossview.knowledge.thresholds import Thresholds
from crossview.scope.samples import sampled_totals
from crossview.store.store import Store


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


_GAPS_SQL = """
WITH k AS (
    SELECT g.artifact_id, g.device, g.stream, g.start_ns AS s, g.start_ns + g.dur_ns AS e,
           h.start_ns AS launch_ns
    FROM f_gpu g LEFT JOIN host_ops h ON h.op_id = g.launch_op_id
    WHERE g.kind = 'kernel'
), w AS (
    SELECT *, max(e) OVER (PARTITION BY {part} ORDER BY s, e
                           ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS prev_end
    FROM k
)
SELECT {part}, count(*) AS n, sum(e - s) AS t, min(s) AS first, max(e) AS last,
    sum(CASE WHEN s > prev_end AND launch_ns > prev_end THEN s - prev_end ELSE 0 END) AS hw,
    sum(CASE WHEN s > prev_end AND NOT coalesce(launch_ns > prev_end, false)
             AND s - prev_end < {kw} THEN s - prev_end ELSE 0 END) AS kw,
    sum(CASE WHEN s > prev_end AND NOT coalesce(launch_ns > prev_end, false)
             AND s - prev_end >= {kw} THEN s - prev_end ELSE 0 END) AS other
FROM w GROUP BY ALL ORDER BY ALL
"""


def compute(store: Store, limits: Thresholds) -> Metrics:
    paths = dict(store.sql("SELECT artifact_id, path FROM artifacts").fetchall())
    names = {(a, d): n for a, d, n in store.sql(
        "SELECT artifact_id, device, coalesce(name, '') FROM devices").fetchall()}
    kw = int(limits.kernel_wait_max_ns)
    devices: list[DeviceMetrics] = []
    for a, d, n, t, first, last, hw, kwt, oth in store.sql(
        _GAPS_SQL.format(part="artifact_id, device", kw=kw)
    ).fetchall():
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
        for a, d, s, n, _t, _f, _l, hw, kwt, oth in store.sql(
            _GAPS_SQL.format(part="artifact_id, device, stream", kw=kw)
        ).fetchall()
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

"""Devices, streams, processes and ranks ranked by GPU time and CPU time under the filter:
where a multi-process / multi-GPU bundle spends its time, to pick the filter for a closer
look (MCP `topentities`). GPU time is kernel ns (f_gpu), CPU time host self ns (f_host); a
process's GPU time is that of the kernels its threads launched."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from crossview.store.store import Store

_GPU = ("sum(g.dur_ns) FILTER (g.kind = 'kernel') AS gpu_kernel_ns,"
        " count(*) FILTER (g.kind = 'kernel') AS kernels")


@dataclass(frozen=True)
class DeviceTime:
    path: str
    rank: int | None
    device: int | None
    gpu_kernel_ns: int | None  # None: no kernel in scope on this device
    kernels: int
    gpu_all_ops_ns: int  # kernels, copies, memsets, syncs


@dataclass(frozen=True)
class StreamTime:
    path: str
    device: int | None
    stream: int | None
    gpu_kernel_ns: int | None
    kernels: int


@dataclass(frozen=True)
class ProcessTime:
    path: str
    pid: str
    threads: int
    cpu_self_ns: int
    gpu_kernel_ns: int | None  # of the kernels this process launched; None: none linked


@dataclass(frozen=True)
class RankTime:
    path: str
    rank: int | None
    world_size: int | None
    gpu_kernel_ns: int | None
    cpu_self_ns: int | None


@dataclass(frozen=True)
class TopEntities:
    devices: list[DeviceTime]
    streams: list[StreamTime]
    processes: list[ProcessTime]
    ranks: list[RankTime]  # every artifact read ok, with or without time in scope

    def to_dict(self) -> dict[str, list[dict[str, Any]]]:
        return {k: [asdict(r) for r in getattr(self, k)]
                for k in ("devices", "streams", "processes", "ranks")}


def top_entities(store: Store, top: int) -> TopEntities:
    """The `top` largest of each, GPU kernel time first."""
    def rows(sql: str) -> list[tuple[Any, ...]]:
        return store.sql(sql + f" LIMIT {int(top)}").fetchall()

    return TopEntities(
        [DeviceTime(*r) for r in rows(
            f"SELECT a.path, a.rank, g.device, {_GPU}, sum(g.dur_ns) AS gpu_all_ops_ns FROM"
            " f_gpu g JOIN artifacts a USING (artifact_id) GROUP BY ALL"
            " ORDER BY 4 DESC NULLS LAST")],
        [StreamTime(*r) for r in rows(
            f"SELECT a.path, g.device, g.stream, {_GPU} FROM f_gpu g JOIN artifacts a USING"
            " (artifact_id) GROUP BY ALL ORDER BY 4 DESC NULLS LAST")],
        [ProcessTime(*r) for r in rows(
            "WITH c AS (SELECT artifact_id, pid, sum(self_ns) AS cpu_self_ns,"
            " count(DISTINCT tid) AS threads FROM f_host GROUP BY ALL),"
            " k AS (SELECT h.artifact_id, h.pid, sum(g.dur_ns) AS gpu_kernel_ns FROM"
            " f_gpu g JOIN host_ops h ON h.op_id = g.launch_op_id AND h.artifact_id ="
            " g.artifact_id WHERE g.kind = 'kernel' GROUP BY ALL)"
            " SELECT a.path, c.pid, c.threads, c.cpu_self_ns, k.gpu_kernel_ns FROM c"
            " JOIN artifacts a USING (artifact_id) LEFT JOIN k USING (artifact_id, pid)"
            " ORDER BY k.gpu_kernel_ns DESC NULLS LAST, c.cpu_self_ns DESC")],
        [RankTime(*r) for r in rows(
            "SELECT a.path, a.rank, a.world_size, (SELECT sum(dur_ns) FROM f_gpu g"
            " WHERE g.artifact_id = a.artifact_id AND g.kind = 'kernel') AS"
            " gpu_kernel_ns, (SELECT sum(self_ns) FROM f_host h WHERE h.artifact_id"
            " = a.artifact_id) AS cpu_self_ns FROM artifacts a WHERE a.status = 'ok'"
            " ORDER BY 4 DESC NULLS LAST")])

"""The timeline in scope as event rows, for a timeline exporter (export/perfetto.py): every
host event under the filter (f_host) per process and thread in time order, every GPU op
(f_gpu: kernels, copies, memsets, syncs) per device and stream in time order, streamed in
batches (a trace holds millions of events)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, NamedTuple, TypeVar

import duckdb

from crossview.store.store import Store

BATCH = 100_000
R = TypeVar("R")


class HostEvent(NamedTuple):
    artifact_id: int
    op_id: int
    pid: str
    tid: str
    kind: str
    name: str
    start_ns: int
    dur_ns: int
    launches: bool  # a GPU op in scope names it as its launch call


class GpuEvent(NamedTuple):
    artifact_id: int
    gpu_op_id: int
    device: int | None
    stream: int | None
    kind: str  # kernel | memcpy | memset | sync
    name: str
    family: str | None
    start_ns: int
    dur_ns: int
    launch_op_id: int | None
    via_graph: bool | None
    bytes: int | None
    grid: str | None  # as stored ("[x,y,z]")
    block: str | None
    regs: int | None
    collective: str | None


def time_base_ns(store: Store) -> int | None:
    """The earliest start of a host event or GPU op in scope; None when there is none."""
    got = store.sql("SELECT least((SELECT min(start_ns) FROM f_host),"
                    " (SELECT min(start_ns) FROM f_gpu))").fetchall()[0][0]
    return None if got is None else int(got)


def artifacts(store: Store) -> set[int]:
    """The artifacts with a host event or GPU op in scope."""
    return {int(a) for (a,) in store.sql("SELECT artifact_id FROM f_host UNION "
                                         "SELECT artifact_id FROM f_gpu").fetchall()}


def host_events(store: Store, batch: int = BATCH) -> Iterator[list[HostEvent]]:
    """Host events in scope by artifact, process, thread, start (the longer first)."""
    cur = store.sql(
        "SELECT h.artifact_id, h.op_id, h.pid, h.tid, h.kind, h.name, h.start_ns, h.dur_ns,"
        " h.op_id IN (SELECT launch_op_id FROM f_gpu WHERE launch_op_id IS NOT NULL)"
        " FROM f_host h ORDER BY h.artifact_id, h.pid, h.tid, h.start_ns, h.dur_ns DESC")
    return _batches(cur, batch, HostEvent._make)


def gpu_events(store: Store, batch: int = BATCH) -> Iterator[list[GpuEvent]]:
    """GPU ops in scope by artifact, device, stream, start."""
    cur = store.sql(
        "SELECT artifact_id, gpu_op_id, device, stream, kind, name, family, start_ns, dur_ns,"
        " launch_op_id, via_graph, bytes, grid, block, regs, collective FROM f_gpu"
        " ORDER BY artifact_id, device, stream, start_ns")
    return _batches(cur, batch, GpuEvent._make)


def _batches(cur: duckdb.DuckDBPyConnection, batch: int, make: Callable[[Any], R]
             ) -> Iterator[list[R]]:
    while rows := cur.fetchmany(batch):
        yield list(map(make, rows))

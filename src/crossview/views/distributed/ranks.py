"""Per-rank summaries: GPU busy/idle, communication time and how much of it is exposed.

`summarize(store, artifact_id)` is a plain function of one artifact's store: a process pool
or Dask worker can read one rank file into its own Store, call it with scoped=False (gpu_ops), and
ship the small `RankSummary` back; `views/distributed/crossrank.py` merges any number of them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from crossview.intervals import merge, overlap
from crossview.store.store import Store
from crossview.views.distributed.collectives import CollectiveCall, calls_of

# vLLM and torch.distributed launchers name per-rank traces `…-rank-3…`, `…rank3…`,
# `…_rank_3…`; used only when the trace's distributedInfo has no rank
_RANK_IN_NAME = re.compile(r"(?:^|[^a-z])rank[-_]?(\d+)", re.IGNORECASE)


def rank_from_name(path: str) -> int | None:
    m = _RANK_IN_NAME.search(Path(path).name)
    return int(m.group(1)) if m else None


@dataclass
class RankSummary:
    artifact_id: int
    path: str
    rank: int
    rank_source: str  # distributedInfo | file name
    world_size: int | None
    busy_ns: int  # union of kernel intervals, summed over the rank's devices
    span_ns: int  # first kernel start → last kernel end, summed over devices
    comm_time_ns: int  # union of communication kernels
    exposed_comm_ns: int  # communication with no compute kernel running on the device
    first_ns: int  # the rank's first kernel start (its own clock)
    last_ns: int
    collectives: list[CollectiveCall] = field(default_factory=list)

    @property
    def kernel_busy_pct(self) -> float:
        return 100.0 * self.busy_ns / self.span_ns if self.span_ns else 0.0

    def to_dict(self) -> dict[str, object]:
        return {
            "rank": self.rank, "path": self.path, "rank_source": self.rank_source,
            "world_size": self.world_size, "kernel_busy_pct": round(self.kernel_busy_pct, 2),
            "busy_ns": self.busy_ns, "idle_ns": self.span_ns - self.busy_ns,
            "span_ns": self.span_ns, "comm_time_ns": self.comm_time_ns,
            "exposed_comm_ns": self.exposed_comm_ns,
            "overlapped_comm_ns": self.comm_time_ns - self.exposed_comm_ns,
            "collectives": len(self.collectives),
        }


def identify(store: Store, artifact_id: int) -> tuple[str, int | None, str, int | None]:
    """(path, rank, where the rank came from, world size) of one artifact."""
    path, rank, world = store.sql(
        "SELECT path, rank, world_size FROM artifacts WHERE artifact_id = $a",
        {"a": artifact_id}).fetchall()[0]
    if rank is not None:
        return path, int(rank), "distributedInfo", world
    return path, rank_from_name(path), "file name", world


def summarize(store: Store, artifact_id: int, scoped: bool = True) -> RankSummary | None:
    """None when the artifact has no rank (neither distributedInfo nor `rank<N>` in its name)
    or no kernels."""
    path, rank, source, world = identify(store, artifact_id)
    if rank is None:
        return None
    busy = span = comm = exposed = 0
    first, last = None, None
    table = "f_gpu" if scoped else "gpu_ops"  # the filter's GPU ops, or all of them
    devs = store.sql(f"SELECT DISTINCT device FROM {table} WHERE artifact_id = $a"
                     " AND kind = 'kernel' ORDER BY 1", {"a": artifact_id}).fetchall()
    for (d,) in devs:
        k = store.sql(
            f"SELECT start_ns, start_ns + dur_ns AS e, family = 'comm' AS c FROM {table}"
            " WHERE kind = 'kernel' AND artifact_id = $a AND device = $d",
            {"a": artifact_id, "d": d}).fetchnumpy()
        s = np.asarray(k["start_ns"], dtype=np.int64)
        e = np.asarray(k["e"], dtype=np.int64)
        c = np.asarray(k["c"], dtype=bool)
        bs, be = merge(s, e)
        cs, ce = merge(s[c], e[c])
        ns_, ne = merge(s[~c], e[~c])
        busy += int((be - bs).sum())
        span += int(be[-1] - bs[0])
        comm += int((ce - cs).sum())
        exposed += int((ce - cs).sum()) - int(overlap(cs, ce, ns_, ne).sum())
        first = int(bs[0]) if first is None else min(first, int(bs[0]))
        last = int(be[-1]) if last is None else max(last, int(be[-1]))
    if first is None or last is None:
        return None
    return RankSummary(artifact_id, path, rank, source, world, busy, span, comm, exposed,
                       first, last, calls_of(store, artifact_id, scoped))

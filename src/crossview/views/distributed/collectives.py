"""Collective calls of one rank (one artifact), in order: what cross-rank alignment matches.

A plain function of one artifact's store, so per-rank work can run anywhere (a process pool,
a Dask worker) and only these small records travel to the merge (views/distributed/crossrank.py).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import asdict, dataclass

from crossview.knowledge.collectives import collective_type
from crossview.store.store import Store

# a GPU op `g`'s launch call `r` and the op holding it, `lp` (ProcessGroupNCCL's
# `nccl:all_reduce` range: lp.name names the collective, knowledge/collectives.py `typed`)
LAUNCH_OP_JOIN = ("LEFT JOIN host_ops r ON r.op_id = g.launch_op_id"
                  " LEFT JOIN host_ops lp ON lp.op_id = r.parent")


@dataclass(frozen=True)
class CollectiveCall:
    """One communication kernel on one rank. `group` is the process group when the trace
    names it ("pg 0"), else the stream ("stream 40"): each group runs its collectives in
    program order, so the n-th call of a type in a group is the same collective on every
    rank. `seq` is the collective's sequence number when the trace records it ("Seq")."""

    op: str  # collective type: allreduce, allgather, sendrecv, …
    group: str
    index: int  # 0-based order of this call among the rank's calls with the same (group, op)
    seq: int | None
    start_ns: int
    end_ns: int
    name: str  # kernel name
    device: int = -1  # the kernel's device (-1: not recorded)
    gpu_op_id: int = -1  # its gpu_ops row: the replay graph joins ranks at this node

    @property
    def key(self) -> tuple[str, str]:
        return self.group, self.op

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


def calls_of(store: Store, artifact_id: int, scoped: bool = True) -> list[CollectiveCall]:
    """Communication kernels of one artifact in start order, numbered per (group, type).
    `scoped`: f_gpu (the resolved filter), else gpu_ops (a worker's own store, no filter)."""
    table = "f_gpu" if scoped else "gpu_ops"
    # the type: the kernel's args, else the op holding its launch call (collectives.yaml)
    rows = store.sql(
        "SELECT g.collective, g.process_group, g.stream, g.coll_seq, g.start_ns,"
        " g.start_ns + g.dur_ns, g.name, lp.name, g.device, g.gpu_op_id"
        f" FROM {table} g {LAUNCH_OP_JOIN}"
        " WHERE g.artifact_id = $a AND g.kind = 'kernel' AND g.family = 'comm'"
        " ORDER BY g.start_ns, g.gpu_op_id", {"a": artifact_id},
    ).fetchall()
    count: dict[tuple[str, str], int] = defaultdict(int)
    out: list[CollectiveCall] = []
    for coll, pg, stream, seq, s, e, name, launch_op, dev, op_id in rows:
        op = collective_type(coll, name or "", launch_op)
        group = f"pg {pg}" if pg not in (None, "") else f"stream {stream}"
        i = count[(group, op)]
        count[(group, op)] += 1
        out.append(CollectiveCall(op, group, i, None if seq is None else int(seq),
                                  int(s), int(e), name or "",
                                  -1 if dev is None else int(dev), int(op_id)))
    return out

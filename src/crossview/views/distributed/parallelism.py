"""Which parallelism a capture runs, from what it shows: the module and op names on its host
side (knowledge/ranks.yaml `parallelism`: Megatron's `_ReduceFromModelParallelRegion` and
`ColumnParallelLinear` are tensor parallel, `FullyShardedDataParallel` FSDP, a pipeline
schedule's p2p ops pipeline, `DistributedDataParallel` data parallel), else its collective
kinds (send/recv: pipeline; all-gather with reduce-scatter: FSDP; all-reduce: data
parallel). The communication fix follows it (fixes.yaml `nccl-collective-bound` variants):
DDP buckets do nothing for a tensor-parallel forward.
"""

from __future__ import annotations

from dataclasses import dataclass

from crossview.knowledge.collectives import collective_type
from crossview.knowledge.loader import load_typed
from crossview.store.store import Store


@dataclass(frozen=True)
class Parallelism:
    kind: str | None  # tensor-parallel | fsdp | pipeline | data-parallel | None: unknown
    evidence: str  # the frame or collectives that said so

    def to_dict(self) -> dict[str, object]:
        return {"kind": self.kind, "evidence": self.evidence}


def detect(store: Store) -> Parallelism:
    """From the filter's host ops (f_host) and communication kernels (f_gpu)."""
    kinds = load_typed("ranks.yaml").parallelism
    names = [str(n) for (n,) in store.sql(
        "SELECT DISTINCT name FROM f_host WHERE kind IN ('op', 'python', 'annotation')"
        " LIMIT 20000").fetchall()]
    for kind, spec in kinds.items():
        hit = next((n for n in names for f in spec.frames if f in n), None)
        if hit is not None:
            return Parallelism(kind, f"host frame `{hit[:80]}`")
    colls = {collective_type(c, str(n or "")) for c, n in store.sql(
        "SELECT DISTINCT collective, name FROM f_gpu WHERE kind = 'kernel'"
        " AND family = 'comm' LIMIT 1000").fetchall()}
    if colls & {"sendrecv", "send", "recv"} and not colls - {"sendrecv", "send", "recv"}:
        return Parallelism("pipeline", "only send/recv collectives")
    if {"allgather", "reducescatter"} <= colls:
        return Parallelism("fsdp", "all-gather and reduce-scatter collectives")
    return Parallelism(None, "no parallelism frame recorded")

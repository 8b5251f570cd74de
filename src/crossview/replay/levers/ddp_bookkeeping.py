"""ddp-bookkeeping: DistributedDataParallel without its per-step host bookkeeping —
`broadcast_buffers=False` (no flatten / broadcast / unflatten of the buffers before each
forward) and `gradient_as_bucket_view=True` (no copy of each bucket back into `.grad`). The
host time inside those frames (account.yaml `ddp_bookkeeping`, tagged "ddp" by the graph) and
the copies launched there go; the buffer broadcast's own NCCL kernel stays (a lower bound)."""

from __future__ import annotations

from crossview.replay.graph import CALL, CPU, GPU_KINDS, Graph
from crossview.replay.levers.common import LeverContext, LeverUnavailable

NAME = "ddp-bookkeeping"
SUMMARY = "DDP with broadcast_buffers=False, gradient_as_bucket_view=True"


def apply(g: Graph, param: str | None, ctx: LeverContext) -> str:
    host = gpu = n = 0
    dropped: set[int] = set()
    for i in range(len(g)):
        if g.kind[i] in (CPU, CALL) and "ddp" in g.tags[i]:
            host += g.dur[i]
            g.dur[i] = 0
            dropped.add(i)
            n += 1
    if not n:
        raise LeverUnavailable(f"{NAME}: no DDP buffer-broadcast or gradient-copy frames "
                               "(knowledge/account.yaml `ddp_bookkeeping`) in this capture")
    for i in range(len(g)):
        if g.kind[i] in GPU_KINDS and any(c.why == "launch" and c.pred in dropped
                                          for c in g.cons[i]):
            gpu += g.dur[i]
            g.dur[i] = 0
    return (f"{n} host segments of DDP bookkeeping: {host / 1e6:.2f} ms of host time and "
            f"{gpu / 1e6:.2f} ms of the GPU copies they launch removed")

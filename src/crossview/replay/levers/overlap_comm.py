"""overlap-comm: collective kernels overlap with compute; a share of each collective's time
(at most the compute on the device's other streams while it ran) stops delaying the ops
that waited on it."""

from __future__ import annotations

from crossview.replay.graph import KERNEL, Graph
from crossview.replay.levers.common import LeverContext, LeverUnavailable, bounded, number

NAME = "overlap-comm"
SUMMARY = "communication overlapped with compute"
PARAM_IS = "max_hidden_share"
UNKNOWNS = {"max_hidden_share": "the share of each collective compute can hide (the bucket "
            "count is not in the trace)"}
_COMM = ("comm", "nccl", "collective", "communication")


def apply(g: Graph, param: str | None, ctx: LeverContext) -> str:
    share = number(NAME, param, bounded(NAME, "max_hidden_share", ctx))
    idx = [i for i in range(len(g)) if g.kind[i] == KERNEL and (
        (g.family[i] or "").lower() in _COMM or "nccl" in g.name[i].lower())]
    if not idx:
        raise LeverUnavailable(f"{NAME}: no collective (NCCL/RCCL) kernels in this capture")
    hidden = 0
    for i in idx:
        h = int(g.dur[i] * min(1.0, share))
        g.dur[i] -= h
        hidden += h
    return f"{len(idx)} collective kernels: {hidden / 1e6:.2f} ms hidden behind compute"

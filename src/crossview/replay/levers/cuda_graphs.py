"""cuda-graphs: the step's kernel launches are replayed from a CUDA graph, so each kernel
costs the host the graph's per-kernel launch cost instead of its own launch call."""

from __future__ import annotations

from crossview.knowledge.api_roles import role_of
from crossview.replay.graph import CALL, Graph
from crossview.replay.levers.common import LeverContext, LeverUnavailable, bounded, number

NAME = "cuda-graphs"
SUMMARY = "launch calls cost the CUDA graph's per-kernel cost"
PARAM_IS = "per_kernel_us"
UNKNOWNS = {"per_kernel_us": "the host cost per kernel of a graph launch on this GPU and "
            "driver (measured once, on MI300X)"}


def apply(g: Graph, param: str | None, ctx: LeverContext) -> str:
    per = int(number(NAME, param, bounded(NAME, "per_kernel_us", ctx)) * 1e3)
    n = saved = 0
    for i in range(len(g)):
        if g.kind[i] == CALL and role_of(g.name[i]) == "launch" and g.dur[i] > per:
            saved += g.dur[i] - per
            g.dur[i] = per
            n += 1
    if not n:
        raise LeverUnavailable(f"{NAME}: no kernel launch calls costing more than "
                               f"{per / 1e3:.1f} µs on the host side of this capture")
    return f"{n} launch calls: {saved / 1e6:.2f} ms of host launch time removed"

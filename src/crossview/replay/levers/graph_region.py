"""graph-region: a region of the step runs as CUDA graphs (vLLM without --enforce-eager: the
model forward, piecewise, attention eager between the pieces). Inside the region (replay.yaml
`levers.graph-region.regions`, the graph's "graph_region" tag) the host's own time goes except
in the eager islands (`eager`, tag "graph_eager"); each kernel launch there costs the graph's
per-kernel host cost (cuda-graphs `per_kernel_us`; PARAM overrides it, in µs). The kernels
keep their durations and stream order; nothing outside the region changes."""

from __future__ import annotations

from crossview.knowledge.api_roles import role_of
from crossview.replay.graph import CALL, CPU, Graph
from crossview.replay.levers.common import LeverContext, LeverUnavailable, bounded, number

NAME = "graph-region"
SUMMARY = "the step's graphable region replayed as CUDA graphs (eager islands kept)"
PARAM_IS = "per_kernel_us"
DEFAULTS_OF = "cuda-graphs"  # its unknown is cuda-graphs' per-kernel cost
UNKNOWNS = {"per_kernel_us": "the host cost per kernel of a graph launch on this GPU and "
            "driver (measured once, on MI300X)"}


def apply(g: Graph, param: str | None, ctx: LeverContext) -> str:
    per = int(number(NAME, param, bounded("cuda-graphs", "per_kernel_us", ctx)) * 1e3)
    host = launches = n = 0
    for i in range(len(g)):
        t = g.tags[i]
        if "graph_region" not in t or "graph_eager" in t or g.kind[i] not in (CPU, CALL):
            continue
        n += 1
        keep = per if g.kind[i] == CALL and role_of(g.name[i]) == "launch" else 0
        launches += keep > 0
        host += max(g.dur[i] - keep, 0)
        g.dur[i] = min(g.dur[i], keep)
    if not n:
        raise LeverUnavailable(f"{NAME}: no region that CUDA graphs would cover in this "
                               "capture (knowledge/replay.yaml levers.graph-region.regions)")
    return (f"{n} host segments inside the graphed region: {host / 1e6:.2f} ms of host time "
            f"removed, {launches} kernel launches at {per / 1e3:.1f} µs each")

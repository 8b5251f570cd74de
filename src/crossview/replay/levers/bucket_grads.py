"""bucket-grads: gradients are all-reduced in buckets instead of one tensor at a time, so the
host pays the collectives' per-call cost (the CPU time inside the c10d calls, frames.yaml
`grad_sync`) and the per-tensor loop around them (a thread's host time between consecutive
calls of a per-tensor collective loop, views/distributed/collective_loops.py: the gradient
clone, the hook's Python) only for the bucketed share of the calls. PARAM: that share (0–1).

The kernels and their launch calls stay as recorded: fewer, larger collectives on the GPU
are not modelled (knowledge/replay.yaml `lever_caveats`)."""

from __future__ import annotations

from crossview.errors import UsageError
from crossview.replay.graph import CPU, GAP, Graph
from crossview.replay.levers.common import LeverContext, LeverUnavailable, bounded, number

NAME = "bucket-grads"
SUMMARY = "gradients all-reduced in buckets: the c10d calls' host cost scales to SHARE"
PARAM_IS = "calls_kept_share"
UNKNOWNS = {"calls_kept_share": "the calls a bucketed reducer keeps per gradient (the "
            "gradient bytes that set the bucket count are not in the trace)"}


def apply(g: Graph, param: str | None, ctx: LeverContext) -> str:
    keep = number(NAME, param, bounded(NAME, "calls_kept_share", ctx))
    if keep > 1:
        raise UsageError(f"--lever {NAME}={param}: a share of the calls, between 0 and 1")
    n = saved = looped = 0
    for i in range(len(g)):
        call = g.kind[i] == CPU and "collective" in g.tags[i]
        loop = g.kind[i] in (CPU, GAP) and "collective_loop" in g.tags[i]
        if call or loop:
            cut = g.dur[i] - int(g.dur[i] * keep)
            g.dur[i] -= cut
            saved += cut
            n += 1
            looped += cut if loop and not call else 0
    if not n:
        raise LeverUnavailable(f"{NAME}: no host time inside c10d collective calls in this "
                               "capture")
    loop_text = (f", {looped / 1e6:.2f} ms of it between the calls of per-tensor loops"
                 if looped else "")
    return (f"{n} host segments inside c10d collective calls or their per-tensor loops: "
            f"{saved / 1e6:.2f} ms of host time removed{loop_text} ({keep:.1%} of it kept: "
            "a bucketed reducer's calls per gradient, replay.yaml calls_kept_share)")

"""exclude-startup: host frames of start-up work (JIT compile, autotune, module load;
knowledge/frames.yaml `startup`) take no time."""

from __future__ import annotations

from crossview.replay.graph import GPU_KINDS, Graph
from crossview.replay.levers.common import LeverContext, LeverUnavailable

NAME = "exclude-startup"
SUMMARY = "start-up / JIT work excluded"


def apply(g: Graph, param: str | None, ctx: LeverContext) -> str:
    removed = n = 0
    for i in range(len(g)):
        if "startup" in g.tags[i] and g.kind[i] not in GPU_KINDS:
            removed += g.dur[i]
            g.dur[i] = 0
            n += 1
    if not n:
        raise LeverUnavailable(f"{NAME}: no start-up frames (JIT, autotune, module load: "
                               "knowledge/frames.yaml `startup`) on the host side")
    return f"{removed / 1e6:.2f} ms of start-up host time removed"

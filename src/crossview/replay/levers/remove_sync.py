"""remove-sync: the host no longer blocks in sync calls (or copies that sync); it proceeds
after the call's own cost. PARAM: only calls whose name contains it."""

from __future__ import annotations

from crossview.replay.graph import WAIT, Graph
from crossview.replay.levers.common import LeverContext, LeverUnavailable

NAME = "remove-sync"
SUMMARY = "remove or defer host syncs (cudaStreamSynchronize, .item(), blocking copies)"


def apply(g: Graph, param: str | None, ctx: LeverContext) -> str:
    n = 0
    for i in range(len(g)):
        if g.kind[i] != WAIT or "sync" not in g.tags[i]:
            continue
        if param and param not in g.name[i]:
            continue
        g.cons[i] = [c for c in g.cons[i] if c.why != "sync"]
        n += 1
    if not n:
        what = f" named like {param!r}" if param else ""
        raise LeverUnavailable(f"{NAME}: no blocking sync calls{what} in this capture's "
                               "host side")
    return f"{n} sync calls no longer wait for the GPU"

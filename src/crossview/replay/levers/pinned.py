"""pinned-copies: pageable host↔device copies come from pinned memory with
non_blocking=True: the call returns once queued and the copy runs at the pinned rate."""

from __future__ import annotations

from crossview.replay.graph import Graph
from crossview.replay.levers.common import LeverContext, LeverUnavailable, bounded, defaults

NAME = "pinned-copies"
SUMMARY = "pageable → pinned, non-blocking copies"
UNKNOWNS = {"copy_speedup": "how much faster the copy runs from pinned memory on this host "
            "(PCIe generation, the staging it no longer does)"}


def apply(g: Graph, param: str | None, ctx: LeverContext) -> str:
    d = defaults(NAME)
    speedup = bounded(NAME, "copy_speedup", ctx)
    calls = copies = 0
    for i in range(len(g)):
        if "pageable-call" in g.tags[i]:
            g.cons[i] = [c for c in g.cons[i] if c.why != "sync"]
            g.dur[i] = int(d["call_us"] * 1e3)
            calls += 1
        elif "pageable" in g.tags[i]:
            g.dur[i] = int(g.dur[i] / speedup)
            copies += 1
    if not copies:
        raise LeverUnavailable(f"{NAME}: no pageable copies in this capture (the copy "
                               "records name no Pageable memory)")
    return (f"{copies} pageable copies ÷{speedup:g} in time; {calls} copy calls "
            "no longer wait for them")

"""The range of a prediction (issue 39 item 5, decision 0853): each lever names what it cannot
know (its module's UNKNOWNS: a replay.yaml default with `_low` / `_high` bounds beside it); the
graph is replayed with every lever at its low bounds and again at its high bounds. The range is
the lowest and highest predicted median step over the point and those two replays. A lever
with no declared unknown adds none: its range is the replay's own model (the graph)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from crossview.replay import levers as lever_mod
from crossview.replay.graph import Graph
from crossview.replay.levers.common import LeverContext, LeverUnavailable, unknown
from crossview.replay.measure import StepResult, measure
from crossview.replay.replay import replay
from crossview.replay.steps import Step

if TYPE_CHECKING:
    from crossview.views.host.host_stalls import HostStall


def declared(specs: list[lever_mod.LeverSpec]) -> list[str]:
    """One line per unknown of the levers: what it is and its bounds (a value the user gave
    as the lever's parameter fixes that parameter: no unknown)."""
    out = []
    for s in specs:
        mod = lever_mod.MODULES[s.name]
        owner = getattr(mod, "DEFAULTS_OF", s.name)
        for key, text in getattr(mod, "UNKNOWNS", {}).items():
            if s.param is not None and getattr(mod, "PARAM_IS", None) == key:
                continue
            lo_hi = unknown(owner, key)
            if lo_hi is not None:
                out.append(f"{s.name}: {text}: {key} {lo_hi[0]:g} … {lo_hi[1]:g} "
                           "(knowledge/replay.yaml)")
    return out


def replay_bounds(g: Graph, steps: list[Step], specs: list[lever_mod.LeverSpec],
                  roofline: dict[str, tuple[float, str]], stalls: list[HostStall] | None = None
                  ) -> tuple[dict[str, list[StepResult]] | None, list[str]]:
    """({bound: predicted steps}, the unknowns' lines); ({}, []) when no lever declares an
    unknown (the range is then the point)."""
    lines = declared(specs)
    if not lines:
        return {}, []
    out: dict[str, list[StepResult]] = {}
    for bound in ("low", "high"):
        changed = g.copy()
        ctx = LeverContext(roofline, bound, stalls=stalls)
        try:
            for s in specs:
                lever_mod.MODULES[s.name].apply(changed, s.param, ctx)
        except LeverUnavailable:
            continue  # e.g. no launch call costs more than the high per-kernel bound
        out[bound] = measure(changed, replay(changed), steps, paths=False)
    return out, lines

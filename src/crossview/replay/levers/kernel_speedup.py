"""kernel-speedup=MATCH:FACTOR or MATCH:roofline — kernels whose family is MATCH (or whose
name contains it) run FACTOR× faster, or at the roofline fraction of their ceiling (ncu)."""

from __future__ import annotations

from crossview.errors import UsageError
from crossview.kernels.match import signature
from crossview.replay.graph import KERNEL, Graph
from crossview.replay.levers.common import LeverContext, LeverUnavailable, defaults

NAME = "kernel-speedup"
SUMMARY = "a kernel or family sped up by a factor or to a fraction of its roofline"


def apply(g: Graph, param: str | None, ctx: LeverContext) -> str:
    if not param or ":" not in param:
        raise UsageError(f"--lever {NAME}=MATCH:FACTOR or MATCH:roofline (MATCH: a kernel "
                         "family or part of a kernel name)")
    match, _, how = param.rpartition(":")
    idx = [i for i in range(len(g)) if g.kind[i] == KERNEL and (
        g.family[i] == match or match in g.name[i])]
    if not idx:
        raise LeverUnavailable(f"{NAME}: no kernel of family or name {match!r} here")
    before = sum(g.dur[i] for i in idx)
    if how == "roofline":
        fracs = defaults(NAME)["roofline_fraction"]  # by ceiling: memory | compute
        # the same kernel instantiation across trace and ncu (kernels/match.py)
        roof = {signature(k): v for k, v in ctx.roofline.items()}
        missing = {g.name[i] for i in idx if signature(g.name[i]) not in roof}
        if missing:
            raise LeverUnavailable(f"{NAME}: {match}:roofline needs ncu measurements of the "
                                   f"matching kernels; none for {len(missing)} of them (e.g. "
                                   f"{sorted(missing)[0][:60]}); give a factor instead")
        for i in idx:
            achieved, bound = roof[signature(g.name[i])]
            g.dur[i] = int(g.dur[i] * min(1.0, achieved / fracs[bound]))
    else:
        try:
            factor = float(how)
        except ValueError:
            raise UsageError(f"--lever {NAME}={param}: FACTOR must be a number or "
                             "'roofline'") from None
        if factor <= 0:
            raise UsageError(f"--lever {NAME}={param}: FACTOR must be > 0")
        for i in idx:
            g.dur[i] = int(g.dur[i] / factor)
    after = sum(g.dur[i] for i in idx)
    return f"{len(idx)} kernels ({match}): {before / 1e6:.2f} → {after / 1e6:.2f} ms"

"""first-call-per-shape: ops whose first call with given input shapes pays a one-off setup
(views/host/first_calls.py) that adds up to a visible part of the steady steps.

Needs recorded shapes (`record_shapes=True`). A capture of a workload whose shapes change
step to step (eager serving: each batch's token count is a new shape) pays the setup again
for every new size, so the share measured here recurs; one whose shapes repeat pays it once.
The claim owns no time account cause: the setup is host time inside the cause that holds it
(usually the CPU work between launches: `within`).
"""

from __future__ import annotations

from msgspec import Struct

from crossview.core.claim import Claim, Count, Cutoff, Facts, FixPart, Ns, Owns, Phrasing
from crossview.detectors.common import cites, ms, pct, short
from crossview.detectors.declare import About, Declaration
from crossview.views.views import Views

PATTERN = "first-call-per-shape"
CPU_ONLY = PATTERN + "-cpu-only"  # no GPU in the capture: no CUDA-graph remedy


class FirstCall(Struct, frozen=True, kw_only=True):
    name: str
    input_dims: str
    calls: Count
    first_ns: Ns
    rest_median_ns: Ns


class FirstCalls(Facts, frozen=True, kw_only=True):
    groups: tuple[FirstCall, ...]
    n_groups: Count
    excess_ns: Ns
    steps: Count


def _groups(n: int) -> str:
    return f"{n:,} op group" + ("" if n == 1 else "s")


def detect(v: Views) -> list[Claim]:
    fc = v.first_calls
    if not fc.groups or fc.step_ns <= 0:
        return []
    share = fc.excess_ns / fc.step_ns
    if share < v.limits.first_call_yellow_share:
        return []  # a few stray first calls: not worth a recap line
    return [Claim(
        pattern=PATTERN, share=share, tier="consider",
        cutoff=Cutoff("first_call_yellow_share", v.limits.first_call_yellow_share, share),
        owns=Owns(within=("cpu_dispatch", "launch_overhead")),
        fix=(FixPart(key=CPU_ONLY if v.metrics.cpu_only else PATTERN, located=True),),
        cites=cites(v, "first-calls"),
        facts=FirstCalls(groups=tuple(FirstCall(
            name=g.name, input_dims=g.input_dims, calls=g.calls, first_ns=g.first_ns,
            rest_median_ns=g.rest_median_ns) for g in fc.groups[:5]),
            n_groups=len(fc.groups), excess_ns=fc.excess_ns, steps=fc.steps))]


def phrase(c: Claim) -> Phrasing:
    f = c.facts
    assert isinstance(f, FirstCalls)
    top = "; ".join(
        f"`{g.name}` {short(g.input_dims, 60)}: first {ms(g.first_ns)}, later calls "
        f"(×{g.calls - 1:,}) {ms(g.rest_median_ns)} median" for g in f.groups[:3])
    steps = f"{f.steps} steady step" + ("s" if f.steps != 1 else "")
    per_step = f.excess_ns // f.steps
    return Phrasing(
        title=f"{_groups(f.n_groups)} pay a one-off setup on the first call of their input "
              f"shapes: {ms(per_step)} per step ({pct(c.share)})",
        observation=(
            f"On the first call with given input shapes, {_groups(f.n_groups)} cost "
            f"{ms(f.excess_ns)} more self time than their later calls with the same shapes "
            f"({top}): {ms(per_step)} per step, {pct(c.share)} of the wall time of the {steps}. "
            "A first call "
            "of a shape pays a one-off setup (for a GEMM, the library's kernel selection for "
            "that problem size; a first allocation of that size): a workload whose shapes "
            "change from step to step pays it again for every new size."),
        effect=(
            f"Shapes that repeat (or CUDA graphs, which do the setup at capture) remove up to "
            f"{ms(per_step)} of host time per step; in a run whose shapes keep changing, count "
            "the new sizes per step to know how often it recurs."),
        details={"excess_ns": f.excess_ns, "groups": f.n_groups,
                 "top": [{"name": g.name, "input_dims": g.input_dims, "calls": g.calls,
                          "first_ns": g.first_ns, "rest_median_ns": g.rest_median_ns}
                         for g in f.groups]})


DECLARATION = Declaration(
    patterns=(PATTERN,), detect=detect, phrase=phrase,
    thresholds=("first_call_min_ratio", "first_call_min_excess_ns", "first_call_min_later",
                "first_call_yellow_share"),
    fix_keys=(PATTERN, CPU_ONLY), about=About(side="host"))

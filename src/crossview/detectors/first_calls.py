"""first-call-per-shape: ops whose first call with given input shapes pays a one-off setup
(views/host/first_calls.py) that adds up to a visible part of the steady steps.

Needs recorded shapes (`record_shapes=True`). A capture of a workload whose shapes change
step to step (eager serving: each batch's token count is a new shape) pays the setup again
for every new size, so the share measured here recurs; one whose shapes repeat pays it once.
The finding claims no time account cause: the setup is host time inside the cause that holds
it (usually the CPU work between launches).
"""

from __future__ import annotations

from crossview.core.finding import Finding
from crossview.detectors.common import evidence, fix_where, ms, pct, short
from crossview.detectors.declare import Declaration
from crossview.knowledge.fixes import fix_for
from crossview.views.views import Views

PATTERN = "first-call-per-shape"
CPU_ONLY = PATTERN + "-cpu-only"  # no GPU in the capture: no CUDA-graph remedy


def _groups(n: int) -> str:
    return f"{n:,} op group" + ("" if n == 1 else "s")


def detect(v: Views) -> list[Finding]:
    fc = v.first_calls
    if not fc.groups or fc.step_ns <= 0:
        return []
    share = fc.excess_ns / fc.step_ns
    if share < v.limits.first_call_yellow_share:
        return []  # a few stray first calls: not worth a recap line
    top = "; ".join(
        f"`{g.name}` {short(g.input_dims, 60)}: first {ms(g.first_ns)}, later calls "
        f"(×{g.calls - 1:,}) {ms(g.rest_median_ns)} median" for g in fc.groups[:3])
    steps = f"{fc.steps} steady step" + ("s" if fc.steps != 1 else "")
    per_step = fc.excess_ns // fc.steps
    return [Finding(
        pattern=PATTERN,
        severity="yellow",
        title=f"{_groups(len(fc.groups))} pay a one-off setup on the first call of their input "
              f"shapes: {ms(per_step)} per step ({pct(share)})",
        observation=(
            f"On the first call with given input shapes, {_groups(len(fc.groups))} cost "
            f"{ms(fc.excess_ns)} more self time than their later calls with the same shapes "
            f"({top}): {ms(per_step)} per step, {pct(share)} of the wall time of the {steps}. "
            "A first call "
            "of a shape pays a one-off setup (for a GEMM, the library's kernel selection for "
            "that problem size; a first allocation of that size): a workload whose shapes "
            "change from step to step pays it again for every new size."),
        fix=fix_for(CPU_ONLY if v.metrics.cpu_only else PATTERN, v.engine, fix_where(v)),
        share=share,
        evidence=evidence(v, "host self time of ops grouped by recorded input shapes "
                             "(op_args), first call against the later ones, steady steps"),
        expected_effect=(
            f"Shapes that repeat (or CUDA graphs, which do the setup at capture) remove up to "
            f"{ms(per_step)} of host time per step; in a run whose shapes keep changing, count "
            "the new sizes per step to know how often it recurs."),
        details={"excess_ns": fc.excess_ns, "groups": len(fc.groups),
                 "top": [{"name": g.name, "input_dims": g.input_dims, "calls": g.calls,
                          "first_ns": g.first_ns, "rest_median_ns": g.rest_median_ns}
                         for g in fc.groups[:5]]},
    )]


DECLARATION = Declaration(
    patterns=(PATTERN,), detect=detect,
    thresholds=("first_call_min_ratio", "first_call_min_excess_ns", "first_call_min_later",
                "first_call_yellow_share"),
    fix_keys=(PATTERN, CPU_ONLY))

"""compute-bound: profiled kernels whose compute side leads the speed of light (ncu).

"At its roofline" is said only from achieved FLOP/s against the datasheet ceiling; an SM
throughput near 100% alone is reported as such, not as a roofline (conventions.md §1).
"""

from __future__ import annotations

from crossview.core.finding import Finding
from crossview.detectors import kernel_common as kc
from crossview.detectors.declare import Declaration
from crossview.knowledge.fixes import fix_for
from crossview.views.views import Views

PATTERN = "compute-bound"


def detect(v: Views) -> list[Finding]:
    ks = [k for k in v.kernels if k.bound == "compute-bound"]
    if not ks:
        return []
    share, sev = kc.weigh(v, ks)
    top = ks[0]
    at_roof = (top.pct_of_peak_flops or 0) >= v.limits.roofline_high_pct
    lines = []
    for k in ks[:kc.MAX_NAMED]:
        line = f"{kc.head(v, k)}: {k.bound_reason}; {kc.roofline(k)}"
        if k.busiest_pipes:
            line += "; busiest SM pipes " + ", ".join(
                f"{p.upper()} {x:.1f}%" for p, x in k.busiest_pipes.items())
        if k.pct_of_peak_flops is None:
            line += (" — the SM throughput says the pipes are busy, not how close the kernel "
                     "is to its FLOP ceiling (collect `--section SpeedOfLight_RooflineChart`)")
        if k.tensor_cores is False:
            line += f"; tensor cores not engaged ({k.tensor_evidence})"
        elif k.compute_class == "tensor-core":
            line += f"; {k.tensor_note}"
        lines.append(line + ".")
    obs = " ".join(lines) + kc.ncu_says(top, ("SOLBottleneck",))
    tensor = top.compute_class == "tensor-core"  # never told to "use tensor cores" (issue 17)
    key = PATTERN + ("-at-roofline" if at_roof else "-tensor" if tensor else "")
    fix = fix_for(key, None, kc.names(ks[:1]))
    if top.pct_of_peak_flops is None:
        fix += " " + fix_for(PATTERN + ("-tensor-collect" if tensor else "-collect-roofline"),
                             None, kc.names(ks[:1]))
    return [kc.finding(
        PATTERN, sev, f"Compute-bound kernel{'s' if len(ks) > 1 else ''}: {kc.names(ks)} "
        f"({100 * share:.1f}% of {kc.basis(v, ks)})", obs,
        fix, share, ks,
        "Kernel time falls with the math done or with a faster pipe/precision.")]


DECLARATION = Declaration(
    patterns=(PATTERN,), detect=detect, causes=(),
    thresholds=("roofline_high_pct", "kernel_red_share", "kernel_yellow_share"),
    fix_keys=(PATTERN, PATTERN + "-tensor", PATTERN + "-at-roofline", PATTERN + "-collect-roofline",
              PATTERN + "-tensor-collect"))

"""below-roofline: profiled kernels far under both ceilings (latency, occupancy, small grid)."""

from __future__ import annotations

from crossview.core.finding import Finding
from crossview.detectors import kernel_common as kc
from crossview.detectors.declare import Declaration
from crossview.knowledge.fixes import fix_for
from crossview.sol.kernel_inputs import library_kernel_pattern
from crossview.sol.roofline import KernelRoofline
from crossview.views.views import Views

PATTERN = "below-roofline"


def _occupancy_note(v: Views, k: KernelRoofline) -> str:
    lim, notes = v.limits, []
    t, a = k.theoretical_occupancy_pct, k.achieved_occupancy_pct
    if t is not None and t < lim.occupancy_theoretical_low_pct:
        notes.append(f"theoretical occupancy {t:.1f}% < {lim.occupancy_theoretical_low_pct:g}%"
                     + (f" (limited by {k.occupancy_limiter})" if k.occupancy_limiter else ""))
    if t is not None and a is not None and t - a >= lim.occupancy_achieved_gap_pct:
        notes.append(f"achieved {a:.1f}% is {t - a:.1f} points below theoretical")
    return ("; " + "; ".join(notes)) if notes else ""


def detect(v: Views) -> list[Finding]:
    ks = [k for k in v.kernels if k.bound in ("latency-bound", "small-grid")]
    if not ks:
        return []
    share, sev = kc.weigh(v, ks)
    top = ks[0]
    lines = [f"{kc.head(v, k)}: {k.bound_reason} ({k.bound}); {kc.occupancy(k)}"
             f"{_occupancy_note(v, k)}; {kc.roofline(k)}." for k in ks[:kc.MAX_NAMED]]
    obs = " ".join(lines) + kc.ncu_says(top, ("SOLBottleneck", "TheoreticalOccupancy",
                                              "IssueSlotUtilization"))
    key = PATTERN + ("-small-grid" if top.bound == "small-grid" else "")
    variant = ("library" if top.bound == "latency-bound"
               and library_kernel_pattern().search(top.name) else None)
    return [kc.finding(
        PATTERN, sev, f"Kernel{'s' if len(ks) > 1 else ''} far below the roofline: "
        f"{kc.names(ks)} ({100 * share:.1f}% of {kc.basis(v, ks)})", obs,
        fix_for(key, variant, kc.names(ks[:1])), share, ks,
        "Up to the nearer ceiling: these kernels use well under 60% of both compute and "
        "memory throughput.")]


DECLARATION = Declaration(
    patterns=(PATTERN,), detect=detect, causes=(),
    thresholds=("occupancy_achieved_gap_pct", "occupancy_theoretical_low_pct", "kernel_red_share",
        "kernel_yellow_share"),
    fix_keys=(PATTERN, PATTERN + "-small-grid"))

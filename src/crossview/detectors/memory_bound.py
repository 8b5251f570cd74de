"""memory-bandwidth-bound: profiled kernels whose memory side leads the speed of light (ncu)."""

from __future__ import annotations

from crossview.core.finding import Finding
from crossview.detectors import kernel_common as kc
from crossview.detectors.declare import Declaration
from crossview.knowledge.fixes import fix_for
from crossview.sol.roofline import KernelRoofline
from crossview.views.views import Views

PATTERN = "memory-bandwidth-bound"


def _busiest(k: KernelRoofline) -> str:
    units = [(v, n) for n, v in (("L1/TEX", k.l1_sol_pct), ("L2", k.l2_sol_pct),
                                  ("DRAM", k.dram_sol_pct)) if v is not None]
    if not units:
        return ""
    v, n = max(units)
    return f" The busiest memory unit is {n} at {v:.1f}% of its peak."


def detect(v: Views) -> list[Finding]:
    ks = [k for k in v.kernels if k.bound == "memory-bound"]
    if not ks:
        return []
    share, sev = kc.weigh(v, ks)
    top = ks[0]
    at_roof = top.at_roofline is True and (top.pct_of_peak_dram_bw or 0) >= \
        v.limits.roofline_high_pct
    lines = [f"{kc.head(v, k)}: {k.bound_reason}; {kc.roofline(k)}.{_busiest(k)}"
             for k in ks[:kc.MAX_NAMED]]
    obs = " ".join(lines) + kc.ncu_says(top, ("SOLBottleneck",))
    if at_roof:
        obs += " It moves DRAM bytes at its ceiling (achieved bytes/s vs sol_ceilings.yaml)."
    key = PATTERN + ("-at-roofline" if at_roof else "")
    return [kc.finding(
        PATTERN, sev, f"Memory-bound kernel{'s' if len(ks) > 1 else ''}: {kc.names(ks)} "
        f"({100 * share:.1f}% of {kc.basis(v, ks)})", obs,
        fix_for(key, None, kc.names(ks[:1])), share, ks,
        "Kernel time falls with the bytes moved; the bound is its DRAM/L2 ceiling.")]


DECLARATION = Declaration(
    patterns=(PATTERN,), detect=detect, causes=(),
    thresholds=("roofline_high_pct", "kernel_red_share", "kernel_yellow_share"),
    fix_keys=(PATTERN, PATTERN + "-at-roofline"))

"""memory-bandwidth-bound: profiled kernels whose memory side leads the speed of light (ncu)."""

from __future__ import annotations

from crossview.core.finding import Finding
from crossview.detectors import kernel_common as kc
from crossview.detectors.common import short
from crossview.detectors.declare import Declaration
from crossview.knowledge.fixes import fix_for
from crossview.sol.kernel_inputs import gemm_tile_pattern
from crossview.sol.roofline import KernelRoofline
from crossview.views.views import Views

PATTERN = "memory-bandwidth-bound"


def _unit(k: KernelRoofline) -> tuple[str, float] | None:
    units = [(v, n) for n, v in (("L1/TEX", k.l1_sol_pct), ("L2", k.l2_sol_pct),
                                  ("DRAM", k.dram_sol_pct)) if v is not None]
    if not units:
        return None
    v, n = max(units)
    return n, v


def _busiest(k: KernelRoofline) -> str:
    u = _unit(k)
    if u is None:
        return ""
    text = f" The busiest memory unit is {u[0]} at {u[1]:.1f}% of its peak"
    if u[0] != "DRAM" and k.dram_sol_pct is not None:
        text += f", DRAM at {k.dram_sol_pct:.1f}%"
    if k.family == "gemm" and (t := gemm_tile_pattern().search(k.name)):
        text += f"; its name gives a {t.group(1)}×{t.group(2)} tile"
    return text + "."


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
    u = _unit(top)
    variant = "cache" if not at_roof and u is not None and u[0] != "DRAM" else None
    t = top.theoretical_occupancy_pct
    if variant and t is not None and t < v.limits.cache_bound_occupancy_max_pct:
        variant = "cache_low_occupancy"
        obs += f" Occupancy: {kc.occupancy(top)}." + kc.ncu_says(top, ("TheoreticalOccupancy",))
    title = (f"Memory-bound kernel{'s' if len(ks) > 1 else ''}: {kc.names(ks)} "
             f"({100 * share:.1f}% of {kc.basis(v, ks)})")
    if variant == "cache_low_occupancy" and u is not None and t is not None:
        # not bandwidth: the unit is far from saturated and too few warps hide its latency
        title = (f"Cache latency at low occupancy: {kc.names(ks)} ({100 * share:.1f}% of "
                 f"{kc.basis(v, ks)}; {u[0]} {u[1]:.1f}% of peak, {t:.1f}% theoretical "
                 "occupancy)")
    return [kc.finding(
        PATTERN, sev, title, obs,
        fix_for(key, variant, kc.names(ks[:1])), share, ks,
        _cache_effect(v, ks, u, top) if variant and u else
        "Kernel time falls with the bytes moved; the bound is its DRAM/L2 ceiling.")]


def _cache_effect(v: Views, ks: list[KernelRoofline], u: tuple[str, float],
                  top: KernelRoofline) -> str:
    """A cache-bound kernel's bound: at roofline_high_pct of its busiest unit's peak it
    takes (unit % ÷ that) of its time; ncu's own estimate beside it where a rule gives one."""
    high = v.limits.roofline_high_pct
    share = kc.weigh(v, [top])[0] * max(0.0, 1 - u[1] / high)
    est = max(((float(x), str(r["rule"])) for r in top.ncu_rules
               if r.get("type") == "OPT" and isinstance(x := r.get("speedup_pct"), int | float)),
              default=None)
    cap = 100 * max(0.0, 1 - u[1] / high)  # of this kernel's own time
    # ncu's rule models the occupancy alone; the unit's ceiling caps what it can return
    ncu = ("" if est is None else
           f"; ncu's {est[1]} rule estimates {est[0]:.1f}% of this kernel's time, which the "
           f"{u[0]} ceiling caps at {cap:.1f}%" if est[0] > cap else
           f"; ncu's {est[1]} rule estimates {est[0]:.1f}% of this kernel's time, within it")
    return (f"At most {100 * share:.1f}% of {kc.basis(v, [top])} goes if "
            f"`{short(top.name, 50)}` ran its {u[0]} traffic at {high:g}% of the unit's "
            f"peak (now {u[1]:.1f}%: time × (1 − {u[1]:.1f} ÷ {high:g})){ncu}: an A/B "
            "compares this kernel's time before and after.")


DECLARATION = Declaration(
    patterns=(PATTERN,), detect=detect, causes=(),
    thresholds=("roofline_high_pct", "kernel_red_share", "kernel_yellow_share",
                "cache_bound_occupancy_max_pct"),
    fix_keys=(PATTERN, PATTERN + "-at-roofline"))

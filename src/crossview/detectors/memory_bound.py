"""memory-bandwidth-bound: profiled kernels whose memory side leads the speed of light (ncu)."""

from __future__ import annotations

from crossview.core.claim import Claim, Facts, FixPart, Pct, Phrasing
from crossview.detectors import kernel_common as kc
from crossview.detectors.common import short
from crossview.detectors.declare import About, Declaration
from crossview.sol.kernel_inputs import gemm_tile_pattern
from crossview.sol.roofline import KernelRoofline
from crossview.views.views import Views

PATTERN = "memory-bandwidth-bound"


class MemoryBound(Facts, frozen=True, kw_only=True):
    kernels: kc.KernelFacts
    at_roof: bool  # moves DRAM bytes at its ceiling
    cache: str  # "", "cache" or "cache_low_occupancy": the busiest unit is a cache
    high_pct: Pct  # roofline_high_pct


def _unit(k: KernelRoofline) -> tuple[str, float] | None:
    units = [(v, n) for n, v in (("L1/TEX", k.l1_sol_pct), ("L2", k.l2_sol_pct),
                                  ("DRAM", k.dram_sol_pct)) if v is not None]
    if not units:
        return None
    v, n = max(units)
    return n, v


def detect(v: Views) -> list[Claim]:
    ks = [k for k in v.kernels if k.bound == "memory-bound"]
    if not ks:
        return []
    top = ks[0]
    at_roof = top.at_roofline is True and (top.pct_of_peak_dram_bw or 0) >= \
        v.limits.roofline_high_pct
    u = _unit(top)
    variant = "cache" if not at_roof and u is not None and u[0] != "DRAM" else ""
    t = top.theoretical_occupancy_pct
    if variant and t is not None and t < v.limits.cache_bound_occupancy_max_pct:
        variant = "cache_low_occupancy"
    fix = FixPart(key=PATTERN + ("-at-roofline" if at_roof else ""),
                  flags=(variant,) if variant else (), subject=kc.names(ks[:1]))
    return [kc.claim(PATTERN, v, ks, (fix,), form=variant,
                     wrap=lambda kf: MemoryBound(kernels=kf, at_roof=at_roof, cache=variant,
                                                 high_pct=v.limits.roofline_high_pct))]


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


def _cache_effect(f: MemoryBound, u: tuple[str, float]) -> str:
    """A cache-bound kernel's bound: at roofline_high_pct of its busiest unit's peak it
    takes (unit % ÷ that) of its time; ncu's own estimate beside it where a rule gives one."""
    w = f.kernels.kernels[0]
    top, high = w.kernel, f.high_pct
    share = w.weight * max(0.0, 1 - u[1] / high)
    est = max(((float(x), str(r["rule"])) for r in top.ncu_rules
               if r.get("type") == "OPT" and isinstance(x := r.get("speedup_pct"), int | float)),
              default=None)
    cap = 100 * max(0.0, 1 - u[1] / high)  # of this kernel's own time
    # ncu's rule models the occupancy alone; the unit's ceiling caps what it can return
    ncu = ("" if est is None else
           f"; ncu's {est[1]} rule estimates {est[0]:.1f}% of this kernel's time, which the "
           f"{u[0]} ceiling caps at {cap:.1f}%" if est[0] > cap else
           f"; ncu's {est[1]} rule estimates {est[0]:.1f}% of this kernel's time, within it")
    # the basis of one kernel's weight is the claim's
    return (f"At most {100 * share:.1f}% of {kc.basis(f.kernels)} goes if "
            f"`{short(top.name, 50)}` ran its {u[0]} traffic at {high:g}% of the unit's "
            f"peak (now {u[1]:.1f}%: time × (1 − {u[1]:.1f} ÷ {high:g})){ncu}: an A/B "
            "compares this kernel's time before and after.")


def phrase(c: Claim) -> Phrasing:
    f = c.facts
    if not isinstance(f, MemoryBound):
        raise TypeError(f"memory-bandwidth-bound facts: {type(f).__name__}")
    ks = kc.kernels_of(f.kernels)
    top = ks[0]
    lines = [f"{kc.head(w)}: {w.kernel.bound_reason}; {kc.roofline(w.kernel)}."
             f"{_busiest(w.kernel)}" for w in f.kernels.kernels[:kc.MAX_NAMED]]
    obs = " ".join(lines) + kc.ncu_says(top, ("SOLBottleneck",))
    if f.at_roof:
        obs += " It moves DRAM bytes at its ceiling (achieved bytes/s vs sol_ceilings.yaml)."
    u = _unit(top)
    t = top.theoretical_occupancy_pct
    title = (f"Memory-bound kernel{'s' if len(ks) > 1 else ''}: {kc.names(ks)} "
             f"({100 * c.share:.1f}% of {kc.basis(f.kernels)})")
    if f.cache == "cache_low_occupancy" and u is not None and t is not None:
        obs += f" Occupancy: {kc.occupancy(top)}." + kc.ncu_says(top, ("TheoreticalOccupancy",))
        # not bandwidth: the unit is far from saturated and too few warps hide its latency
        title = (f"Cache latency at low occupancy: {kc.names(ks)} ({100 * c.share:.1f}% of "
                 f"{kc.basis(f.kernels)}; {u[0]} {u[1]:.1f}% of peak, {t:.1f}% theoretical "
                 "occupancy)")
    return Phrasing(
        title=title, observation=obs,
        effect=_cache_effect(f, u) if f.cache and u else
        "Kernel time falls with the bytes moved; the bound is its DRAM/L2 ceiling.",
        details=kc.details(f.kernels))


DECLARATION = Declaration(
    patterns=(PATTERN,), detect=detect, phrase=phrase, causes=(),
    thresholds=("roofline_high_pct", "kernel_red_share", "kernel_yellow_share",
                "cache_bound_occupancy_max_pct"),
    fix_keys=(PATTERN, PATTERN + "-at-roofline"),
    about=About(side="GPU kernel", kernel_side=True))

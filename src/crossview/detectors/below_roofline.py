"""below-roofline: profiled kernels far under both ceilings (latency, occupancy, small grid).

A capture with launch stats but no SpeedOfLight section still shows a grid smaller than the
GPU (fewer blocks than SMs: sol/roofline_class.py). That finding says only what the grid
shows — not that the kernel is under its roofline — and, when the same capture holds a library
kernel whose grid covers the GPU, names it as the working example of the fix.
"""

from __future__ import annotations

from crossview.core.finding import Finding
from crossview.detectors import kernel_common as kc
from crossview.detectors.common import short
from crossview.detectors.declare import Declaration
from crossview.knowledge.fixes import fix_for
from crossview.sol.kernel_inputs import library_kernel_pattern
from crossview.sol.roofline import KernelRoofline
from crossview.units import duration
from crossview.views.views import Views

PATTERN = "below-roofline"


def _occupancy_note(v: Views, k: KernelRoofline) -> str:
    lim, notes = v.limits, []
    t, a = k.theoretical_occupancy_pct, k.achieved_occupancy_pct
    if t is not None and t < lim.occupancy_theoretical_low_pct:
        notes.append(f"theoretical occupancy under {lim.occupancy_theoretical_low_pct:g}%")
    if t is not None and a is not None and t - a >= lim.occupancy_achieved_gap_pct:
        notes.append(f"achieved {a:.1f}% is {t - a:.1f} points below theoretical")
    return ("; " + "; ".join(notes)) if notes else ""


def _grid_only(k: KernelRoofline) -> bool:
    """small-grid from the launch stats alone (no SpeedOfLight throughputs)."""
    return k.bound == "small-grid" and k.compute_sol_pct is None


def _library_example(v: Views, ks: list[KernelRoofline]) -> str:
    """The fastest library kernel on the same GPU whose grid covers every SM."""
    lib, gpus = library_kernel_pattern(), {k.device_name for k in ks}
    cands = [k for k in v.kernels if k.device_name in gpus and lib.search(k.name)
             and k.grid_blocks and k.sm_count and k.grid_blocks >= k.sm_count
             and k.duration_ns]
    if not cands:
        return ""
    c = min(cands, key=lambda k: k.duration_ns or 0.0)
    waves = f", {c.waves_per_sm:,.2f} waves per SM" if c.waves_per_sm is not None else ""
    return (f" For comparison, the library kernel `{c.name}` in the same capture runs "
            f"{duration(c.duration_ns or 0.0)} on a {c.grid} grid = {c.grid_blocks:,.0f} "
            f"blocks{waves}.")


def _grid_effect(ks: list[KernelRoofline]) -> str:
    t = sum(k.duration_ns or 0.0 for k in ks)
    floor = sum((k.duration_ns or 0.0) * (k.grid_blocks or 0.0) / (k.sm_count or 1.0)
                for k in ks)
    idle = sorted({(k.sm_count or 0.0) - (k.grid_blocks or 0.0) for k in ks})
    sms = sorted({k.sm_count or 0.0 for k in ks})
    span = (f"{idle[0]:g}" if len(idle) == 1 else f"{idle[0]:g}–{idle[-1]:g}") + " of " + \
        "/".join(f"{n:g}" for n in sms)
    return (f"{span} SMs hold no block: "
            f"with the same work spread over every SM these kernels would take "
            f"≥ {duration(floor)} of their {duration(t)} (time × blocks ÷ SMs, each block at "
            "its present speed); re-profile with `ncu --section SpeedOfLight` to see how far "
            "each SM is from its ceiling.")


def detect(v: Views) -> list[Finding]:
    ks = [k for k in v.kernels if k.bound in ("latency-bound", "small-grid")]
    if not ks:
        return []
    if all(_grid_only(k) for k in ks):
        return _grid_finding(v, ks)
    ks = [k for k in ks if not _grid_only(k)]
    share, sev = kc.weigh(v, ks)
    top = ks[0]
    lines = [f"{kc.head(v, k)}: {k.bound_reason} ({k.bound}); {kc.occupancy(k)}"
             f"{_occupancy_note(v, k)}; {kc.roofline(k)}." for k in ks[:kc.MAX_NAMED]]
    obs = " ".join(lines) + kc.ncu_says(top, ("SOLBottleneck", "TheoreticalOccupancy",
                                              "IssueSlotUtilization"))
    key = PATTERN + ("-small-grid" if top.bound == "small-grid" else "")
    variant = "library" if library_kernel_pattern().search(top.name) else None
    return [kc.finding(
        PATTERN, sev, f"Kernel{'s' if len(ks) > 1 else ''} far below the roofline: "
        f"{kc.names(ks)} ({100 * share:.1f}% of {kc.basis(v, ks)})", obs,
        fix_for(key, variant, kc.names(ks[:1])), share, ks, _ceiling_effect(v, ks))]


def _ceiling_effect(v: Views, ks: list[KernelRoofline]) -> str:
    """The most these kernels' time can shrink: each at `roofline_high_pct` of its nearer
    ceiling (the larger of its compute and memory % of peak now) — what real kernels reach,
    the same mark memory_bound's effect uses — takes (that % ÷ the mark) of its time."""
    near = [max(x for x in (k.compute_sol_pct, k.memory_sol_pct) if x is not None)
            if k.compute_sol_pct is not None or k.memory_sol_pct is not None else None
            for k in ks]
    if any(n is None for n in near):
        return ("Up to the nearer ceiling: these kernels use well under 60% of both compute "
                "and memory throughput.")
    high = v.limits.roofline_high_pct
    gone = sum(kc.weigh(v, [k])[0] * max(0.0, 1 - (n or 0.0) / high)
               for k, n in zip(ks, near, strict=True))
    each = "; ".join(f"`{short(k.name, 50)}` at {n:.1f}% of its nearer ceiling"
                     for k, n in zip(ks[:kc.MAX_NAMED], near[:kc.MAX_NAMED], strict=True))
    return (f"At most {100 * gone:.1f}% of {kc.basis(v, ks)} goes if each kernel reached "
            f"{high:g}% of its nearer ceiling ({each}; time × (1 − that % ÷ {high:g})): an "
            "A/B compares these kernels' time before and after.")


def _grid_finding(v: Views, ks: list[KernelRoofline]) -> list[Finding]:
    share, sev = kc.weigh(v, ks)
    lines = [f"{kc.head(v, k)}: {k.bound_reason}; {kc.occupancy(k)}"
             f"{_occupancy_note(v, k)}." for k in ks[:kc.MAX_NAMED]]
    more = (f" {len(ks) - kc.MAX_NAMED} more with the same grid problem "
            f"({kc.names(ks[kc.MAX_NAMED:])})." if len(ks) > kc.MAX_NAMED else "")
    variant = "library" if library_kernel_pattern().search(ks[0].name) else "own"
    return [kc.finding(
        PATTERN, sev, f"Grid smaller than the GPU: {kc.names(ks)} launch fewer blocks than "
        f"SMs ({100 * share:.1f}% of {kc.basis(v, ks)})",
        " ".join(lines) + more + _library_example(v, ks),
        fix_for(PATTERN + "-small-grid", variant, kc.names(ks[:1])), share, ks,
        _grid_effect(ks))]


DECLARATION = Declaration(
    patterns=(PATTERN,), detect=detect, causes=(),
    thresholds=("occupancy_achieved_gap_pct", "occupancy_theoretical_low_pct", "kernel_red_share",
        "kernel_yellow_share", "roofline_high_pct"),
    fix_keys=(PATTERN, PATTERN + "-small-grid"))

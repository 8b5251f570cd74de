"""below-roofline: profiled kernels far under both ceilings (latency, occupancy, small grid).

A capture with launch stats but no SpeedOfLight section still shows a grid smaller than the
GPU (fewer blocks than SMs: sol/roofline_class.py). That claim says only what the grid
shows — not that the kernel is under its roofline — and, when the same capture holds a library
kernel whose grid covers the GPU, names it as the working example of the fix.
"""

from __future__ import annotations

from crossview.core.claim import Claim, Facts, FixPart, Pct, Phrasing, Share
from crossview.detectors import kernel_common as kc
from crossview.detectors.common import short
from crossview.detectors.declare import About, Declaration
from crossview.sol.kernel_inputs import library_kernel_pattern
from crossview.sol.roofline import KernelRoofline
from crossview.units import duration
from crossview.views.views import Views

PATTERN = "below-roofline"


class BelowRoofline(Facts, frozen=True, kw_only=True):
    kernels: kc.KernelFacts
    grid_only: bool  # small grid from the launch stats alone (no SpeedOfLight throughputs)
    theoretical_low_pct: Pct  # thresholds: occupancy_theoretical_low_pct
    achieved_gap_pct: Pct  # occupancy_achieved_gap_pct
    high_pct: Pct  # roofline_high_pct
    example: KernelRoofline | None = None  # a library kernel whose grid covers every SM


def _grid_only(k: KernelRoofline) -> bool:
    """small-grid from the launch stats alone (no SpeedOfLight throughputs)."""
    return k.bound == "small-grid" and k.compute_sol_pct is None


def _library_example(v: Views, ks: list[KernelRoofline]) -> KernelRoofline | None:
    """The fastest library kernel on the same GPU whose grid covers every SM."""
    lib, gpus = library_kernel_pattern(), {k.device_name for k in ks}
    cands = [k for k in v.kernels if k.device_name in gpus and lib.search(k.name)
             and k.grid_blocks and k.sm_count and k.grid_blocks >= k.sm_count
             and k.duration_ns]
    return min(cands, key=lambda k: k.duration_ns or 0.0) if cands else None


def detect(v: Views) -> list[Claim]:
    ks = [k for k in v.kernels if k.bound in ("latency-bound", "small-grid")]
    if not ks:
        return []
    lim = v.limits
    grid_only = all(_grid_only(k) for k in ks)
    if not grid_only:
        ks = [k for k in ks if not _grid_only(k)]
    top = ks[0]
    library = bool(library_kernel_pattern().search(top.name))
    if grid_only:
        fix = FixPart(key=PATTERN + "-small-grid", flags=("library" if library else "own",),
                      subject=kc.names(ks[:1]))
    else:
        fix = FixPart(key=PATTERN + ("-small-grid" if top.bound == "small-grid" else ""),
                      flags=("library",) if library else (), subject=kc.names(ks[:1]))
    example = _library_example(v, ks) if grid_only else None
    return [kc.claim(PATTERN, v, ks, (fix,), form="grid" if grid_only else "",
                     wrap=lambda kf: BelowRoofline(
                         kernels=kf, grid_only=grid_only,
                         theoretical_low_pct=lim.occupancy_theoretical_low_pct,
                         achieved_gap_pct=lim.occupancy_achieved_gap_pct,
                         high_pct=lim.roofline_high_pct, example=example))]


def _occupancy_note(f: BelowRoofline, k: KernelRoofline) -> str:
    notes = []
    t, a = k.theoretical_occupancy_pct, k.achieved_occupancy_pct
    if t is not None and t < f.theoretical_low_pct:
        notes.append(f"theoretical occupancy under {f.theoretical_low_pct:g}%")
    if t is not None and a is not None and t - a >= f.achieved_gap_pct:
        notes.append(f"achieved {a:.1f}% is {t - a:.1f} points below theoretical")
    return ("; " + "; ".join(notes)) if notes else ""


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


def _ceiling_effect(f: BelowRoofline, c: Claim) -> str:
    """The most these kernels' time can shrink: each at `roofline_high_pct` of its nearer
    ceiling (the larger of its compute and memory % of peak now) — what real kernels reach,
    the same mark memory_bound's effect uses — takes (that % ÷ the mark) of its time."""
    ws = f.kernels.kernels
    near = [max(x for x in (w.kernel.compute_sol_pct, w.kernel.memory_sol_pct) if x is not None)
            if w.kernel.compute_sol_pct is not None or w.kernel.memory_sol_pct is not None
            else None for w in ws]
    if any(n is None for n in near):
        return ("Up to the nearer ceiling: these kernels use well under 60% of both compute "
                "and memory throughput.")
    high = f.high_pct
    gone = sum(w.weight * max(0.0, 1 - (n or 0.0) / high) for w, n in zip(ws, near, strict=True))
    each = "; ".join(f"`{short(w.kernel.name, 50)}` at {n:.1f}% of its nearer ceiling"
                     for w, n in zip(ws[:kc.MAX_NAMED], near[:kc.MAX_NAMED], strict=True))
    return (f"At most {100 * gone:.1f}% of {kc.basis(f.kernels)} goes if each kernel reached "
            f"{high:g}% of its nearer ceiling ({each}; time × (1 − that % ÷ {high:g})): an "
            "A/B compares these kernels' time before and after.")


def phrase(c: Claim) -> Phrasing:
    f = c.facts
    if not isinstance(f, BelowRoofline):  # the counters regime (utilization_regime.py)
        raise TypeError(f"below-roofline facts: {type(f).__name__}")
    ks = kc.kernels_of(f.kernels)
    ws = f.kernels.kernels
    share: Share = c.share
    if f.grid_only:
        lines = [f"{kc.head(w)}: {w.kernel.bound_reason}; {kc.occupancy(w.kernel)}"
                 f"{_occupancy_note(f, w.kernel)}." for w in ws[:kc.MAX_NAMED]]
        more = (f" {len(ks) - kc.MAX_NAMED} more with the same grid problem "
                f"({kc.names(ks[kc.MAX_NAMED:])})." if len(ks) > kc.MAX_NAMED else "")
        ex = f.example
        example = (f" For comparison, the library kernel `{ex.name}` in the same capture runs "
                   f"{duration(ex.duration_ns or 0.0)} on a {ex.grid} grid = "
                   f"{ex.grid_blocks or 0:,.0f} blocks"
                   + (f", {ex.waves_per_sm:,.2f} waves per SM" if ex.waves_per_sm is not None
                      else "") + ".") if ex is not None else ""
        return Phrasing(
            title=f"Grid smaller than the GPU: {kc.names(ks)} launch fewer blocks than SMs "
                  f"({100 * share:.1f}% of {kc.basis(f.kernels)})",
            observation=" ".join(lines) + more + example, effect=_grid_effect(ks),
            details=kc.details(f.kernels))
    lines = [f"{kc.head(w)}: {w.kernel.bound_reason} ({w.kernel.bound}); "
             f"{kc.occupancy(w.kernel)}{_occupancy_note(f, w.kernel)}; "
             f"{kc.roofline(w.kernel)}." for w in ws[:kc.MAX_NAMED]]
    obs = " ".join(lines) + kc.ncu_says(ks[0], ("SOLBottleneck", "TheoreticalOccupancy",
                                                "IssueSlotUtilization"))
    return Phrasing(
        title=f"Kernel{'s' if len(ks) > 1 else ''} far below the roofline: {kc.names(ks)} "
              f"({100 * share:.1f}% of {kc.basis(f.kernels)})",
        observation=obs, effect=_ceiling_effect(f, c), details=kc.details(f.kernels))


DECLARATION = Declaration(
    patterns=(PATTERN,), detect=detect, phrase=phrase, causes=(),
    thresholds=("occupancy_achieved_gap_pct", "occupancy_theoretical_low_pct", "kernel_red_share",
                "kernel_yellow_share", "roofline_high_pct"),
    fix_keys=(PATTERN, PATTERN + "-small-grid"),
    about=About(side="GPU kernel", kernel_side=True,
                yields_to=("tensor-cores-unused", "compute-bound", "memory-bandwidth-bound")))

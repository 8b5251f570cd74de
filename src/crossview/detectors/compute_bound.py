"""compute-bound: profiled kernels whose compute side leads the speed of light (ncu).

"At its roofline" is said only from achieved FLOP/s against the datasheet ceiling; an SM
throughput near 100% alone is reported as such, not as a roofline (conventions.md §1).

The fix follows the SM pipes the top kernel keeps busy (ncu pipe utilization), busiest first:
ALU-bound index math, FP64 math on a GPU with slow FP64 and FP32 matrix math need different
changes. Relieving one busy pipe shortens the kernel only down to the next busy pipe's share,
so the expected effect names that floor.
"""

from __future__ import annotations

from crossview.core.finding import Finding
from crossview.detectors import kernel_common as kc
from crossview.detectors.declare import Declaration
from crossview.knowledge import hardware
from crossview.knowledge.fixes import fix_for, variants
from crossview.sol.roofline import KernelRoofline
from crossview.units import duration, flop_rate
from crossview.views.views import Views

PATTERN = "compute-bound"
PIPE_FIXES = PATTERN + "-pipe"
DEFAULT_EFFECT = "Kernel time falls with the math done or with a faster pipe/precision."


def _fp64_ratio(k: KernelRoofline) -> tuple[float, str] | None:
    """(FP32 peak ÷ FP64 peak, the two ceilings in words) for the kernel's GPU, if stated."""
    spec = hardware.by_key(k.hw_key) if k.hw_key else None
    fp32, fp64 = (spec.peak_flops("fp32"), spec.peak_flops("fp64")) if spec else (None, None)
    if not spec or not fp32 or not fp64:
        return None
    return fp32 / fp64, (f"{spec.hw_key} runs FP64 at 1/{fp32 / fp64:.0f} of its FP32 rate "
                         f"({flop_rate(fp64)} vs {flop_rate(fp32)}, sol_ceilings.yaml)")


def _by_pipe(v: Views, k: KernelRoofline, where: str) -> tuple[str, str] | None:
    """(fix, expected effect) from the pipes `k` keeps at least compute_pipe_busy_pct busy,
    busiest first; None when no busy pipe has advice (the generic fix stands)."""
    advice = variants(PIPE_FIXES)
    busy = [(p, pct) for p, pct in k.busiest_pipes.items()
            if pct >= v.limits.compute_pipe_busy_pct and p in advice]
    if not busy:
        return None
    ratio = _fp64_ratio(k) if any(p == "fp64" for p, _ in busy) else None
    slow64 = ratio is not None and ratio[0] >= v.limits.fp64_slow_ratio
    parts = [fix_for(PIPE_FIXES, "fp64_slow" if p == "fp64" and slow64 else p)
             for p, _ in busy]
    fix = (f"Cut the work on the busy SM pipes of {where}, busiest first: "
           + " ".join(f"({i}) {t}" for i, t in enumerate(parts, 1)))
    effects = []
    if slow64 and ratio:
        effects.append(f"{ratio[1]}: FP64 work moved to FP32 gets up to "
                       f"{ratio[0]:.0f}× the pipe throughput.")
    if len(busy) > 1 and k.duration_ns:
        (p1, _), (p2, x2) = busy[0], busy[1]
        effects.append(
            f"Relieving the {p1.upper()} pipe alone leaves {where} at least as long as the "
            f"{p2.upper()} pipe stays busy ({x2:.1f}% of its {duration(k.duration_ns)}: "
            f"≥ {duration(k.duration_ns * x2 / 100)}); a larger cut needs the work on both.")
    return fix, " ".join(effects) or DEFAULT_EFFECT


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
    fix, effect = fix_for(key, None, kc.names(ks[:1])), DEFAULT_EFFECT
    if key == PATTERN and (piped := _by_pipe(v, top, kc.names(ks[:1]))):
        fix, effect = piped
    if top.pct_of_peak_flops is None:
        fix += " " + fix_for(PATTERN + ("-tensor-collect" if tensor else "-collect-roofline"),
                             None, kc.names(ks[:1]))
    return [kc.finding(
        PATTERN, sev, f"Compute-bound kernel{'s' if len(ks) > 1 else ''}: {kc.names(ks)} "
        f"({100 * share:.1f}% of {kc.basis(v, ks)})", obs,
        fix, share, ks, effect)]


DECLARATION = Declaration(
    patterns=(PATTERN,), detect=detect, causes=(),
    thresholds=("roofline_high_pct", "kernel_red_share", "kernel_yellow_share",
                "compute_pipe_busy_pct", "fp64_slow_ratio"),
    fix_keys=(PATTERN, PIPE_FIXES, PATTERN + "-tensor", PATTERN + "-at-roofline",
              PATTERN + "-collect-roofline", PATTERN + "-tensor-collect"))

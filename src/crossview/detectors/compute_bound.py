"""compute-bound: profiled kernels whose compute side leads the speed of light (ncu).

"At its roofline" is said only from achieved FLOP/s against the datasheet ceiling; an SM
throughput near 100% alone is reported as such, not as a roofline (conventions.md §1).

The fix follows the SM pipes the top kernel keeps busy (ncu pipe utilization), busiest first:
ALU-bound index math, FP64 math on a GPU with slow FP64 and FP32 matrix math need different
changes. Relieving one busy pipe shortens the kernel only down to the next busy pipe's share,
so the expected effect names that floor.
"""

from __future__ import annotations

from msgspec import Struct

from crossview.core.claim import Claim, Facts, FixPart, FlopRate, Pct, Phrasing, Ratio
from crossview.detectors import kernel_common as kc
from crossview.detectors.declare import About, Declaration
from crossview.knowledge import hardware
from crossview.knowledge.fixes import names as fix_names
from crossview.sol.roofline import KernelRoofline
from crossview.units import duration, flop_rate
from crossview.views.views import Views

PATTERN = "compute-bound"
PIPE_FIXES = PATTERN + "-pipe"
PIPES_INTRO = PATTERN + "-pipes"
DEFAULT_EFFECT = "Kernel time falls with the math done or with a faster pipe/precision."


class Fp64(Struct, frozen=True, kw_only=True):
    hw_key: str
    ratio: Ratio  # FP32 peak ÷ FP64 peak
    fp64: FlopRate
    fp32: FlopRate


class ComputeBound(Facts, frozen=True, kw_only=True):
    kernels: kc.KernelFacts
    busy: tuple[tuple[str, Pct], ...]  # the top kernel's pipes with advice, busiest first
    slow_fp64: Fp64 | None = None


def _fp64_ratio(k: KernelRoofline) -> Fp64 | None:
    """FP32 peak ÷ FP64 peak for the kernel's GPU, if stated."""
    spec = hardware.by_key(k.hw_key) if k.hw_key else None
    fp32, fp64 = (spec.peak_flops("fp32"), spec.peak_flops("fp64")) if spec else (None, None)
    if not spec or not fp32 or not fp64:
        return None
    return Fp64(hw_key=spec.hw_key, ratio=fp32 / fp64, fp64=fp64, fp32=fp32)


def detect(v: Views) -> list[Claim]:
    ks = [k for k in v.kernels if k.bound == "compute-bound"]
    if not ks:
        return []
    top = ks[0]
    at_roof = (top.pct_of_peak_flops or 0) >= v.limits.roofline_high_pct
    tensor = top.compute_class == "tensor-core"  # never told to "use tensor cores" (issue 17)
    key = PATTERN + ("-at-roofline" if at_roof else "-tensor" if tensor else "")
    subject = kc.names(ks[:1])
    advice = fix_names(PIPE_FIXES)
    busy = [(p, x) for p, x in top.busiest_pipes.items()
            if x >= v.limits.compute_pipe_busy_pct and p in advice] if key == PATTERN else []
    ratio = _fp64_ratio(top) if any(p == "fp64" for p, _ in busy) else None
    slow = ratio if ratio is not None and ratio.ratio >= v.limits.fp64_slow_ratio else None
    if busy:
        fix: tuple[FixPart, ...] = (FixPart(key=PIPES_INTRO, subject=subject), *(
            FixPart(key=PIPE_FIXES, flags=("fp64_slow" if p == "fp64" and slow else p,),
                    number=i) for i, (p, _) in enumerate(busy, 1)))
    else:
        fix = (FixPart(key=key, subject=subject),)
    if top.pct_of_peak_flops is None:
        fix = (*fix, FixPart(key=PATTERN + ("-tensor-collect" if tensor else
                                            "-collect-roofline"), subject=subject))
    return [kc.claim(PATTERN, v, ks, fix, form=key.removeprefix(PATTERN).lstrip("-"),
                     wrap=lambda kf: ComputeBound(kernels=kf, busy=tuple(busy),
                                                  slow_fp64=slow))]


def _effect(f: ComputeBound) -> str:
    if not f.busy:
        return DEFAULT_EFFECT
    k = f.kernels.kernels[0].kernel
    where = kc.names([k])
    effects = []
    if f.slow_fp64 is not None:
        r = f.slow_fp64
        effects.append(f"{r.hw_key} runs FP64 at 1/{r.ratio:.0f} of its FP32 rate "
                       f"({flop_rate(r.fp64)} vs {flop_rate(r.fp32)}, sol_ceilings.yaml): FP64 "
                       f"work moved to FP32 gets up to {r.ratio:.0f}× the pipe throughput.")
    if len(f.busy) > 1 and k.duration_ns:
        (p1, _), (p2, x2) = f.busy[0], f.busy[1]
        effects.append(
            f"Relieving the {p1.upper()} pipe alone leaves {where} at least as long as the "
            f"{p2.upper()} pipe stays busy ({x2:.1f}% of its {duration(k.duration_ns)}: "
            f"≥ {duration(k.duration_ns * x2 / 100)}); a larger cut needs the work on both.")
    return " ".join(effects) or DEFAULT_EFFECT


def phrase(c: Claim) -> Phrasing:
    f = c.facts
    assert isinstance(f, ComputeBound)
    ks = kc.kernels_of(f.kernels)
    lines = []
    for w in f.kernels.kernels[:kc.MAX_NAMED]:
        k = w.kernel
        line = f"{kc.head(w)}: {k.bound_reason}; {kc.roofline(k)}"
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
    return Phrasing(
        title=f"Compute-bound kernel{'s' if len(ks) > 1 else ''}: {kc.names(ks)} "
              f"({100 * c.share:.1f}% of {kc.basis(f.kernels)})",
        observation=" ".join(lines) + kc.ncu_says(ks[0], ("SOLBottleneck",)),
        effect=_effect(f), details=kc.details(f.kernels))


DECLARATION = Declaration(
    patterns=(PATTERN,), detect=detect, phrase=phrase, causes=(),
    thresholds=("roofline_high_pct", "kernel_red_share", "kernel_yellow_share",
                "compute_pipe_busy_pct", "fp64_slow_ratio"),
    fix_keys=(PATTERN, PIPE_FIXES, PIPES_INTRO, PATTERN + "-tensor", PATTERN + "-at-roofline",
              PATTERN + "-collect-roofline", PATTERN + "-tensor-collect"),
    about=About(side="GPU kernel", kernel_side=True, yields_to=("tensor-cores-unused",)))

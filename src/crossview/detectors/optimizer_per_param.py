"""optimizer-per-parameter: zero_grad, gradient accumulation and the optimizer step launch a
kernel per parameter, with the GPU idle meanwhile (views/host/optimizer_windows.py).

Counted parts: zero_grad when it launches kernels (it zero-fills: `set_to_none=False`), then
AccumulateGrad too (adding into zeroed gradients; with them set to None autograd assigns the
new gradient and launches nothing), and the step when it launches at least one kernel per
parameter (no `foreach` / `fused` multi-tensor kernels). The share is their GPU idle per mean
steady step. That time is host time the time account gives to dispatch, so the claim lies
within the causes that hold host work between launches (`within`).
"""

from __future__ import annotations

from msgspec import Struct

from crossview.core.claim import Claim, Count, CountF, Facts, FixPart, Ns, NsF, Owns, Phrasing
from crossview.detectors.common import cites, crossed, ms, pct
from crossview.detectors.declare import About, Declaration
from crossview.views.host import optimizer_windows
from crossview.views.host.optimizer_windows import Part
from crossview.views.views import Views

PATTERN = "optimizer-per-parameter"
_WHAT = {"zero_grad": "zero_grad's fills", "accumulate": "AccumulateGrad's adds",
         "step": "the optimizer step's updates"}


class OptPart(Struct, frozen=True, kw_only=True):
    name: str  # zero_grad | accumulate | step
    windows: Count
    kernels: Count
    idle_ns: Ns
    kernels_per_step: CountF
    idle_per_step_ns: NsF


class PerParam(Facts, frozen=True, kw_only=True):
    parts: tuple[OptPart, ...]
    steps: Count
    params: CountF  # gradients accumulated per step
    idle_ns: NsF  # GPU idle per step inside the parts
    wall_ns: NsF  # the mean steady step


def detect(v: Views) -> list[Claim]:
    if v.metrics.cpu_only:
        return []
    ow = optimizer_windows.compute(v)
    steady = v.steps.steady
    if ow is None or not steady:
        return []
    acc = ow.parts.get("accumulate")
    params = ow.per_step(acc.windows) if acc is not None else 0.0
    used: list[Part] = []
    zero = ow.parts.get("zero_grad")
    if zero is not None and zero.kernels:
        used.append(zero)
        if acc is not None and acc.kernels:
            used.append(acc)
    step = ow.parts.get("step")
    if step is not None and params and ow.per_step(step.kernels) >= params:
        used.append(step)
    if not used:
        return []
    wall = sum(s.wall_ns for s in steady) / len(steady)
    idle = sum(ow.per_step(p.idle_ns) for p in used)
    share = idle / wall if wall else 0.0
    cut = crossed(share, v.limits.optimizer_red_share, v.limits.optimizer_yellow_share,
                  ("optimizer_red_share", "optimizer_yellow_share"))
    if cut is None:
        return []
    kinds = [p.name for p in used]
    variant = ("both" if "step" in kinds and "zero_grad" in kinds
               else "step" if "step" in kinds else "zero_grad")
    return [Claim(
        pattern=PATTERN, share=share, tier=cut[0], cutoff=cut[1],
        owns=Owns(within=("cpu_dispatch", "launch_overhead")),
        fix=(FixPart(key=PATTERN, flags=(variant,)),), cites=cites(v, "optimizer-windows"),
        facts=PerParam(parts=tuple(OptPart(
            name=p.name, windows=p.windows, kernels=p.kernels, idle_ns=p.idle_ns,
            kernels_per_step=ow.per_step(p.kernels), idle_per_step_ns=ow.per_step(p.idle_ns))
            for p in used), steps=ow.steps, params=params, idle_ns=idle, wall_ns=wall))]


def phrase(c: Claim) -> Phrasing:
    f = c.facts
    assert isinstance(f, PerParam)
    parts = "; ".join(f"{_WHAT[p.name]} {p.kernels_per_step:,.0f} kernels, GPU idle "
                      f"{ms(int(p.idle_per_step_ns))}" for p in f.parts)
    kernels = sum(p.kernels_per_step for p in f.parts)
    return Phrasing(
        title=(f"Per-parameter optimizer work: {kernels:,.0f} kernels per step for "
               f"{f.params:,.0f} parameters, the GPU idle {pct(c.share)} of the step meanwhile"),
        observation=(f"Per step ({f.steps} steps; {f.params:,.0f} gradients accumulated per "
                     f"step): {parts}. In all {ms(int(f.idle_ns))} of GPU idle per step "
                     f"({pct(c.share)} of the {ms(int(f.wall_ns))} mean steady step) while the "
                     "host walks the parameters one by one."),
        effect=(f"Up to {ms(int(f.idle_ns))} per step, the GPU idle inside these windows; "
                "an A/B counts the kernels per step and compares the median step."),
        details={"parts": {p.name: {"windows": p.windows, "kernels": p.kernels,
                                    "idle_ns": p.idle_ns} for p in f.parts},
                 "steps": f.steps, "params_per_step": f.params})


DECLARATION = Declaration(
    patterns=(PATTERN,), detect=detect, phrase=phrase, causes=(),
    thresholds=("optimizer_red_share", "optimizer_yellow_share"), fix_keys=(PATTERN,),
    about=About(side="host"))

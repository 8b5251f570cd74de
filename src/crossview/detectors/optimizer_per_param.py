"""optimizer-per-parameter: zero_grad, gradient accumulation and the optimizer step launch a
kernel per parameter, with the GPU idle meanwhile (views/host/optimizer_windows.py).

Counted parts: zero_grad when it launches kernels (it zero-fills: `set_to_none=False`), then
AccumulateGrad too (adding into zeroed gradients; with them set to None autograd assigns the
new gradient and launches nothing), and the step when it launches at least one kernel per
parameter (no `foreach` / `fused` multi-tensor kernels). The share is their GPU idle per mean
steady step. That time is host time the time account gives to dispatch, so the finding lies
within the launch-bound one (finding_relations.yaml).
"""

from __future__ import annotations

from crossview.core.finding import Finding
from crossview.detectors.common import evidence, ms, pct, severity
from crossview.detectors.declare import Declaration
from crossview.knowledge.fixes import fix_for
from crossview.views.host import optimizer_windows
from crossview.views.host.optimizer_windows import Part
from crossview.views.views import Views

PATTERN = "optimizer-per-parameter"
_WHAT = {"zero_grad": "zero_grad's fills", "accumulate": "AccumulateGrad's adds",
         "step": "the optimizer step's updates"}


def detect(v: Views) -> list[Finding]:
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
    sev = severity(share, v.limits.optimizer_red_share, v.limits.optimizer_yellow_share)
    if sev is None:
        return []
    parts = "; ".join(f"{_WHAT[p.name]} {ow.per_step(p.kernels):,.0f} kernels, GPU idle "
                      f"{ms(int(ow.per_step(p.idle_ns)))}" for p in used)
    kinds = [p.name for p in used]
    variant = ("both" if "step" in kinds and "zero_grad" in kinds
               else "step" if "step" in kinds else "zero_grad")
    kernels = sum(ow.per_step(p.kernels) for p in used)
    return [Finding(
        pattern=PATTERN, severity=sev,
        title=(f"Per-parameter optimizer work: {kernels:,.0f} kernels per step for "
               f"{params:,.0f} parameters, the GPU idle {pct(share)} of the step meanwhile"),
        observation=(f"Per step ({ow.steps} steps; {params:,.0f} gradients accumulated per "
                     f"step): {parts}. In all {ms(int(idle))} of GPU idle per step "
                     f"({pct(share)} of the {ms(int(wall))} mean steady step) while the host "
                     "walks the parameters one by one."),
        fix=fix_for(PATTERN, variant),
        share=share,
        evidence=evidence(v, "Optimizer.zero_grad / Optimizer.step / AccumulateGrad host "
                             "intervals: kernels launched inside them and device idle"),
        expected_effect=(f"Up to {ms(int(idle))} per step, the GPU idle inside these windows; "
                         "an A/B counts the kernels per step and compares the median step."),
        details={"parts": {p.name: {"windows": p.windows, "kernels": p.kernels,
                                    "idle_ns": p.idle_ns} for p in used},
                 "steps": ow.steps, "params_per_step": params},
    )]


DECLARATION = Declaration(
    patterns=(PATTERN,), detect=detect, causes=(),
    thresholds=("optimizer_red_share", "optimizer_yellow_share"), fix_keys=(PATTERN,))

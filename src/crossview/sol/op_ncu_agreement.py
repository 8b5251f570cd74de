"""Analytic vs measured FLOPs: where a kernel has both an op model (sol/op_roofline.py) and
Nsight Compute counters (sol/roofline.py), compare the op's FLOPs per call with the
kernel's ncu FLOP count (achieved FLOP/s × duration). Reported as a check, never assumed:
ratio = analytic ÷ ncu, "agree" within knowledge/op_roofline.yaml ncu_agree_ratio_min/max.

Only op groups whose every call launched exactly one kernel are compared (a call split over
several kernels has no one ncu launch to compare with). Kernel names match exactly, or after
the name normalization the synthesis uses to match a profiled kernel to the timeline.
"""

from __future__ import annotations

from crossview.kernels.match import signature as normalize
from crossview.sol.op_roofline import OpGroup, limits
from crossview.sol.roofline import KernelRoofline


def compare(groups: list[OpGroup], kernels: list[KernelRoofline]) -> list[dict[str, object]]:
    lim = limits()
    out: list[dict[str, object]] = []
    for k in kernels:
        if not k.achieved_flops_per_s or not k.duration_ns:
            continue
        ncu_flops = k.achieved_flops_per_s * k.duration_ns * 1e-9
        g = _group_of(k.name, groups)
        if g is None or not g.flops:
            continue
        ratio = g.flops / ncu_flops
        out.append({
            "kernel": k.name, "op": g.op, "shape": g.shape, "dtype": g.dtype,
            "analytic_flops": g.flops, "ncu_flops": ncu_flops, "ratio": ratio,
            "agree": lim["ncu_agree_ratio_min"] <= ratio <= lim["ncu_agree_ratio_max"],
            "ncu_basis": "achieved FLOP/s × duration (ncu)",
        })
    return out


def _group_of(name: str, groups: list[OpGroup]) -> OpGroup | None:
    key = normalize(name)
    for g in groups:
        if g.kernels != g.calls:
            continue
        if name in g.kernel_names or key in {normalize(n) for n in g.kernel_names}:
            return g
    return None

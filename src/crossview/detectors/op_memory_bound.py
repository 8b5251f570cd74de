"""memory-bandwidth-bound (analytic): memory-bound ops already near the DRAM ceiling.

Reads sol/op_roofline.py. Op groups that the roofline calls memory-bound and that move
bytes at `memory_near_pct` or more of the GPU's DRAM bandwidth cannot go faster by better
math: the lever is fewer bytes (fusion, lower precision, quantized weights). Fires when their
share of kernel time reaches `memory_min_share` (knowledge/op_roofline.yaml). Stays silent
when Nsight Compute rows are in scope (detectors/memory_bound.py speaks from counters then).
"""

from __future__ import annotations

import re
from typing import Any

from crossview.core.finding import Finding
from crossview.detectors.common import kernel_evidence
from crossview.detectors.declare import Declaration
from crossview.knowledge.fixes import fix_for
from crossview.sol.op_roofline import OpGroup, OpRoofline, limits
from crossview.units import bandwidth, duration
from crossview.views.views import Views

PATTERN = "memory-bandwidth-bound"
_MATMUL = ("matmul", "conv")


def detect(v: Views) -> list[Finding]:
    if v.kernels:
        return []
    r = v.op_roofline
    lim = limits()
    near = [g for g in r.groups if g.bound == "memory" and g.peak_bytes_per_s
            and 100.0 * g.bytes_per_s / g.peak_bytes_per_s >= lim["memory_near_pct"]]
    share = sum(g.share for g in near)
    if not near or share < lim["memory_min_share"]:
        return []
    lines = [f"`{g.op}` {g.shape} {g.dtype}{_in(g.modules)}: {duration(g.time_ns)} "
             f"({100 * g.share:.1f}%), "
             f"{bandwidth(g.bytes_per_s)} = "
             f"{100 * g.bytes_per_s / (g.peak_bytes_per_s or 1):.1f}% of DRAM bandwidth"
             for g in near[:4]]
    sixteen = _sixteen_bit(r, lim)
    fix = fix_for("memory-bandwidth-bound-analytic",
                  _variant(r.training, r.no_bf16, sixteen, any(g.dtype == "fp32" for g in near)),
                  near[0].op)
    # inference matmuls this memory-bound read weights for few tokens (decode): fewer weight
    # bytes; in training they are a weight gradient's or a small head's, not weight-bound
    if not r.training and any(g.family == "matmul" for g in near):
        fix += " " + fix_for("memory-bandwidth-bound-weights", "fp16" if r.no_bf16 else None, "")
    obs = "; ".join(lines) + ". Bytes are the minimal traffic of the recorded shapes (analytic, " \
        "rigor L2)."
    effect = ("Time falls with the bytes moved: halving the bytes ("
              + ("a fused kernel" if sixteen else "16-bit instead of FP32, a fused kernel")
              + ") halves these ops' time at the same bandwidth.")
    norm = _norm_module(near, lim["norm_module_pattern"])
    if norm:
        ops = [g for g in r.groups if g.modules[:1] == [norm]]
        names = sorted({g.op for g in ops})
        t = duration(sum(g.time_ns for g in ops))
        obs += (f" `{norm}` alone runs {len(names)} distinct ops ({', '.join(names)}) over "
                f"{sum(g.calls for g in ops):,} calls: {t} "
                f"({100 * sum(g.share for g in ops):.1f}% of kernel time).")
        fix = fix_for("memory-bandwidth-bound-norm", None, norm) + " " + fix
        effect = (f"`{norm}`'s ops take {t} of kernel time; fused, the layer reads the "
                  f"activation once and writes it once instead of a read and a write per op "
                  f"({len(names)} ops), so most of the {t} goes — an A/B compares that "
                  f"module's kernel time. " + effect)
    return [Finding(
        pattern=PATTERN,
        severity="red" if share >= lim["memory_red_share"] else "yellow",
        title=f"Memory-bound ops near the DRAM ceiling ({len(near)} op groups, "
              f"{100 * share:.1f}% of kernel time)",
        observation=obs, fix=fix, share=share, share_of="kernel_time",
        evidence=kernel_evidence(v, "recorded input shapes × kernel time vs "
                                 "sol_ceilings.yaml DRAM bandwidth"),
        expected_effect=effect,
        details={"ops": [g.to_dict() for g in near[:8]], "basis": "analytic"})]


def _in(modules: list[str]) -> str:
    return f" in `{modules[0]}`" if modules else ""


def _norm_module(near: list[OpGroup], pattern: str) -> str | None:
    """The normalization module (nn.Module class) holding the most near-ceiling kernel time,
    if any (the ops then are its unfused elementwise chain)."""
    by: dict[str, int] = {}
    for g in near:
        if g.modules and re.search(pattern, g.modules[0]):
            by[g.modules[0]] = by.get(g.modules[0], 0) + g.time_ns
    return max(sorted(by), key=lambda m: by[m]) if by else None


def _sixteen_bit(r: OpRoofline, lim: dict[str, Any]) -> bool:
    """The model's matmuls and convolutions run in 16 (or fewer) bits: recorded ones exist and
    the FP32 ones stay under the share at which tensor-cores-unused speaks
    (`fp32_math_min_share`; a rotary embedding's tiny FP32 bmm is not the model's dtype). Its
    FP32 elementwise ops are then upcasts inside layers, which autocast does not remove."""
    mm = [g for g in r.groups if g.family in _MATMUL]
    fp32 = sum(g.share for g in mm if g.dtype == "fp32")
    return bool(mm) and fp32 < lim["fp32_math_min_share"]


def _variant(training: bool, no_bf16: list[str], sixteen_bit: bool, upcast: bool
             ) -> str | None:
    """fixes.yaml variant: training or inference text; no mixed-precision advice where the
    matmuls already run in 16 bits (FP32 ops among the near ones, `upcast`, are then casts
    inside layers); the FP16 wording on GPUs without BF16 (V100, T4: autocast to BF16 there
    is not a tensor-core path)."""
    if sixteen_bit:
        return "training_16bit" if training else "sixteen_bit_upcast" if upcast else "sixteen_bit"
    if training:
        return "training_fp16" if no_bf16 else "training"
    return "fp16" if no_bf16 else None


DECLARATION = Declaration(
    patterns=(PATTERN,), detect=detect, causes=(),
    thresholds=("op_roofline.yaml:memory_near_pct", "op_roofline.yaml:memory_min_share",
                "op_roofline.yaml:memory_red_share", "op_roofline.yaml:training_op_markers",
                "op_roofline.yaml:norm_module_pattern", "op_roofline.yaml:fp32_math_min_share"),
    fix_keys=("memory-bandwidth-bound-analytic", "memory-bandwidth-bound-norm",
              "memory-bandwidth-bound-weights"))

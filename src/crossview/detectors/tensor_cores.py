"""tensor-cores-unused: matmul-like kernels that measurably did not use the tensor cores.

Only when it matters: the kernel's arithmetic intensity is at or above the device's FP32
ridge point (peak FP32 FLOP/s ÷ peak DRAM bytes/s), or it is compute-bound. A GEMV at
1 FLOP/byte is memory-bound whatever pipe does its math, so it is not flagged.
"""

from __future__ import annotations

from crossview.core.finding import Finding
from crossview.detectors import kernel_common as kc
from crossview.detectors.declare import Declaration
from crossview.knowledge import hardware
from crossview.knowledge.fixes import fix_for
from crossview.sol.roofline import KernelRoofline
from crossview.units import flop_rate
from crossview.views.views import Views

PATTERN = "tensor-cores-unused"
MATMUL_FAMILIES = ("gemm", "attention", "moe")


def _matters(k: KernelRoofline) -> tuple[bool, str]:
    if k.bound == "compute-bound":
        return True, "compute-bound"
    spec = hardware.by_key(k.hw_key) if k.hw_key else None
    peak, bw = (spec.peak_flops("fp32"), spec.dram_bytes_per_s) if spec else (None, None)
    ai = k.arithmetic_intensity
    if ai is not None and peak and bw and ai >= peak / bw:
        return True, (f"{ai:,.3g} FLOP/byte is above the FP32 ridge point "
                      f"{peak / bw:,.3g} FLOP/byte of {spec.hw_key}")  # type: ignore[union-attr]
    return False, ""


def detect(v: Views) -> list[Finding]:
    hits: list[tuple[KernelRoofline, str]] = []
    for k in v.kernels:
        if k.tensor_cores is False and k.family in MATMUL_FAMILIES:
            ok, why = _matters(k)
            if ok:
                hits.append((k, why))
    if not hits:
        return []
    ks = [k for k, _ in hits]
    share, sev = kc.weigh(v, ks)
    obs = " ".join(f"{kc.head(v, k)} is a {k.family} kernel and {why}, yet "
                   f"{k.tensor_evidence}; {kc.roofline(k)}." for k, why in hits[:kc.MAX_NAMED])
    spec = hardware.by_key(ks[0].hw_key) if ks[0].hw_key else None
    fp32 = spec.peak_flops("fp32") if spec else None
    tc = spec.peak_flops("bf16_tensor") or spec.peak_flops("fp16_tensor") if spec else None
    # TF32 / BF16 advice is void on a GPU whose tensor cores take FP16 only (V100, T4)
    fp16_only = bool(spec and spec.peak_flops("fp16_tensor") and not (
        spec.peak_flops("bf16_tensor") or spec.peak_flops("tf32_tensor")))
    effect = (f"On {spec.hw_key} the bf16/fp16 tensor ceiling is {flop_rate(tc)} against "
              f"{flop_rate(fp32)} on FP32 CUDA cores (sol_ceilings.yaml)."
              if spec and tc and fp32 else
              "Up to the tensor-core ceiling of the GPU, a multiple of its FP32 ceiling.")
    return [kc.finding(
        PATTERN, sev, f"Tensor cores unused by {kc.names(ks)} "
        f"({100 * share:.1f}% of {kc.basis(v, ks)})", obs,
        fix_for(PATTERN, "no_bf16" if fp16_only else None, kc.names(ks[:1])), share, ks,
        effect)]


DECLARATION = Declaration(
    patterns=(PATTERN,), detect=detect, causes=(),
    thresholds=("kernel_red_share", "kernel_yellow_share"),
    fix_keys=(PATTERN,))

"""tensor-cores-unused: matmul-like kernels that measurably did not use the tensor cores.

Only when it matters: the kernel's arithmetic intensity is at or above the device's FP32
ridge point (peak FP32 FLOP/s ÷ peak DRAM bytes/s), or it is compute-bound. A GEMV at
1 FLOP/byte is memory-bound whatever pipe does its math, so it is not claimed.
"""

from __future__ import annotations

from msgspec import Struct

from crossview.core.claim import Claim, Facts, FixPart, FlopRate, Intensity, Phrasing
from crossview.detectors import kernel_common as kc
from crossview.detectors.declare import About, Declaration
from crossview.knowledge import hardware
from crossview.sol.roofline import KernelRoofline
from crossview.units import flop_rate
from crossview.views.views import Views

PATTERN = "tensor-cores-unused"
MATMUL_FAMILIES = ("gemm", "attention", "moe")


class Why(Struct, frozen=True, kw_only=True):
    compute_bound: bool
    intensity: Intensity | None = None  # at or above the ridge point
    ridge: Intensity | None = None
    hw_key: str | None = None


class Ceilings(Struct, frozen=True, kw_only=True):
    hw_key: str
    tensor: FlopRate | None
    fp32: FlopRate | None


class TensorUnused(Facts, frozen=True, kw_only=True):
    kernels: kc.KernelFacts
    why: tuple[Why, ...]
    ceilings: Ceilings | None


def _matters(k: KernelRoofline) -> Why | None:
    if k.bound == "compute-bound":
        return Why(compute_bound=True)
    spec = hardware.by_key(k.hw_key) if k.hw_key else None
    peak, bw = (spec.peak_flops("fp32"), spec.dram_bytes_per_s) if spec else (None, None)
    ai = k.arithmetic_intensity
    if spec and ai is not None and peak and bw and ai >= peak / bw:
        return Why(compute_bound=False, intensity=ai, ridge=peak / bw, hw_key=spec.hw_key)
    return None


def detect(v: Views) -> list[Claim]:
    hits: list[tuple[KernelRoofline, Why]] = []
    for k in v.kernels:
        if k.tensor_cores is False and k.family in MATMUL_FAMILIES:
            why = _matters(k)
            if why is not None:
                hits.append((k, why))
    if not hits:
        return []
    ks = [k for k, _ in hits]
    spec = hardware.by_key(ks[0].hw_key) if ks[0].hw_key else None
    fp32 = spec.peak_flops("fp32") if spec else None
    tc = spec.peak_flops("bf16_tensor") or spec.peak_flops("fp16_tensor") if spec else None
    # TF32 / BF16 advice is void on a GPU whose tensor cores take FP16 only (V100, T4)
    fp16_only = bool(spec and spec.peak_flops("fp16_tensor") and not (
        spec.peak_flops("bf16_tensor") or spec.peak_flops("tf32_tensor")))
    fix = FixPart(key=PATTERN, flags=("no_bf16",) if fp16_only else (), subject=kc.names(ks[:1]))
    return [kc.claim(PATTERN, v, ks, (fix,), wrap=lambda kf: TensorUnused(
        kernels=kf, why=tuple(w for _, w in hits),
        ceilings=Ceilings(hw_key=spec.hw_key, tensor=tc, fp32=fp32) if spec else None))]


def phrase(c: Claim) -> Phrasing:
    f = c.facts
    if not isinstance(f, TensorUnused):
        raise TypeError(f"tensor-cores-unused facts: {type(f).__name__}")
    ks = kc.kernels_of(f.kernels)
    parts = []
    for w, why in list(zip(f.kernels.kernels, f.why, strict=True))[:kc.MAX_NAMED]:
        reason = ("compute-bound" if why.compute_bound else
                  f"{why.intensity:,.3g} FLOP/byte is above the FP32 ridge point "
                  f"{why.ridge:,.3g} FLOP/byte of {why.hw_key}")
        parts.append(f"{kc.head(w)} is a {w.kernel.family} kernel and {reason}, yet "
                     f"{w.kernel.tensor_evidence}; {kc.roofline(w.kernel)}.")
    ce = f.ceilings
    effect = (f"On {ce.hw_key} the bf16/fp16 tensor ceiling is {flop_rate(ce.tensor)} against "
              f"{flop_rate(ce.fp32)} on FP32 CUDA cores (sol_ceilings.yaml)."
              if ce and ce.tensor and ce.fp32 else
              "Up to the tensor-core ceiling of the GPU, a multiple of its FP32 ceiling.")
    return Phrasing(
        title=f"Tensor cores unused by {kc.names(ks)} ({100 * c.share:.1f}% of "
              f"{kc.basis(f.kernels)})",
        observation=" ".join(parts), effect=effect, details=kc.details(f.kernels))


DECLARATION = Declaration(
    patterns=(PATTERN,), detect=detect, phrase=phrase, causes=(),
    thresholds=("kernel_red_share", "kernel_yellow_share"),
    fix_keys=(PATTERN,), about=About(side="GPU kernel", kernel_side=True))

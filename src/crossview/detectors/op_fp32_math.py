"""tensor-cores-unused (analytic): compute-bound FP32 matmuls/convolutions on a tensor-core GPU.

Reads sol/op_roofline.py. Op groups of the matmul/conv/attention families whose recorded dtype
is FP32, whose roofline is the FP32 CUDA-core ceiling and which are compute-bound run at a
ceiling the GPU's 16-bit tensor cores exceed many times over (V100: 125 TFLOP/s FP16 tensor
vs 15.7 TFLOP/s FP32). Being near that FP32 ceiling is not efficiency: the ceiling is the wrong
one. Kernels whose names already say tensor cores (TF32 cuDNN kernels on Ampere and later:
`tensor_kernel_markers`) are left out. Silent when Nsight Compute rows are in scope
(detectors/tensor_cores.py speaks from counters then). Thresholds: knowledge/op_roofline.yaml.
"""

from __future__ import annotations

from msgspec import Struct

from crossview.core.claim import (
    Claim,
    Count,
    Cutoff,
    Facts,
    FixPart,
    FlopRate,
    Ns,
    NsF,
    Owns,
    Pct,
    Phrasing,
    Share,
)
from crossview.detectors.common import kernel_cites, kernel_time_ab, step_share
from crossview.detectors.declare import About, Declaration
from crossview.detectors.kernel_inefficiency import group_key
from crossview.knowledge import hardware
from crossview.knowledge.hardware import HwSpec
from crossview.sol.op_roofline import OpGroup, limits
from crossview.units import duration, flop_rate
from crossview.views.views import Views

PATTERN = "tensor-cores-unused"
_FAMILIES = ("matmul", "conv", "attention")


class Ceiling(Struct, frozen=True, kw_only=True):
    gpu: str  # the datasheet name
    precision: str  # FP16 | BF16: the tensor ceiling mixed precision reaches
    tensor: FlopRate
    fp32: FlopRate


class NamedKernel(Struct, frozen=True):
    name: str
    ns: Ns


class Fp32Math(Facts, frozen=True, kw_only=True):
    ceiling: Ceiling
    kernel_share: Share  # of kernel time (the claim's share is of the step)
    kernel_ns: Ns  # these ops' (or kernels') kernel time
    all_kernel_ns: Ns
    busy_pct: Pct  # GPU busy over the kernel span
    bound_pct: Pct  # kernel_bound_busy_pct
    groups: tuple[OpGroup, ...] = ()  # from recorded shapes
    median_pct: Pct | None = None  # of the FP32 ceiling, over the groups
    n_groups: Count = 0  # with a % of roofline
    n_hits: Count = 0
    floor_ns: NsF | None = None  # the ops' speed-of-light time in 16 bits on tensor cores
    kernels: tuple[NamedKernel, ...] = ()  # from kernel names (no shapes)
    n_kernels: Count = 0
    top_kernel: str = ""


def _tensor_ceiling(spec: HwSpec) -> tuple[str, float] | None:
    """The 16-bit tensor ceiling mixed precision reaches on this GPU: BF16 where stated, else
    FP16 (Volta, Turing)."""
    for key in ("bf16_tensor", "fp16_tensor"):
        if peak := spec.peak_flops(key):
            return key, peak
    return None


def _fp32_bound(g: OpGroup, markers: list[str]) -> bool:
    return (g.family in _FAMILIES and g.dtype == "fp32" and g.ceiling == "fp32"
            and g.bound == "compute" and bool(g.flops)
            and not any(m in k.lower() for k in g.kernel_names for m in markers))


def _floor_ns(g: OpGroup, peak: float, bw: float | None) -> float:
    """Speed-of-light kernel time of the group in 16 bits: FLOPs at the tensor ceiling, or
    half the bytes at DRAM bandwidth, whichever is longer."""
    per_call = max(g.flops / peak, (g.bytes / 2 / bw) if bw else 0.0)
    return g.calls * per_call * 1e9


def _flags(training: bool, key: str) -> tuple[str, ...]:
    return (("training" if training else "inference") + ("_fp16" if key == "fp16_tensor"
                                                         else ""),)


def _ceilings(hw_key: str | None) -> tuple[HwSpec, str, float, float] | None:
    spec = hardware.by_key(hw_key) if hw_key else None
    tc = _tensor_ceiling(spec) if spec else None
    fp32 = spec.peak_flops("fp32") if spec else None
    if spec is None or tc is None or not fp32 or tc[1] / fp32 < limits()["fp32_math_min_gain"]:
        return None
    return spec, tc[0], tc[1], fp32


def _claim(v: Views, share: float, facts: Fp32Math, fix: FixPart, owns: Owns,
           read: str) -> Claim:
    """The claim both paths make: its cut from its kernel-time share, ranked on the step
    basis (its share of kernel time × the busy-kernel fraction of the step)."""
    red = limits()["fp32_math_red_share"]
    return Claim(pattern=PATTERN, form=read, share=step_share(v, share),
                 tier="top" if share >= red else "consider",
                 cutoff=Cutoff("op_roofline.yaml:fp32_math_red_share" if share >= red else
                               "op_roofline.yaml:fp32_math_min_share",
                               red if share >= red else limits()["fp32_math_min_share"], share,
                               limits()["fp32_math_min_share"] if share >= red else None),
                 owns=owns, fix=(fix,), cites=kernel_cites(v, read), facts=facts)


def detect(v: Views) -> list[Claim]:
    if v.kernels:
        return []
    r = v.op_roofline
    return _from_shapes(v) if r.groups else _from_names(v)


def _ceiling(spec: HwSpec, key: str, peak: float, fp32: float) -> Ceiling:
    return Ceiling(gpu=spec.name, precision=key.split("_")[0].upper(), tensor=peak, fp32=fp32)


def _from_shapes(v: Views) -> list[Claim]:
    r = v.op_roofline
    lim = limits()
    hits = [g for g in r.groups if _fp32_bound(g, lim["tensor_kernel_markers"])]
    ceil = _ceilings(hits[0].hw_key) if hits else None
    if ceil is None:
        return []
    spec, key, peak, fp32 = ceil
    hits = [g for g in hits if g.hw_key == spec.hw_key]
    share = sum(g.share for g in hits)
    if share < lim["fp32_math_min_share"]:
        return []
    ns = sum(g.time_ns for g in hits)
    pct = sorted(g.pct_of_roofline for g in hits if g.pct_of_roofline is not None)
    return [_claim(v, share, Fp32Math(
        ceiling=_ceiling(spec, key, peak, fp32), kernel_share=share, kernel_ns=ns,
        all_kernel_ns=r.kernel_ns, busy_pct=v.metrics.kernel_busy_pct,
        bound_pct=lim["kernel_bound_busy_pct"], groups=tuple(hits[:8]),
        median_pct=pct[len(pct) // 2] if pct else 0.0, n_groups=len(pct), n_hits=len(hits),
        floor_ns=sum(_floor_ns(g, peak, spec.dram_bytes_per_s) for g in hits),
        top_kernel=hits[0].top_kernel),
        FixPart(key=PATTERN, flags=_flags(r.training, key), subject=hits[0].op),
        Owns(ops=tuple(group_key(g) for g in hits)), "fp32-shapes")]


def _from_names(v: Views) -> list[Claim]:
    """No recorded shapes: the kernel names say FP32 CUDA-core GEMMs (cuBLAS `volta_sgemm_*`,
    cuDNN `*_engine<float…>`); no FLOPs, so no floor — the ceiling ratio only."""
    r = v.op_roofline
    lim = limits()
    ceil = _ceilings(r.fp32_kernels[0][0]) if r.fp32_kernels and r.kernel_ns else None
    if ceil is None:
        return []
    spec, key, peak, fp32 = ceil
    rows = [(n, t) for k, n, t in r.fp32_kernels if k == spec.hw_key]
    ns = sum(t for _, t in rows)
    share = ns / r.kernel_ns
    if share < lim["fp32_math_min_share"]:
        return []
    return [_claim(v, share, Fp32Math(
        ceiling=_ceiling(spec, key, peak, fp32), kernel_share=share, kernel_ns=ns,
        all_kernel_ns=r.kernel_ns, busy_pct=v.metrics.kernel_busy_pct,
        bound_pct=lim["kernel_bound_busy_pct"],
        kernels=tuple(NamedKernel(n, t) for n, t in rows[:8]), n_kernels=len(rows)),
        FixPart(key=PATTERN, flags=_flags(r.training, key), subject="the GEMMs named above"),
        Owns(kernels=tuple(n for n, _ in rows)), "fp32-names")]


def phrase(c: Claim) -> Phrasing:
    f = c.facts
    assert isinstance(f, Fp32Math)
    ce = f.ceiling
    ratio = ce.tensor / ce.fp32
    if f.groups:
        measured, kernels = ("the step time and these ops' kernel time of the mixed-precision "
                             "run", "these ops")
        lines = [f"`{g.op}` {g.shape}: {duration(g.time_ns)} ({100 * g.share:.1f}%), "
                 f"{g.pct_of_roofline or 0:.1f}% of the FP32 ceiling" for g in f.groups[:3]]
        title = (f"FP32 matmul/convolution math on CUDA cores: {f.n_hits} compute-bound op "
                 f"groups, {100 * f.kernel_share:.1f}% of kernel time, on a GPU whose "
                 f"{ce.precision} tensor ceiling is {ratio:.1f}× its FP32 one")
        obs = ("; ".join(lines) + f" ({f.n_groups} groups, median {f.median_pct or 0:.1f}% of "
               f"the FP32 ceiling). Near the FP32 ceiling is not efficiency here: {ce.gpu} "
               f"states {flop_rate(ce.tensor)} {ce.precision} tensor against "
               f"{flop_rate(ce.fp32)} FP32, and the kernels (`" + f.top_kernel[:60] + "`…) are "
               "FP32 CUDA-core kernels. FLOPs from the recorded shapes (analytic, rigor L2).")
        floor = f.floor_ns or 0.0
        effect = (f"These ops take {duration(f.kernel_ns)} of kernel time; their speed-of-light "
                  f"floor in {ce.precision} on tensor cores is {duration(floor)} (FLOPs at "
                  f"{flop_rate(ce.tensor)}, half the bytes at DRAM bandwidth), so at most "
                  f"{duration(max(f.kernel_ns - floor, 0))} of kernel time goes; real kernels "
                  "stop short of the floor.")
        details: dict[str, object] = {
            "ops": [g.to_dict() for g in f.groups], "basis": "analytic",
            "tensor_ceiling": ce.precision.lower() + "_tensor", "kernel_ns": f.kernel_ns,
            "floor_ns": f.floor_ns}
    else:
        measured, kernels = ("the step time and these kernels' time of the mixed-precision "
                             "run", "these GEMMs")
        named = "; ".join(f"`{k.name[:60]}` {duration(k.ns)} "
                          f"({100 * k.ns / f.all_kernel_ns:.1f}%)" for k in f.kernels[:3])
        title = (f"FP32 GEMMs on CUDA cores: {f.n_kernels} distinct sgemm-class kernels, "
                 f"{100 * f.kernel_share:.1f}% of kernel time, on a GPU whose {ce.precision} "
                 f"tensor ceiling is {ratio:.1f}× its FP32 one")
        obs = (f"{named}. The names are FP32 CUDA-core kernels (cuBLAS *sgemm*, cuDNN "
               f"*_engine<float>*); {ce.gpu} states {flop_rate(ce.tensor)} {ce.precision} "
               f"tensor against {flop_rate(ce.fp32)} FP32. The trace records no input shapes, "
               "so no FLOPs: re-capture with `record_shapes=True` for each op's floor.")
        effect = (f"These kernels take {duration(f.kernel_ns)} of kernel time at a ceiling of "
                  f"{flop_rate(ce.fp32)}; on tensor cores the ceiling is "
                  f"{flop_rate(ce.tensor)} ({ratio:.1f}×).")
        details = {"kernels": [{"name": k.name, "time_ns": k.ns} for k in f.kernels],
                   "basis": "kernel names", "tensor_ceiling": ce.precision.lower() + "_tensor",
                   "kernel_ns": f.kernel_ns}
    ab = kernel_time_ab(f.busy_pct, f.bound_pct, measured, kernels)
    if f.busy_pct >= f.bound_pct:
        # the A/B sentence holds while the kernels are the step: the replay's critical path
        # may say the step waits on other work (verdict/prose.py)
        return Phrasing(title=title, observation=obs, effect=effect,
                        ab=(ab, f"An A/B compares {measured} before and after."),
                        details=details)
    return Phrasing(title=title, observation=obs, effect=f"{effect} {ab}", details=details)


DECLARATION = Declaration(
    patterns=(PATTERN,), detect=detect, phrase=phrase, causes=(),
    thresholds=("op_roofline.yaml:fp32_math_min_share", "op_roofline.yaml:fp32_math_red_share",
                "op_roofline.yaml:fp32_math_min_gain", "op_roofline.yaml:tensor_kernel_markers",
                "op_roofline.yaml:fp32_kernel_markers", "op_roofline.yaml:training_op_markers",
                "op_roofline.yaml:kernel_bound_busy_pct"),
    fix_keys=(PATTERN,), about=About(side="GPU kernel", kernel_side=True))

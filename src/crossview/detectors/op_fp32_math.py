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

from crossview.core.finding import Finding
from crossview.detectors.common import kernel_evidence, kernel_time_ab, step_share
from crossview.detectors.declare import Declaration
from crossview.knowledge import hardware
from crossview.knowledge.fixes import fix_for
from crossview.knowledge.hardware import HwSpec
from crossview.sol.op_roofline import OpGroup, limits
from crossview.units import duration, flop_rate
from crossview.views.views import Views

PATTERN = "tensor-cores-unused"
_FAMILIES = ("matmul", "conv", "attention")


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


def _variant(training: bool, key: str) -> str:
    return ("training" if training else "inference") + ("_fp16" if key == "fp16_tensor" else "")


def _ceilings(hw_key: str | None) -> tuple[HwSpec, str, float, float] | None:
    spec = hardware.by_key(hw_key) if hw_key else None
    tc = _tensor_ceiling(spec) if spec else None
    fp32 = spec.peak_flops("fp32") if spec else None
    if spec is None or tc is None or not fp32 or tc[1] / fp32 < limits()["fp32_math_min_gain"]:
        return None
    return spec, tc[0], tc[1], fp32


def _finding(v: Views, share: float, *, title: str, observation: str, fix: str, what: str,
             expected_effect: str, measured: str, kernels: str,
             details: dict[str, object]) -> Finding:
    """The finding both paths make: severity by kernel-time share, ranked on the step basis.
    The A/B sentence follows the GPU's busy share; where the GPU is busy enough to call the
    kernels the step, that claim is kept in `details.busy_claim` for the replay's critical
    path to replace when the step waits on other work (replay/findings.py _on_path)."""
    lim = limits()
    busy = v.metrics.kernel_busy_pct
    ab = kernel_time_ab(busy, lim["kernel_bound_busy_pct"], measured, kernels)
    if busy >= lim["kernel_bound_busy_pct"]:
        details["busy_claim"] = {"text": ab,
                                 "instead": f"An A/B compares {measured} before and after."}
    return Finding(pattern=PATTERN,
                   severity="red" if share >= lim["fp32_math_red_share"] else "yellow",
                   title=title, observation=observation, fix=fix, share=step_share(v, share),
                   evidence=kernel_evidence(v, what), expected_effect=f"{expected_effect} {ab}",
                   details=details)


def detect(v: Views) -> list[Finding]:
    if v.kernels:
        return []
    r = v.op_roofline
    return _from_shapes(v) if r.groups else _from_names(v)


def _from_shapes(v: Views) -> list[Finding]:
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
    floor = sum(_floor_ns(g, peak, spec.dram_bytes_per_s) for g in hits)
    pct = sorted(g.pct_of_roofline for g in hits if g.pct_of_roofline is not None)
    lines = [f"`{g.op}` {g.shape}: {duration(g.time_ns)} ({100 * g.share:.1f}%), "
             f"{g.pct_of_roofline or 0:.1f}% of the FP32 ceiling" for g in hits[:3]]
    precision = key.split("_")[0].upper()
    return [_finding(
        v, share,
        title=f"FP32 matmul/convolution math on CUDA cores: {len(hits)} compute-bound op "
              f"groups, {100 * share:.1f}% of kernel time, on a GPU whose {precision} tensor "
              f"ceiling is {peak / fp32:.1f}× its FP32 one",
        observation="; ".join(lines) + f" ({len(pct)} groups, median "
                    f"{pct[len(pct) // 2] if pct else 0:.1f}% of the FP32 ceiling). Near the "
                    f"FP32 ceiling is not efficiency here: {spec.name} states "
                    f"{flop_rate(peak)} {precision} tensor against {flop_rate(fp32)} FP32, and "
                    "the kernels (`" + hits[0].top_kernel[:60] + "`…) are FP32 CUDA-core "
                    "kernels. FLOPs from the recorded shapes (analytic, rigor L2).",
        fix=fix_for(PATTERN, _variant(r.training, key), hits[0].op),
        what="recorded input shapes and dtypes × kernel time vs sol_ceilings.yaml FP32 and "
             "tensor ceilings",
        expected_effect=f"These ops take {duration(ns)} of kernel time; their speed-of-light "
                        f"floor in {precision} on tensor cores is {duration(floor)} (FLOPs at "
                        f"{flop_rate(peak)}, half the bytes at DRAM bandwidth), so at most "
                        f"{duration(max(ns - floor, 0))} of kernel time goes; real kernels stop "
                        "short of the floor.",
        measured="the step time and these ops' kernel time of the mixed-precision run",
        kernels="these ops",
        details={"ops": [g.to_dict() for g in hits[:8]], "basis": "analytic",
                 "tensor_ceiling": key, "kernel_ns": ns, "floor_ns": floor})]


def _from_names(v: Views) -> list[Finding]:
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
    precision = key.split("_")[0].upper()
    named = "; ".join(f"`{n[:60]}` {duration(t)} ({100 * t / r.kernel_ns:.1f}%)"
                      for n, t in rows[:3])
    return [_finding(
        v, share,
        title=f"FP32 GEMMs on CUDA cores: {len(rows)} distinct sgemm-class kernels, "
              f"{100 * share:.1f}% of kernel time, on a GPU whose {precision} tensor ceiling "
              f"is {peak / fp32:.1f}× its FP32 one",
        observation=f"{named}. The names are FP32 CUDA-core kernels (cuBLAS *sgemm*, cuDNN "
                    f"*_engine<float>*); {spec.name} states {flop_rate(peak)} {precision} "
                    f"tensor against {flop_rate(fp32)} FP32. The trace records no input shapes, "
                    "so no FLOPs: re-capture with `record_shapes=True` for each op's floor.",
        fix=fix_for(PATTERN, _variant(r.training, key), "the GEMMs named above"),
        what="kernel names (gemm family) × kernel time vs sol_ceilings.yaml FP32 and tensor "
             "ceilings",
        expected_effect=f"These kernels take {duration(ns)} of kernel time at a ceiling of "
                        f"{flop_rate(fp32)}; on tensor cores the ceiling is {flop_rate(peak)} "
                        f"({peak / fp32:.1f}×).",
        measured="the step time and these kernels' time of the mixed-precision run",
        kernels="these GEMMs",
        details={"kernels": [{"name": n, "time_ns": t} for n, t in rows[:8]],
                 "basis": "kernel names", "tensor_ceiling": key, "kernel_ns": ns})]


DECLARATION = Declaration(
    patterns=(PATTERN,), detect=detect, causes=(),
    thresholds=("op_roofline.yaml:fp32_math_min_share", "op_roofline.yaml:fp32_math_red_share",
                "op_roofline.yaml:fp32_math_min_gain", "op_roofline.yaml:tensor_kernel_markers",
                "op_roofline.yaml:fp32_kernel_markers", "op_roofline.yaml:training_op_markers",
                "op_roofline.yaml:kernel_bound_busy_pct"),
    fix_keys=(PATTERN,))

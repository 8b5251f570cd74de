"""memory-bandwidth-bound (analytic): memory-bound ops already near the DRAM ceiling.

Reads sol/op_roofline.py. Op groups that the roofline calls memory-bound and that move
bytes at `memory_near_pct` or more of the GPU's DRAM bandwidth cannot go faster by better
math: the lever is fewer bytes (fusion, lower precision, quantized weights). Claimed when their
share of kernel time reaches `memory_min_share` (knowledge/op_roofline.yaml). Stays silent
when Nsight Compute rows are in scope (detectors/memory_bound.py speaks from counters then).
"""

from __future__ import annotations

import re
from typing import Any

from msgspec import Struct

from crossview.core.claim import Claim, Count, Cutoff, Facts, FixPart, Ns, Owns, Phrasing, Share
from crossview.detectors.common import kernel_cites
from crossview.detectors.declare import About, Declaration
from crossview.detectors.kernel_inefficiency import group_key
from crossview.sol.op_roofline import OpGroup, OpRoofline, limits
from crossview.units import bandwidth, duration
from crossview.views.views import Views

PATTERN = "memory-bandwidth-bound"
_MATMUL = ("matmul", "conv")


class NormModule(Struct, frozen=True, kw_only=True):
    name: str
    ops: tuple[str, ...]  # its distinct ops
    calls: Count
    ns: Ns
    share: Share


class NearDram(Facts, frozen=True, kw_only=True):
    groups: tuple[OpGroup, ...]  # the near-ceiling groups (first 8)
    count: Count
    sixteen_bit: bool  # the model's matmuls already run in 16 bits
    norm: NormModule | None = None


def detect(v: Views) -> list[Claim]:
    if v.kernels:
        return []
    r = v.op_roofline
    lim = limits()
    near = [g for g in r.groups if g.bound == "memory" and g.peak_bytes_per_s
            and 100.0 * g.bytes_per_s / g.peak_bytes_per_s >= lim["memory_near_pct"]]
    share = sum(g.share for g in near)
    if not near or share < lim["memory_min_share"]:
        return []
    sixteen = _sixteen_bit(r, lim)
    fix = [FixPart(key="memory-bandwidth-bound-analytic", subject=near[0].op, flags=_flags(
        r.training, r.no_bf16, sixteen, any(g.dtype == "fp32" for g in near)))]
    # inference matmuls this memory-bound read weights for few tokens (decode): fewer weight
    # bytes; in training they are a weight gradient's or a small head's, not weight-bound
    if not r.training and any(g.family == "matmul" for g in near):
        fix.append(FixPart(key="memory-bandwidth-bound-weights",
                           flags=("fp16",) if r.no_bf16 else ()))
    norm = _norm_module(near, lim["norm_module_pattern"])
    norm_facts = None
    if norm:
        ops = [g for g in r.groups if g.modules[:1] == [norm]]
        norm_facts = NormModule(name=norm, ops=tuple(sorted({g.op for g in ops})),
                                calls=sum(g.calls for g in ops),
                                ns=sum(g.time_ns for g in ops), share=sum(g.share for g in ops))
        fix.insert(0, FixPart(key="memory-bandwidth-bound-norm", subject=norm))
    red = lim["memory_red_share"]
    return [Claim(
        pattern=PATTERN, form="analytic", share=share, basis="kernel_time",
        tier="top" if share >= red else "consider",
        cutoff=Cutoff("op_roofline.yaml:memory_red_share" if share >= red else
                      "op_roofline.yaml:memory_min_share",
                      red if share >= red else lim["memory_min_share"], share,
                      lim["memory_min_share"] if share >= red else None),
        owns=Owns(ops=tuple(group_key(g) for g in near)), fix=tuple(fix),
        cites=kernel_cites(v, "memory-shapes"),
        facts=NearDram(groups=tuple(near[:8]), count=len(near), sixteen_bit=sixteen,
                       norm=norm_facts))]


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


def _flags(training: bool, no_bf16: list[str], sixteen_bit: bool, upcast: bool
           ) -> tuple[str, ...]:
    """fixes.yaml variant: training or inference text; no mixed-precision advice where the
    matmuls already run in 16 bits (FP32 ops among the near ones, `upcast`, are then casts
    inside layers); the FP16 wording on GPUs without BF16 (V100, T4: autocast to BF16 there
    is not a tensor-core path)."""
    if sixteen_bit:
        return ("training_16bit" if training else "sixteen_bit_upcast" if upcast
                else "sixteen_bit",)
    if training:
        return ("training_fp16" if no_bf16 else "training",)
    return ("fp16",) if no_bf16 else ()


def phrase(c: Claim) -> Phrasing:
    f = c.facts
    if not isinstance(f, NearDram):
        raise TypeError(f"memory-bandwidth-bound facts: {type(f).__name__}")
    lines = [f"`{g.op}` {g.shape} {g.dtype}{_in(g.modules)}: {duration(g.time_ns)} "
             f"({100 * g.share:.1f}%), "
             f"{bandwidth(g.bytes_per_s)} = "
             f"{100 * g.bytes_per_s / (g.peak_bytes_per_s or 1):.1f}% of DRAM bandwidth"
             for g in f.groups[:4]]
    obs = "; ".join(lines) + ". Bytes are the minimal traffic of the recorded shapes " \
        "(analytic, rigor L2)."
    effect = ("Time falls with the bytes moved: halving the bytes ("
              + ("a fused kernel" if f.sixteen_bit else "16-bit instead of FP32, a fused kernel")
              + ") halves these ops' time at the same bandwidth.")
    n = f.norm
    if n is not None:
        t = duration(n.ns)
        obs += (f" `{n.name}` alone runs {len(n.ops)} distinct ops ({', '.join(n.ops)}) over "
                f"{n.calls:,} calls: {t} ({100 * n.share:.1f}% of kernel time).")
        effect = (f"`{n.name}`'s ops take {t} of kernel time; fused, the layer reads the "
                  f"activation once and writes it once instead of a read and a write per op "
                  f"({len(n.ops)} ops), so most of the {t} goes — an A/B compares that "
                  f"module's kernel time. " + effect)
    return Phrasing(
        title=f"Memory-bound ops near the DRAM ceiling ({f.count} op groups, "
              f"{100 * c.share:.1f}% of kernel time)",
        observation=obs, effect=effect,
        details={"ops": [g.to_dict() for g in f.groups], "basis": "analytic"})


DECLARATION = Declaration(
    patterns=(PATTERN,), detect=detect, phrase=phrase, causes=(),
    thresholds=("op_roofline.yaml:memory_near_pct", "op_roofline.yaml:memory_min_share",
                "op_roofline.yaml:memory_red_share", "op_roofline.yaml:training_op_markers",
                "op_roofline.yaml:norm_module_pattern", "op_roofline.yaml:fp32_math_min_share"),
    fix_keys=("memory-bandwidth-bound-analytic", "memory-bandwidth-bound-norm",
              "memory-bandwidth-bound-weights"),
    # near the DRAM ceiling is a symptom: the unfused chain or attention it belongs to owns it
    about=About(side="GPU kernel", kernel_side=True,
                yields_to=("unfused-elementwise", "unfused-attention", "layout-conversions")))

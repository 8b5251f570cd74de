"""kernel-inefficiency (analytic): big ops far below their roofline, with the likely reason.

Reads sol/op_roofline.py (FLOPs and bytes from recorded shapes). An op group with FLOPs
whose share of kernel time is at least `inefficient_min_share` and which runs under
`inefficient_max_pct` of its roofline is named with the reason its shape or dtype suggests:
no tensor-core ceiling for the dtype, small or odd GEMM dims (knowledge/op_roofline.yaml).
Separately, an unfused attention chain — batched matmuls whose M×N equals a softmax's last
two dims (the Sq×Sk score matrix written to and read back from DRAM) — is its own pattern,
`unfused-attention`, pointing to SDPA / flash attention: it owns its softmax and matmuls, and
"far below the roofline" keeps the rest (issue 37: one owner per nanosecond). Thresholds:
knowledge/op_roofline.yaml. Self-contained (one detect(views)).
"""

from __future__ import annotations

import re

from crossview.core.claim import Claim, Cutoff, Facts, FixPart, Ns, Owns, Pct, Phrasing, Tier
from crossview.detectors.common import kernel_cites
from crossview.detectors.declare import About, Declaration
from crossview.sol.op_roofline import OpGroup, limits
from crossview.units import duration
from crossview.views.views import Views

PATTERN = "kernel-inefficiency"
ATTENTION = "unfused-attention"
_DIMS = re.compile(r"\b([MNK])=(\d+)")
_MATMUL = ("matmul",)


class SlowOps(Facts, frozen=True, kw_only=True):
    groups: tuple[OpGroup, ...]  # the slow groups (the first 5)
    all_groups: tuple[OpGroup, ...]  # every slow group (the effect's sum)
    kernel_ns: Ns
    what_if_pct: Pct


class AttentionChain(Facts, frozen=True, kw_only=True):
    softmax: OpGroup
    matmuls: tuple[OpGroup, ...]


def group_key(g: OpGroup) -> str:
    return f"{g.op}|{g.shape}|{g.dtype}|{g.hw_key}"


def dims(g: OpGroup) -> dict[str, int]:
    return {k: int(v) for k, v in _DIMS.findall(g.shape)}


def reason(g: OpGroup) -> str:
    lim = limits()
    why: list[str] = []
    if not g.tensor_cores and g.family in ("matmul", "conv", "attention"):
        why.append(f"{g.dtype} runs on a non-tensor-core ceiling ({g.ceiling or 'none'}): "
                   "no tensor cores for this dtype by default")
    d = dims(g)
    small = [f"{k}={v}" for k, v in d.items() if v < lim["small_gemm_dim"]]
    odd = [f"{k}={v}" for k, v in d.items() if v % lim["gemm_align_elems"]]
    if small:
        why.append(f"small GEMM dims ({', '.join(small)} < {lim['small_gemm_dim']}): too few "
                   "tiles to fill the GPU")
    if odd:
        why.append(f"odd GEMM dims ({', '.join(odd)} not multiples of "
                   f"{lim['gemm_align_elems']}): padded or non-tensor-core tiles")
    if not why and g.bound == "memory":
        why.append("its roofline is the DRAM ceiling at this intensity, and it moves bytes "
                   "far slower than that")
    return "; ".join(why) or "no shape or dtype reason: the kernel choice itself (profile its "\
        "kernel with per-kernel counters: Nsight Compute, or ROCm Compute Profiler on AMD)"


def attention_chains(groups: list[OpGroup]) -> list[tuple[OpGroup, list[OpGroup]]]:
    """(softmax group, matmul groups) whose shapes form Q·Kᵀ → softmax → P·V."""
    out = []
    for s in groups:
        if s.family != "softmax":
            continue
        m = re.findall(r"\d+", s.shape)
        if len(m) < 2:
            continue
        sq, sk = int(m[-2]), int(m[-1])
        mm = [g for g in groups if g.family in _MATMUL and (
            (dims(g).get("M") == sq and dims(g).get("N") == sk)
            or (dims(g).get("M") == sq and dims(g).get("K") == sk))]
        if any(dims(g).get("N") == sk for g in mm) and any(dims(g).get("K") == sk for g in mm):
            out.append((s, mm))
    return out


def _tier(share: float, red: float, mention: float) -> tuple[Tier, Cutoff]:
    return ("top", Cutoff("op_roofline.yaml:inefficient_red_share", red, share, mention)) \
        if share >= red else ("consider", Cutoff("op_roofline.yaml:inefficient_min_share",
                                                 mention, share))


def detect(v: Views) -> list[Claim]:
    r = v.op_roofline
    if not r.groups:
        return []
    lim = limits()
    found: list[Claim] = []
    chains = [(s, mm) for s, mm in attention_chains(r.groups)
              if s.share + sum(g.share for g in mm) >= lim["attention_chain_min_share"]]
    in_chain = {group_key(g) for s, mm in chains for g in (s, *mm)}
    slow = [g for g in r.groups if g.flops and g.pct_of_roofline is not None
            and g.share >= lim["inefficient_min_share"]
            and g.pct_of_roofline < lim["inefficient_max_pct"]
            and group_key(g) not in in_chain]
    if slow:
        share = sum(g.share for g in slow)
        tier, cut = _tier(share, lim["inefficient_red_share"], lim["inefficient_min_share"])
        top = slow[0]
        found.append(Claim(
            pattern=PATTERN, form="slow", share=share, basis="kernel_time", tier=tier,
            cutoff=cut, owns=Owns(ops=tuple(group_key(g) for g in slow)),
            fix=(FixPart(key=PATTERN, subject=top.op, flags=(
                "attention",) if top.family == "attention" and top.tensor_cores else ()),),
            cites=kernel_cites(v, "op-shapes"),
            facts=SlowOps(groups=tuple(slow[:5]), all_groups=tuple(slow), kernel_ns=r.kernel_ns,
                          what_if_pct=lim["what_if_pct"])))
    for s, mm in chains:
        share = s.share + sum(g.share for g in mm)
        tier, cut = _tier(share, lim["inefficient_red_share"], lim["attention_chain_min_share"])
        found.append(Claim(
            pattern=ATTENTION, share=share, basis="kernel_time",
            tier=tier, cutoff=cut, owns=Owns(ops=tuple(group_key(g) for g in (s, *mm))),
            fix=(FixPart(key="unfused-attention", subject=s.op),),
            cites=kernel_cites(v, "attention-shapes"),
            facts=AttentionChain(softmax=s, matmuls=tuple(mm))))
    return found


def _effect(groups: tuple[OpGroup, ...], kernel_ns: int, pct: float) -> str:
    saved = sum(g.time_ns - g.time_at_ns(pct) for g in groups)
    return (f"At {pct:.0f}% of their roofline these ops would take {duration(saved)} less "
            f"kernel time ({100 * saved / kernel_ns:.1f}% of {duration(kernel_ns)}): time × "
            f"(% of roofline now ÷ {pct:.0f}%).") if kernel_ns else ""


def phrase(c: Claim) -> Phrasing:
    f = c.facts
    if isinstance(f, SlowOps):
        lines = [f"`{g.op}` {g.shape} {g.dtype}: {duration(g.time_ns)} "
                 f"({100 * g.share:.1f}% of kernel time), {g.pct_of_roofline:.1f}% of its "
                 f"{g.bound}-bound roofline — {reason(g)}" for g in f.groups[:3]]
        return Phrasing(
            title=f"Ops far below their roofline: "
                  f"{', '.join(f'`{g.op}`' for g in f.groups[:3])} "
                  f"({100 * c.share:.1f}% of kernel time)",
            observation=" ".join(lines) + " (analytic FLOPs/bytes from recorded shapes; "
                        "rigor L2)",
            effect=_effect(f.all_groups, f.kernel_ns, f.what_if_pct),
            details={"ops": [g.to_dict() for g in f.groups], "basis": "analytic"})
    assert isinstance(f, AttentionChain)
    s = f.softmax
    return Phrasing(
        title=f"Unfused attention: matmul + `{s.op}` + matmul over {s.shape} scores "
              f"({100 * c.share:.1f}% of kernel time)",
        observation=f"`{s.op}` on {s.shape} ({duration(s.time_ns)}) sits between "
                    + ", ".join(f"`{g.op}` {g.shape} ({duration(g.time_ns)})"
                                for g in f.matmuls)
                    + ": the Sq×Sk score matrix makes a round trip through DRAM. "
                      "(analytic, from recorded shapes)",
        effect="A fused kernel never writes the scores: the softmax time and "
               "most of the matmuls' memory traffic go.",
        details={"softmax": s.to_dict(), "matmuls": [g.to_dict() for g in f.matmuls],
                 "basis": "analytic"})


DECLARATION = Declaration(
    patterns=(PATTERN, ATTENTION), detect=detect, phrase=phrase, causes=(),
    thresholds=("op_roofline.yaml:inefficient_min_share", "op_roofline.yaml:inefficient_max_pct",
                "op_roofline.yaml:inefficient_red_share", "op_roofline.yaml:what_if_pct",
                "op_roofline.yaml:small_gemm_dim", "op_roofline.yaml:gemm_align_elems",
                "op_roofline.yaml:attention_chain_min_share"),
    fix_keys=(PATTERN, "unfused-attention"),
    # a symptom (far below the roofline) yields its kernels to the mechanisms that explain them
    about=About(side="GPU kernel", kernel_side=True,
                yields_to=(ATTENTION, "tensor-cores-unused", "unfused-elementwise",
                           "layout-conversions")),
    per_pattern={ATTENTION: About(side="GPU kernel", kernel_side=True)})

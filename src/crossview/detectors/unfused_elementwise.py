"""unfused-elementwise: pointwise, copy and reduction kernels run one per op dominate kernel time.

Eager PyTorch launches one kernel per elementwise op, cast and reduction; each reads and writes
its whole tensor, so a chain of them moves the activation through DRAM once per op. When such
kernels (op_roofline.yaml `unfused_families`) take `unfused_min_share` of the kernel time the
lever is fusion (torch.compile, fused modules), named with the nn.Modules that hold the most
of that time when the trace recorded them. At the top cut only when the GPU is busy (the
kernels are the step): with the GPU mostly idle, less kernel time does not shorten the step
(caveat `gpu-not-busy`). A capture with no steady-state step caps it to a note (its kernels are
warm-up).
"""

from __future__ import annotations

from msgspec import Struct

from crossview.core.claim import Claim, Count, Cutoff, Facts, FixPart, Ns, Owns, Pct, Phrasing
from crossview.detectors.common import cites, is_compiled, kernel_time_ab, ms, pct
from crossview.detectors.declare import About, Declaration
from crossview.sol.op_roofline import limits
from crossview.views.device.fusion_runs import FusionRuns
from crossview.views.views import Views

PATTERN = "unfused-elementwise"
_FUSED_OPS = ("matmul", "conv", "attention")  # op_roofline families that are not the chain


class Family(Struct, frozen=True):
    family: str
    ns: Ns
    count: Count


class Unfused(Facts, frozen=True, kw_only=True):
    families: tuple[Family, ...]
    ns: Ns
    kernel_ns: Ns
    busy_pct: Pct
    bound_pct: Pct  # kernel_bound_busy_pct
    modules: tuple[tuple[str, Ns], ...]
    runs: FusionRuns


def _modules(v: Views, top: int) -> list[tuple[str, int]]:
    """nn.Modules holding the most kernel time of non-matmul/conv/attention ops."""
    by: dict[str, int] = {}
    for g in v.op_roofline.groups:
        if g.family not in _FUSED_OPS and g.modules:
            by[g.modules[0]] = by.get(g.modules[0], 0) + g.time_ns
    return sorted(by.items(), key=lambda x: (-x[1], x[0]))[:top]


def detect(v: Views) -> list[Claim]:
    m, lim = v.metrics, limits()
    if m.cpu_only or not m.kernel_time_ns or v.kernels:
        return []
    fams = [f for f in v.families if f.family in lim["unfused_families"]]
    t = sum(f.time_ns for f in fams)
    share = t / m.kernel_time_ns
    if share < lim["unfused_min_share"]:
        return []
    busy = m.kernel_busy_pct
    top = share >= lim["unfused_red_share"]
    caveats = []
    if top and busy < lim["kernel_bound_busy_pct"]:
        caveats.append("gpu-not-busy")
    if v.account is not None and v.account.steady_fallback:
        caveats.append("startup-only")  # kernels of warm-up say nothing of the workload
    mods = _modules(v, int(lim["unfused_modules_shown"]))
    return [Claim(
        pattern=PATTERN, share=share, basis="kernel_time", tier="top" if top else "consider",
        cutoff=Cutoff("op_roofline.yaml:unfused_red_share" if top else
                      "op_roofline.yaml:unfused_min_share",
                      lim["unfused_red_share"] if top else lim["unfused_min_share"], share,
                      lim["unfused_min_share"] if top else None),
        caveats=tuple(caveats), owns=Owns(families=tuple(f.family for f in fams)),
        fix=(FixPart(key=PATTERN, flags=("compiled",) if is_compiled(v) else (),
                     located=True),),
        cites=cites(v, "families-modules" if mods else "families"),
        facts=Unfused(families=tuple(Family(f.family, f.time_ns, f.count) for f in fams), ns=t,
                      kernel_ns=m.kernel_time_ns, busy_pct=busy,
                      bound_pct=lim["kernel_bound_busy_pct"], modules=tuple(mods),
                      runs=v.fusion_runs))]


def _effect(f: Unfused, share: float) -> str:
    """The kernel time fusion removes, estimated from the runs of consecutive one-op kernels
    (views/device/fusion_runs.py), with the families' whole time as the bound."""
    r, t, busy = f.runs, f.ns, f.busy_pct
    measured = "the step time and the kernel time of these families"
    # with the GPU busy the kernels are the step, until the host's own per-op dispatch (which
    # fusing kernels alone leaves) becomes the slower side: the replay measures where
    ab = (f"The GPU is busy {busy:.1f}% of its span, so the step shortens by up to the kernel "
          "time fusion removes — less once the host's per-op dispatch sets the pace, unless "
          f"`torch.compile` removes that too: an A/B compares {measured} before and after."
          if busy >= f.bound_pct else
          kernel_time_ab(busy, f.bound_pct, measured, "these families"))
    if not r.runs:
        return (f"Fused, each chain reads its inputs and writes its output once: at most the "
                f"{ms(t)} of these kernels ({pct(share)} of kernel time) goes. " + ab)
    return (f"About {ms(r.saving_ns)} of kernel time goes ({pct(r.saving_ns / t)} of these "
            f"kernels' {ms(t)}): {r.run_kernels:,} of them run back to back on a stream, in "
            f"{r.runs:,} runs between matmul / attention / copy work ({ms(r.run_ns)}); fused, "
            f"each run is estimated at its longest kernel ({ms(r.fused_ns)} in all: a fused "
            f"kernel moves at least its largest op's bytes), and " + (
                "the kernel that runs alone stays" if r.alone == 1 else
                f"the {r.alone:,} kernels that run alone stay") + f". At most the {ms(t)} goes. "
            + ab)


def phrase(c: Claim) -> Phrasing:
    f = c.facts
    assert isinstance(f, Unfused)
    busy = f.busy_pct
    parts = ", ".join(f"{x.family} {ms(x.ns)} ×{x.count:,}" for x in f.families)
    obs = (f"{pct(c.share)} of kernel time ({ms(f.ns)} of {ms(f.kernel_ns)}) runs in "
           f"{sum(x.count for x in f.families):,} pointwise / copy / activation / reduction "
           f"kernels ({parts}), one kernel per op: each reads and writes its whole tensor, so a "
           "chain of them moves the data through DRAM once per op. The GPU is busy "
           f"{busy:.1f}% of its kernel span" + (", so these kernels are the step's time."
                                               if busy >= f.bound_pct else
                                               ": less kernel time shortens the step only once "
                                               "the idle time is gone."))
    if f.modules:
        obs += (" Outside matmuls and attention, the nn.Modules holding the most of it: "
                + "; ".join(f"`{n}` {ms(ns)}" for n, ns in f.modules) + ".")
    return Phrasing(
        title=f"Unfused elementwise work: {pct(c.share)} of kernel time in one-op kernels",
        observation=obs, effect=_effect(f, c.share),
        details={"families": {x.family: x.ns for x in f.families},
                 "modules": dict(f.modules), "fusion_runs": f.runs.to_dict()})


DECLARATION = Declaration(
    patterns=(PATTERN,), detect=detect, phrase=phrase, causes=(),
    thresholds=("op_roofline.yaml:unfused_families", "op_roofline.yaml:unfused_min_share",
                "op_roofline.yaml:unfused_red_share", "op_roofline.yaml:kernel_bound_busy_pct",
                "op_roofline.yaml:unfused_modules_shown"),
    # the second sentence the fuse-elementwise replay adds when the host then holds the step
    fix_keys=(PATTERN, "unfused-elementwise-host-next"),
    # an attention chain's softmax is the unfused-attention claim's (fused there, by SDPA)
    about=About(side="GPU kernel", levers=("fuse-elementwise",), yields_to=("unfused-attention",),
                next_fix=(("host: CPU (ops and Python)", "unfused-elementwise-host-next"),)))

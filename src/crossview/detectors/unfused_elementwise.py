"""unfused-elementwise: pointwise, copy and reduction kernels run one per op dominate kernel time.

Eager PyTorch launches one kernel per elementwise op, cast and reduction; each reads and writes
its whole tensor, so a chain of them moves the activation through DRAM once per op. When such
kernels (op_roofline.yaml `unfused_families`) take `unfused_min_share` of the kernel time the
lever is fusion (torch.compile, fused modules), named with the nn.Modules that hold the most
of that time when the trace recorded them. Red only when the GPU is busy (the kernels are the
step): with the GPU mostly idle, less kernel time does not shorten the step. A note only in a
capture with no steady-state step (its kernels are warm-up).
"""

from __future__ import annotations

from crossview.core.finding import Finding
from crossview.detectors.account_rules import STARTUP_NOTE
from crossview.detectors.common import evidence, fix_where, is_compiled, kernel_time_ab, ms, pct
from crossview.detectors.declare import Declaration
from crossview.knowledge.fixes import fix_for
from crossview.sol.op_roofline import limits
from crossview.views.views import Views

PATTERN = "unfused-elementwise"
_FUSED_OPS = ("matmul", "conv", "attention")  # op_roofline families that are not the chain


def _modules(v: Views, top: int) -> list[tuple[str, int]]:
    """nn.Modules holding the most kernel time of non-matmul/conv/attention ops."""
    by: dict[str, int] = {}
    for g in v.op_roofline.groups:
        if g.family not in _FUSED_OPS and g.modules:
            by[g.modules[0]] = by.get(g.modules[0], 0) + g.time_ns
    return sorted(by.items(), key=lambda x: (-x[1], x[0]))[:top]


def detect(v: Views) -> list[Finding]:
    m, lim = v.metrics, limits()
    if m.cpu_only or not m.kernel_time_ns or v.kernels:
        return []
    fams = [f for f in v.families if f.family in lim["unfused_families"]]
    t = sum(f.time_ns for f in fams)
    share = t / m.kernel_time_ns
    if share < lim["unfused_min_share"]:
        return []
    busy = m.kernel_busy_pct
    red = share >= lim["unfused_red_share"] and busy >= lim["kernel_bound_busy_pct"]
    parts = ", ".join(f"{f.family} {ms(f.time_ns)} ×{f.count:,}" for f in fams)
    obs = (f"{pct(share)} of kernel time ({ms(t)} of {ms(m.kernel_time_ns)}) runs in "
           f"{sum(f.count for f in fams):,} pointwise / copy / activation / reduction kernels "
           f"({parts}), one kernel per op: each reads and writes its whole tensor, so a chain "
           f"of them moves the data through DRAM once per op. The GPU is busy {busy:.1f}% of "
           "its kernel span" + (", so these kernels are the step's time." if busy >=
                                lim["kernel_bound_busy_pct"] else
                                ": less kernel time shortens the step only once the idle "
                                "time is gone."))
    mods = _modules(v, int(lim["unfused_modules_shown"]))
    if mods:
        obs += (" Outside matmuls and attention, the nn.Modules holding the most of it: "
                + "; ".join(f"`{n}` {ms(ns)}" for n, ns in mods) + ".")
    variant = "compiled" if is_compiled(v) else None
    startup = v.account is not None and v.account.steady_fallback
    if startup:  # kernels of warm-up (input set-up, first calls) say nothing of the workload
        obs += STARTUP_NOTE
    return [Finding(
        pattern=PATTERN, severity="info" if startup else "red" if red else "yellow",
        title=f"Unfused elementwise work: {pct(share)} of kernel time in one-op kernels",
        observation=obs, fix=fix_for(PATTERN, variant, fix_where(v)), share=share,
        share_of="kernel_time",
        evidence=evidence(v, "kernel time by family (kernel_families.yaml)"
                          + (", nn.Module of each op (with_modules)" if mods else "")),
        expected_effect=_effect(v, t, share, busy),
        details={"families": {f.family: f.time_ns for f in fams},
                 "modules": dict(mods), "fusion_runs": v.fusion_runs.to_dict()})]


def _effect(v: Views, t: int, share: float, busy: float) -> str:
    """The kernel time fusion removes, estimated from the runs of consecutive one-op kernels
    (views/device/fusion_runs.py), with the families' whole time as the bound."""
    r, lim = v.fusion_runs, limits()
    measured = "the step time and the kernel time of these families"
    # with the GPU busy the kernels are the step, until the host's own per-op dispatch (which
    # fusing kernels alone leaves) becomes the slower side: the replay measures where
    ab = (f"The GPU is busy {busy:.1f}% of its span, so the step shortens by up to the kernel "
          "time fusion removes — less once the host's per-op dispatch sets the pace, unless "
          f"`torch.compile` removes that too: an A/B compares {measured} before and after."
          if busy >= lim["kernel_bound_busy_pct"] else
          kernel_time_ab(busy, lim["kernel_bound_busy_pct"], measured, "these families"))
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


DECLARATION = Declaration(
    patterns=(PATTERN,), detect=detect, causes=(),
    thresholds=("op_roofline.yaml:unfused_families", "op_roofline.yaml:unfused_min_share",
                "op_roofline.yaml:unfused_red_share", "op_roofline.yaml:kernel_bound_busy_pct",
                "op_roofline.yaml:unfused_modules_shown"),
    # the second sentence the fuse-elementwise replay adds when the host then holds the step
    # (replay.yaml next_fix, replay/findings.py)
    fix_keys=(PATTERN, "unfused-elementwise-host-next"))

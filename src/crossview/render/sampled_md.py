"""Markdown for sampled GPU stacks (folded / speedscope / pprof whose leaves are kernels, L1):
GPU time by stack with no timeline. Formats only; computes nothing."""

from __future__ import annotations

from crossview.units import duration
from crossview.views.host import sampled
from crossview.views.views import Views


def _amount(v: Views, t: int) -> str:
    return f"{t:,} samples" if v.gpu.counts_only else duration(t)


def metrics_lines(v: Views) -> list[str]:
    m = v.metrics
    fams = sampled.gpu_families(v.gpu)
    by = "; ".join(f"{f} {_amount(v, t)} ({100 * s:.1f}%)" for f, t, s in fams[:6])
    total = (f"{m.gpu_samples:,} samples, period unknown" if v.gpu.counts_only
             else f"{m.gpu_samples:,} samples, {duration(m.gpu_sampled_ns)} of GPU time")
    return [
        f"**GPU metrics** none — **sampled GPU stacks** (L1: {total}; {v.evidence_path}): "
        "GPU time by stack, with no timeline, so busy %, idle gaps and launch overhead cannot "
        "be derived. Profile with the PyTorch profiler or Nsight Systems for those.",
        f"- Kernel-leaf share by family (L1 sample share): {by or 'no kernel leaves'}.",
    ]


def key_findings(v: Views) -> str:
    fams = sampled.gpu_families(v.gpu)
    if not fams:
        return ("Sampled GPU stacks with no kernel leaves: the file names no kernels to "
                "judge; the tree below shows where the GPU time was attributed.")
    f, t, s = fams[0]
    return (f"Sampled GPU stacks (L1): **{f}** kernels hold {100 * s:.1f}% of the sampled "
            f"GPU time ({_amount(v, t)}). Sample shares say where GPU time goes, not why: "
            "a timeline (busy %, host gaps) or ncu counters (roofline) say whether it can "
            "shrink.")

"""A kernel lever's expected effect without a timeline to replay (summary-only traces + ncu):
the kernel time saved if every launch ran at a stated fraction of its roofline ceiling.
Fractions come from knowledge/replay.yaml (levers.kernel-speedup.roofline_fraction) with
their sources; the effect is labelled "not replayed: kernel time only"."""

from __future__ import annotations

from dataclasses import dataclass

from crossview.knowledge.loader import load_yaml
from crossview.synthesis.reconcile import KernelJoin

LABEL = "not replayed: kernel time only"


@dataclass(frozen=True)
class KernelSaving:
    saved_ns: float
    fraction: float  # of the roofline ceiling the launches are taken to reach
    bound: str  # memory | compute: the ceiling nearer to the measured launch
    basis: str


def fractions() -> dict[str, float]:
    return dict(load_yaml("replay.yaml")["levers"]["kernel-speedup"]["roofline_fraction"])


def roofline_ns(j: KernelJoin) -> tuple[float, str, str] | None:
    """Per-launch time at the roofline: max(bytes ÷ peak BW, FLOP ÷ peak FLOP/s), its
    working, and which ceiling it is (memory | compute)."""
    k = j.ncu
    parts = []
    if k.dram_bytes and k.peak_dram_bytes_per_s:
        parts.append((1e9 * k.dram_bytes / k.peak_dram_bytes_per_s,
                      f"{k.dram_bytes / 1e6:.3g} MB ÷ {k.peak_dram_bytes_per_s / 1e12:.3g} TB/s",
                      "memory"))
    if k.achieved_flops_per_s and k.duration_ns and k.peak_flops_per_s:
        flop = k.achieved_flops_per_s * k.duration_ns / 1e9
        parts.append((1e9 * flop / k.peak_flops_per_s,
                      f"{flop / 1e9:.3g} GFLOP ÷ {k.peak_flops_per_s / 1e12:.3g} TFLOP/s "
                      f"({k.peak_flops_basis})", "compute"))
    return max(parts) if parts else None


def kernel_saving(j: KernelJoin, time_ns: float, time_text: str, count: int
                  ) -> KernelSaving | None:
    roof = roofline_ns(j)
    if roof is None:
        return None
    per, how, bound = roof
    frac = fractions()[bound]
    target = per / frac
    saved = max(time_ns - count * target, 0.0)
    basis = (f"trace {time_text} over {count:,} launches − {count:,} × {target / 1e3:.2f} µs "
             f"per launch at {frac:.0%} of its {bound} roofline ceiling ({per / 1e3:.2f} µs at "
             f"the ceiling: {how}, bytes/FLOPs of the ncu launch, assumed equal for every "
             f"launch; {frac:.0%}: knowledge/replay.yaml roofline_fraction.{bound}); {LABEL}")
    return KernelSaving(saved, frac, bound, basis)

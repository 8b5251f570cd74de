"""Speed-of-light classification, waves and tensor-core engagement for one profiled kernel.

The rule is ncu's SOLBottleneck (thresholds.yaml: sol_*): compute and memory throughput both
under 60% of peak → latency-bound, or small-grid when the grid fills less than one wave;
one side at least 10 points above the other → that side; else balanced. Without the
throughputs, a grid with fewer blocks than the GPU has SMs is still small-grid: SMs without a
block idle for the whole kernel whatever its counters would say (launch stats alone).
"At roofline" is decided only from achieved FLOP/s or DRAM bytes/s against the datasheet
ceiling — never from SM-busy % (conventions.md §1).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from crossview.knowledge.hardware import HwSpec
from crossview.knowledge.thresholds import Thresholds
from crossview.sol.kernel_inputs import KernelInputs

_LIMITS = {"limit_registers": "registers", "limit_shared_mem": "shared memory",
           "limit_warps": "warps", "limit_blocks": "blocks per SM",
           "limit_barriers": "barriers"}


def classify(compute: float | None, memory: float | None, waves: float | None,
             limits: Thresholds, cover: GridCover | None = None) -> tuple[str, str]:
    if compute is None or memory is None:
        if cover is not None and cover.idle_sms > 0:
            return "small-grid", (f"no SpeedOfLight throughputs, but the grid has "
                                  f"{cover.blocks:,.0f} blocks for {cover.sms:g} SMs: "
                                  f"{cover.idle_sms:g} SMs get no block for the whole kernel")
        return "unknown", "no SpeedOfLight throughputs in the capture"
    sol = f"compute {compute:.1f}% / memory {memory:.1f}% of peak"
    lat, gap = limits.sol_latency_max_pct, limits.sol_bottleneck_gap_pct
    if compute < lat and memory < lat:
        if waves is not None and waves < 1:
            return "small-grid", (f"{sol}, both under {lat:g}%, and the grid fills "
                                  f"{waves:.2f} of one wave")
        return "latency-bound", f"{sol}, both under {lat:g}%"
    if compute - memory >= gap:
        return "compute-bound", f"{sol}: compute leads by ≥ {gap:g} points"
    if memory - compute >= gap:
        return "memory-bound", f"{sol}: memory leads by ≥ {gap:g} points"
    return "balanced", f"{sol}: within {gap:g} points of each other"


def at_roofline(pct_flops: float | None, pct_bw: float | None, limits: Thresholds
                ) -> bool | None:
    """True when achieved FLOP/s or DRAM bytes/s reach the high mark of their ceiling."""
    high = limits.roofline_high_pct
    if any(p is not None and p >= high for p in (pct_flops, pct_bw)):
        return True
    if pct_flops is not None and pct_bw is not None:
        return False
    return None


def _grid_blocks(inp: KernelInputs, grid: str | None) -> float | None:
    v = inp.value("grid_blocks")
    if v is not None:
        return v
    dims = [int(x) for x in re.findall(r"\d+", grid or "")]
    return float(math.prod(dims)) if len(dims) == 3 else None


@dataclass(frozen=True)
class GridCover:
    """How a launch's blocks cover the GPU's SMs (LaunchStats grid × the SM count)."""

    blocks: float
    sms: float
    sms_from: str  # "the capture" or the sol_ceilings.yaml entry

    @property
    def idle_sms(self) -> float:
        """SMs that get no block at all: the block scheduler gives each SM one before any
        SM a second, so a grid smaller than the GPU leaves the rest idle."""
        return max(0.0, self.sms - self.blocks)


def grid_cover(inp: KernelInputs, grid: str | None, spec: HwSpec | None) -> GridCover | None:
    blocks = _grid_blocks(inp, grid)
    sms_v = inp.get("sm_count")
    sms, sms_from = (sms_v.value, "the capture") if sms_v else (
        (float(spec.sm_count), f"{spec.hw_key} in sol_ceilings.yaml")
        if spec and spec.sm_count else (None, ""))
    if blocks is None or not sms:
        return None
    return GridCover(blocks, sms, sms_from)


def waves(inp: KernelInputs, grid: str | None, spec: HwSpec | None
          ) -> tuple[str | None, float | None, str]:
    """(occupancy limiter, waves per SM, how the waves were derived — "" when measured).

    Derived as ncu does: grid blocks ÷ (blocks per SM the tightest resource allows × SMs).
    """
    lims = {name: v for key, name in _LIMITS.items() if (v := inp.value(key)) is not None}
    limiter = None
    if lims:
        low = min(lims.values())
        limiter = ", ".join(n for n, v in lims.items() if v == low)
    measured = inp.value("waves_per_sm")
    if measured is not None:
        return limiter, measured, ""
    cover = grid_cover(inp, grid, spec)
    if not lims or cover is None or min(lims.values()) <= 0:
        return limiter, None, ""
    blocks, sms, sms_from = cover.blocks, cover.sms, cover.sms_from
    per_sm = min(lims.values())
    w = blocks / (per_sm * sms)
    how = (f"waves per SM derived: {blocks:,.0f} blocks ÷ ({per_sm:g} blocks/SM, limited by "
           f"{limiter}, × {sms:g} SMs from {sms_from}) = {w:.2f}")
    return limiter, w, how


def waves_from_rules(rules: list[dict[str, object]], pattern: str
                     ) -> tuple[float | None, str]:
    """(waves per SM, how) from ncu's own rule text, when a rule states them."""
    for r in rules:
        m = re.search(pattern, str(r.get("message") or ""))
        if m:
            return float(m.group(1)), (f"waves per SM as ncu's {r.get('rule')} rule states "
                                       f"them: \"{m.group(0)}\"")
    return None, ""


def tensor_cores(inp: KernelInputs, activity: re.Pattern[str]) -> tuple[bool | None, str]:
    """Engaged if any tensor-pipe counter is > 0; not engaged if all collected ones are 0."""
    seen = [(m, v) for m, v in inp.matching(activity) if v is not None]
    if not seen:
        return None, "no tensor-pipe counter collected"
    hot = [(m, v) for m, v in seen if v.value > 0]
    if hot:
        m, v = hot[0]
        return True, f"{v.cite()} = {v.value:,.6g}"
    names = ", ".join(m for m, _ in seen)
    return False, f"all collected tensor counters are 0 ({names})"


def pipes(inp: KernelInputs, pattern: re.Pattern[str], top: int = 3) -> dict[str, float]:
    """The busiest SM pipes (% of peak), e.g. {"fp64": 75.6, "alu": 80.3}."""
    best: dict[str, float] = {}
    for metric, v in inp.matching(pattern):
        m = pattern.match(metric)
        if v is None or m is None or v.value <= 0:
            continue
        name = (m.group(1) or m.group(2) or "").removesuffix("_pred_on_any")
        best[name] = max(best.get(name, 0.0), v.value)
    return dict(sorted(best.items(), key=lambda kv: -kv[1])[:top])

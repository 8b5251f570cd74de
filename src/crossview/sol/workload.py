"""Workload speed-of-light from DCGM/NVML counters: each activity as % of its ceiling.

Per device group (views/counters/device_counters.py): HBM bandwidth ≈ DRAM_ACTIVE × peak, tensor
FLOP/s ≈ PIPE_TENSOR_ACTIVE × peak dense tensor FLOP/s, SM activity and occupancy, PCIe and
NVLink traffic ÷ link ceiling (formats.md; approximate, rigor L3). Cut-offs in thresholds.yaml
(the counter scale shared with detectors/utilization_regime.py).
An unknown GPU gets the counters but no ceiling: "not in sol_ceilings.yaml", never a guess.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from crossview.core.device_counters import DeviceCounters, util
from crossview.knowledge import hardware, thresholds
from crossview.knowledge.thresholds import Thresholds


@dataclass(frozen=True)
class Ceiling:
    what: str  # hbm_bandwidth | tensor_flops | sm_active | sm_occupancy | pcie | nvlink
    achieved: float | None  # in `unit`
    ceiling: float | None
    pct: float  # % of the ceiling (for SM counters: the counter itself)
    unit: str
    evidence: str  # counter(s) read and the ceiling's source


@dataclass
class DeviceSol:
    device: str  # DeviceCounters.label
    artifact: str
    hw_key: str | None
    rows: list[Ceiling] = field(default_factory=list)
    verdicts: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    # the utilization regime on thresholds.yaml's cuts: idle, host-bound, partly-idle,
    # gpu-bound (None: no utilization counter); what the verdicts' first line says in words
    regime: str | None = None

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


def _link(s: float | None, direction: str | None) -> float | None:
    # the counters are per direction (TX, RX); a bidirectional datasheet total halves
    return None if not s else (s / 2 if direction == "bidirectional" else s)


def _one(d: DeviceCounters, lim: Thresholds) -> DeviceSol:
    hw = hardware.match(d.name) if d.name else None
    out = DeviceSol(d.label, d.artifact, hw.hw_key if hw else None)
    if hw is None:
        out.notes.append(f"GPU {d.name or '(unnamed)'!r} not in sol_ceilings.yaml: counters "
                         "shown as recorded, no % of ceiling")
    dram, tensor = d.mean("dram_active"), d.mean("tensor_active")
    if dram is not None and hw and hw.dram_bytes_per_s:
        out.rows.append(Ceiling("hbm_bandwidth", dram / 100 * hw.dram_bytes_per_s,
                                hw.dram_bytes_per_s, dram, "B/s",
                                f"DRAM_ACTIVE mean {dram:.1f}% × {hw.hw_key} hbm_tb_s"))
    key = lim.counters_tensor_precision
    peak = hw.peak_flops(key) if hw else None
    if tensor is not None and peak:
        out.rows.append(Ceiling("tensor_flops", tensor / 100 * peak, peak, tensor, "FLOP/s",
                                f"PIPE_TENSOR_ACTIVE mean {tensor:.1f}% × {hw.hw_key if hw else ''}"
                                f" tflops.{key} (dense; precision assumed)"))
    for m in ("sm_active", "sm_occupancy"):
        v = d.mean(m)
        if v is not None:
            out.rows.append(Ceiling(m, None, None, v, "%", f"{m.upper()} mean (DCGM)"))
    for name, tx, rx, bw, direction in (
            ("pcie", "pcie_tx", "pcie_rx", hw and hw.pcie_bytes_per_s, hw and hw.pcie_direction),
            ("nvlink", "nvlink_tx", "nvlink_rx", hw and hw.nvlink_bytes_per_s,
             hw and hw.nvlink_direction)):
        vals = [v for v in (d.mean(tx), d.mean(rx)) if v is not None]
        ceil = _link(bw or None, direction or None)
        if vals and ceil:
            top = max(vals)
            out.rows.append(Ceiling(name, top, ceil, 100 * top / ceil, "B/s",
                                    f"max of {tx}/{rx} means ÷ {hw.hw_key if hw else ''} "
                                    f"{name}_gb_s per direction"))
    out.verdicts = _verdicts(d, dram, tensor, lim)
    out.regime = regime(util(d), lim)
    return out


def regime(busy: float | None, lim: Thresholds) -> str | None:
    """The utilization regime of a device busy `busy` % (see DeviceSol.regime)."""
    if busy is None:
        return None
    if busy < lim.counters_idle_util_pct:
        return "idle"
    if busy < lim.counters_starved_util_pct:
        return "host-bound"
    return "partly-idle" if busy < lim.counters_busy_util_pct else "gpu-bound"


def _verdicts(d: DeviceCounters, dram: float | None, tensor: float | None,
              lim: Thresholds) -> list[str]:
    """The counter regime on the one scale of thresholds.yaml (docs/decisions/0360-*): the same
    cuts as the counter findings (detectors/utilization_regime.py), so a device reads alike in
    the recap's findings and in this section."""
    v: list[str] = []
    busy = util(d)
    idle, starved, full = (lim.counters_idle_util_pct, lim.counters_starved_util_pct,
                           lim.counters_busy_util_pct)
    r = regime(busy, lim)
    if r == "idle":
        v.append(f"idle: GPU busy {busy:.1f}% < {idle:g}% — no load in the window to judge")
    elif r == "host-bound":
        v.append(f"host-bound: GPU busy {busy:.1f}% < {starved:g}% — the GPU waits for work; "
                 "fix the host side before kernel efficiency")
    elif r == "partly-idle":
        v.append(f"partly idle: GPU busy {busy:.1f}%, between the {starved:g}% host-bound and "
                 f"{full:g}% GPU-bound cuts — a trace tells where the idle time goes")
    elif r == "gpu-bound":
        v.append(f"GPU-bound: GPU busy {busy:.1f}% ≥ {full:g}%")
    sm, low_sm, ok_sm = d.mean("sm_active"), lim.sm_active_low_pct, lim.sm_active_ok_pct
    if sm is not None and sm < low_sm:
        v.append(f"SM active {sm:.1f}% < {low_sm:g}%: most SMs idle while kernels run (small "
                 "grids, serialization)")
    elif sm is not None and sm < ok_sm:
        v.append(f"SM active {sm:.1f}% < {ok_sm:g}% (DCGM's mark): part of the SMs idle while "
                 f"kernels run; flagged below {low_sm:g}%")
    elif sm is not None:
        v.append(f"SM active {sm:.1f}% ≥ {ok_sm:g}%: necessary, not sufficient — check "
                 "DRAM/tensor below")
    if dram is not None and tensor is not None:
        low, gap = lim.sol_latency_max_pct, lim.sol_bottleneck_gap_pct
        if dram >= low and dram >= tensor + gap:
            v.append(f"memory-bound at the workload level: DRAM {dram:.1f}% ≥ {low:g}% and "
                     f"≥ {gap:g} points above tensor {tensor:.1f}%")
        elif tensor >= low and tensor >= dram + gap:
            v.append(f"compute-bound at the workload level: tensor {tensor:.1f}% ≥ {low:g}% "
                     f"and ≥ {gap:g} points above DRAM {dram:.1f}%")
        elif dram < low and tensor < low:
            v.append(f"neither ceiling near (DRAM {dram:.1f}%, tensor {tensor:.1f}% < {low:g}%):"
                     " latency-bound — small kernels, launches, syncs")
    elif busy is not None and busy >= idle:  # an idle device has nothing to tell apart
        v.append("no DRAM_ACTIVE / PIPE_TENSOR_ACTIVE counters: memory- vs compute-bound "
                 "cannot be told (`dcgmi dmon -e 1002,1003,1004,1005`)")
    return v


def compute(devices: list[DeviceCounters], limits: Thresholds | None = None) -> list[DeviceSol]:
    lim = limits or thresholds.defaults()
    return [_one(d, lim) for d in devices]

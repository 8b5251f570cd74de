"""GPU counters of one device group as typed data (DCGM / NVML / nvidia-smi samples summarized):
per-metric stats, the processes on the GPU, the window. Computed from the store by
views/counters/device_counters.py; rated against ceilings by sol/workload.py (decision 0901)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field


@dataclass
class Stat:
    unit: str
    n: int
    mean: float
    min: float
    max: float
    last: float
    raw_names: list[str]


@dataclass(frozen=True)
class GpuProcess:
    """A process holding memory on the GPU (nvidia-smi --query-compute-apps / pmon)."""

    name: str
    pid: str | None
    mem_mib: float
    synthetic: bool  # a stress / burn-in tool (gpu_metrics.yaml synthetic_loads)


@dataclass
class DeviceCounters:
    artifact: str
    device: int | None
    host: str | None
    section: str | None  # capture phase (e.g. "idle", "load") when the file has sections
    uuid: str | None  # for device-less counters (e.g. Triton's per-UUID GPU metrics)
    name: str | None
    sources: list[str]
    samples: int
    first_ns: int | None
    last_ns: int | None
    stats: dict[str, Stat] = field(default_factory=dict)
    # processes holding memory on it in the same window (largest first): with more than one,
    # utilization and power describe them together, not one workload
    processes: list[GpuProcess] = field(default_factory=list)
    # why these counters do not describe the traced GPU (another model, another time): they
    # are reported as such, not cross-checked (views/counters/counter_match.py)
    apart: str | None = None

    def get(self, metric: str) -> Stat | None:
        return self.stats.get(metric)

    def mean(self, metric: str) -> float | None:
        s = self.stats.get(metric)
        return s.mean if s else None

    @property
    def label(self) -> str:
        parts = [f"GPU {self.device}" if self.device is not None else (self.uuid or "GPU ?")]
        if self.name:
            parts.append(f"({self.name})")
        if self.host:
            parts.append(f"on {self.host}")
        if self.section:
            parts.append(f"[{self.section}]")
        return " ".join(parts)

    @property
    def window_s(self) -> float | None:
        if self.first_ns is None or self.last_ns is None or self.last_ns == self.first_ns:
            return None
        return (self.last_ns - self.first_ns) / 1e9

    def to_dict(self) -> dict[str, object]:
        d = asdict(self)
        d["label"] = self.label
        return d


def util(d: DeviceCounters) -> float | None:
    """GPU busy share from counters: NVML utilization, else DCGM graphics-engine active."""
    v = d.mean("gpu_util")
    return v if v is not None else d.mean("gr_engine_active")

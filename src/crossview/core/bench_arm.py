"""A benchmark arm's results as typed data: trials, the median of each metric, the Context,
and per-request distributions. Computed from the store by views/workload/bench.py; rated
against the speed-of-light bound by sol/bench.py, printed by render (decision 0901)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field


@dataclass
class MetricSummary:
    unit: str
    n: int
    median: float
    min: float
    max: float


@dataclass
class RequestStats:
    requests: int
    failed: int
    isl_mean: float | None
    isl_p90: float | None
    osl_mean: float | None
    ttft_p50_ms: float | None
    ttft_p99_ms: float | None
    itl_count: int
    itl_p50_ms: float | None
    itl_p99_ms: float | None
    itl_max_ms: float | None
    itl_spike_share: float | None  # share of gaps above spike_ratio × the median gap
    spike_ratio: float


@dataclass
class BenchArm:
    artifact: str
    arm: str
    trials: int
    context: dict[str, object]
    context_differs: list[str]  # Context fields that are not the same in every trial
    metrics: dict[str, MetricSummary] = field(default_factory=dict)
    requests: RequestStats | None = None

    def median(self, metric: str) -> float | None:
        m = self.metrics.get(metric)
        return m.median if m else None

    def to_dict(self) -> dict[str, object]:
        return asdict(self)

"""`crossview diff A B --fail-on-regression PCT [--metric NAME]` (issue 39 item 6, decision
0854): a CI gate. The metric (default the median steady step) regressed when B's median is
more than PCT % above A's AND the change is beyond the step-to-step noise (the larger standard
deviation of the two sides' steady steps). With the noise unknown (fewer than
`noise.min_steady_steps` steady steps on a side) nothing is called a regression: the verdict is
`undecided` and says why. All gate metrics are lower-is-better times per steady step."""

from __future__ import annotations

import statistics
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from crossview.errors import UsageError
from crossview.experiments.account_diff import noise
from crossview.knowledge.loader import load_yaml

if TYPE_CHECKING:
    from crossview.analysis import Analysis
    from crossview.scope.step_detect import Step

PASS, REGRESSED, UNDECIDED = "pass", "regressed", "undecided"


def _per_step(metric: str, s: Step) -> int:
    if metric == "median step":
        return s.wall_ns
    if metric == "kernel time per step":
        return sum(s.kernel_ns_by_family.values())
    return s.gpu_busy_ns  # GPU busy per step


@dataclass(frozen=True)
class Series:
    """One side's per-step values of the metric (ns)."""

    values: list[int]

    @property
    def median(self) -> float:
        return float(statistics.median(self.values)) if self.values else 0.0


@dataclass(frozen=True)
class Gate:
    metric: str
    threshold_pct: float
    a_ns: float  # medians over the steady steps
    b_ns: float
    a_steps: int
    b_steps: int
    noise_ns: int | None
    verdict: str  # pass | regressed | undecided
    why: str

    @property
    def delta_pct(self) -> float | None:
        return (self.b_ns / self.a_ns - 1) * 100 if self.a_ns else None

    @property
    def failed(self) -> bool:
        return self.verdict == REGRESSED

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "delta_pct": self.delta_pct, "failed": self.failed,
                "unit": "ns"}


def metrics() -> list[str]:
    return list(load_yaml("diff.yaml")["regression"]["metrics"])


def check_args(pct: float, metric: str | None) -> str:
    """The gate's metric name; a UsageError for an unknown metric or a negative PCT."""
    name = metric or "median step"
    if name not in metrics():
        raise UsageError(f"--metric {name!r}: the regression gate judges one of "
                         + ", ".join(metrics()))
    if pct < 0 or pct != pct:
        raise UsageError(f"--fail-on-regression {pct:g}: must be a percentage ≥ 0")
    return name


def judge(a: Analysis, b: Analysis, pct: float, metric: str | None = None) -> Gate:
    name = check_args(pct, metric)
    assert a.views is not None and b.views is not None
    sa = Series([_per_step(name, s) for s in a.views.steps.steady])
    sb = Series([_per_step(name, s) for s in b.views.steps.steady])
    n = noise(sa.values, sb.values) if sa.values and sb.values else None

    def gate(verdict: str, why: str) -> Gate:
        return Gate(name, pct, sa.median, sb.median, len(sa.values), len(sb.values), n,
                    verdict, why)

    if not sa.values or not sb.values or not sa.median:
        return gate(UNDECIDED, "no steady step on a side: nothing to judge")
    delta = sb.median - sa.median
    pct_now = 100 * delta / sa.median
    past = pct_now > pct
    words = (f"{name} {sa.median / 1e6:.3f} → {sb.median / 1e6:.3f} ms ({pct_now:+.2f}%, "
             f"threshold +{pct:g}%)")
    if n is None:
        return gate(UNDECIDED, (
            f"{words}; noise unknown ({len(sa.values)} and {len(sb.values)} steady steps; "
            f"the gate needs ≥ {load_yaml('diff.yaml')['noise']['min_steady_steps']} per "
            "side): no change is called a regression without it"
            + (" — capture more steps to judge it" if past else "")))
    if past and delta > n:
        return gate(REGRESSED, (
            f"{words}, beyond the step-to-step noise ± {n / 1e6:.3f} ms"))
    if past:
        return gate(PASS, f"{words}, but within the noise ± {n / 1e6:.3f} ms")
    return gate(PASS, f"{words}: not past the threshold")

"""A measured benchmark arm against the LLM speed-of-light bound: % of SoL per metric.

% of SoL = bound ÷ measured for times (TTFT, TPOT) and measured ÷ bound for throughput, so
100% means the hardware ceiling was reached. The setup (batch, ISL, OSL) defaults to the
benchmark's own Context so both sides describe the same workload.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from crossview.core.bench_arm import BenchArm
from crossview.sol.llm import Setup, SolResult


@dataclass(frozen=True)
class Versus:
    metric: str  # what the bench reports (its trial metric name)
    measured: float
    bound: float
    unit: str
    pct_of_sol: float


@dataclass
class BenchSol:
    artifact: str
    arm: str
    trials: int
    context: dict[str, object]
    rows: list[Versus] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


def _num(x: object) -> float | None:
    if isinstance(x, bool):
        return None
    if isinstance(x, int | float):
        return float(x)
    try:
        return float(str(x))
    except ValueError:
        return None


def setup_from(arm: BenchArm | None, *, dtype: str, kv_dtype: str, tp: int | None,
               batch: int | None, isl: int | None, osl: int | None) -> tuple[Setup, list[str]]:
    """The setup: options given win; the rest from the bench Context; then defaults."""
    ctx = arm.context if arm else {}
    notes: list[str] = []

    def pick(given: int | None, keys: tuple[str, ...], default: int, what: str) -> int:
        if given is not None:
            return given
        for k in keys:
            v = _num(ctx.get(k))
            if v is not None and v >= 1 and v != float("inf"):
                notes.append(f"{what} {round(v)} from the benchmark Context ({k})")
                return round(v)
        notes.append(f"{what} {default} (default: not given, not in the benchmark Context)")
        return default

    s = Setup(dtype=dtype, kv_dtype=kv_dtype, tp=pick(tp, ("tp",), 1, "TP"),
              batch=pick(batch, ("concurrency",), 1, "batch"),
              isl=pick(isl, ("isl", "isl_measured_mean"), 1024, "ISL"),
              osl=pick(osl, ("osl", "osl_measured_mean"), 128, "OSL"))
    return s, notes


def compare(arm: BenchArm, sol: SolResult) -> BenchSol:
    out = BenchSol(arm.artifact, arm.arm, arm.trials, dict(arm.context))
    for metric, bound_s in (("median_ttft_ms", sol.ttft_s), ("median_tpot_ms", sol.tpot_s)):
        ms = arm.median(metric)
        if ms is not None and ms > 0:
            out.rows.append(Versus(metric, ms, bound_s * 1e3, "ms", 100 * bound_s * 1e3 / ms))
    thr = arm.median("output_throughput")
    if thr is not None and thr > 0:
        out.rows.append(Versus("output_throughput", thr, sol.output_tokens_per_s, "tok/s",
                               100 * thr / sol.output_tokens_per_s))
    if not out.rows:
        out.notes.append("the benchmark reports none of median TTFT, median TPOT, output "
                         "throughput: nothing to compare")
    if (_num(arm.context.get("request_rate")) or float("inf")) != float("inf"):
        out.notes.append("request rate was limited: requests did not all run at the set "
                         "batch, so the bound (all requests at once) is optimistic")
    return out

"""The typed rows of `crossview diff` (experiments/diff.py computes them): kernel family and
kernel rows, whole-capture metrics, kernel swaps, and the Diff that holds them with the
comparability, drift, noise, host ops, lever check and gate."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from crossview.experiments import op_match
from crossview.experiments.account_diff import AccountDiff
from crossview.experiments.comparable import Comparability
from crossview.experiments.drift import Drift
from crossview.experiments.lever_check import LeverCheck
from crossview.experiments.regression import Gate
from crossview.identity import RULES_TEXT
from crossview.knowledge.loader import load_yaml

OPS_SHOWN = 15  # op rows in JSON and Markdown (largest |Δ| first)


@dataclass
class Row:
    """One kernel family or one normalized kernel, in A and in B."""

    key: str  # family name, or normalized kernel name
    family: str
    a_count: int = 0
    a_time_ns: int = 0
    b_count: int = 0
    b_time_ns: int = 0
    a_variants: int = 0  # raw kernel names behind this row in A
    b_variants: int = 0
    share_of_change: float | None = None  # delta / net change of kernel time (B − A)
    beyond_drift_ns: int | None = None  # B − A × the GPU's factor (drift named only)

    @property
    def delta_ns(self) -> int:
        return self.b_time_ns - self.a_time_ns

    @property
    def a_mean_ns(self) -> float | None:
        return self.a_time_ns / self.a_count if self.a_count else None

    @property
    def b_mean_ns(self) -> float | None:
        return self.b_time_ns / self.b_count if self.b_count else None

    @property
    def presence(self) -> str:
        """both | only_a | only_b."""
        if self.a_count and self.b_count:
            return "both"
        return "only_a" if self.a_count else "only_b"

    def to_dict(self) -> dict[str, object]:
        return {**asdict(self), "delta_ns": self.delta_ns, "count_delta":
                self.b_count - self.a_count, "a_mean_ns": self.a_mean_ns,
                "b_mean_ns": self.b_mean_ns, "presence": self.presence}


@dataclass
class Change:
    """One whole-capture metric in A and B. unit: ns | count | %."""

    metric: str
    unit: str
    a: float
    b: float

    @property
    def delta(self) -> float:
        return self.b - self.a

    def to_dict(self) -> dict[str, object]:
        return {**asdict(self), "delta": self.delta}


@dataclass(frozen=True)
class Swap:
    """A family whose kernels moved a lot in both directions while its total barely did:
    the library picked other kernels (cuDNN / cuBLAS algorithm choice), not a change in work."""

    family: str
    net_ns: int  # the family's B − A
    gross_ns: int  # Σ |Δ| of its kernels
    only_a: int  # its kernels only in A / only in B
    only_b: int

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


@dataclass
class Diff:
    a_paths: list[str]  # evidence: the artifacts each side was read from
    b_paths: list[str]
    metrics: list[Change]
    families: list[Row]
    kernels: list[Row]
    net_change_ns: int
    account: AccountDiff | None = None  # per steady step through the time account
    swaps: list[Swap] = field(default_factory=list)
    # the net change is under thresholds.yaml diff_min_net_share of A's kernel time: a row's
    # share of it is not shown (a −23 ms kernel would read "−759% of the change")
    net_in_noise: bool = False
    noise_share: float = 0.0  # that share (thresholds.yaml diff_min_net_share)
    matching: str = field(default=(
        "kernels matched by kernel family + normalized name: template arguments <…>, argument"
        " lists (…), 0x addresses, a leading return type and Triton's trailing _N stripped; "
        + RULES_TEXT))
    comparability: Comparability | None = None
    drift: Drift | None = None
    ops: op_match.OpMatch | None = None
    lever: LeverCheck | None = None  # `--lever`: the replay's prediction beside B's steps
    gate: Gate | None = None  # `--fail-on-regression`
    headline: list[str] = field(default_factory=list)  # what the diff leads with

    @property
    def only_a(self) -> list[Row]:
        return [r for r in self.kernels if r.presence == "only_a"]

    @property
    def only_b(self) -> list[Row]:
        return [r for r in self.kernels if r.presence == "only_b"]

    def to_dict(self) -> dict[str, object]:
        return {
            "a": {"artifacts": self.a_paths}, "b": {"artifacts": self.b_paths},
            "matching": self.matching, "net_change_ns": self.net_change_ns,
            "metrics": [m.to_dict() for m in self.metrics],
            "families": [r.to_dict() for r in self.families],
            "kernels": [r.to_dict() for r in self.kernels],
            "only_a": [r.key for r in self.only_a], "only_b": [r.key for r in self.only_b],
            "account": self.account.to_dict() if self.account else None,
            "swaps": [s.to_dict() for s in self.swaps], "net_in_noise": self.net_in_noise,
            "headline": self.headline,
            "comparability": self.comparability.to_dict() if self.comparability else None,
            "drift": self.drift.to_dict() if self.drift else None,
            "noise": self.noise_dict(),
            "ops": self.ops.to_dict(OPS_SHOWN) if self.ops else None,
            "lever": self.lever.to_dict() if self.lever else None,
            "gate": self.gate.to_dict() if self.gate else None,
        }

    def noise_dict(self) -> dict[str, object]:
        a = self.account
        if a is None:
            return {"known": False, "why": "no steps on a side"}
        return {"known": a.noise_known, "noise_ns": a.noise_ns, "a_steady_steps": a.a_steps,
                "b_steady_steps": a.b_steps, "min_steady_steps":
                    int(load_yaml("diff.yaml")["noise"]["min_steady_steps"])}

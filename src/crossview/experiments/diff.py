"""`crossview diff A B`: what changed between two captures of one workload, as typed rows.

Each side is one ordinary `analyze()` run (whole capture, default filter), so its numbers are
exactly those `crossview analyze` prints for that capture. Kernels are matched across sides by
(family, normalized name) — `kernels/names.normalize` documents what is stripped. Deltas are
B − A; a row's share of the change is its delta over the net change of total kernel time
(None when that is zero, e.g. a capture diffed against itself).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass, field

from crossview.analysis import Analysis
from crossview.experiments.account_diff import AccountDiff, explain
from crossview.kernels.names import normalize
from crossview.knowledge import thresholds
from crossview.knowledge.thresholds import Thresholds

_KERNELS_SQL = (
    "SELECT name, family, count(*), sum(dur_ns) FROM f_gpu WHERE kind = 'kernel'"
    " GROUP BY name, family"
)


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
        " lists (…), 0x addresses, a leading return type and Triton's trailing _N stripped"))

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
        }


def _ok_paths(result: Analysis) -> list[str]:
    return [a.path for a in result.artifacts if a.status == "ok"]


def _kernel_rows(result: Analysis) -> list[tuple[str, str, int, int]]:
    assert result.views is not None
    rows = result.views.store.sql(_KERNELS_SQL).fetchall()
    return [(str(n), str(f), int(c), int(t)) for n, f, c, t in rows]


def _metrics(result: Analysis) -> dict[str, tuple[str, float]]:
    assert result.views is not None
    m = result.views.metrics
    out: dict[str, tuple[str, float]] = {
        "kernel time": ("ns", m.kernel_time_ns),
        "kernels": ("count", m.kernel_count),
        "kernel span": ("ns", m.kernel_span_ns),
        "GPU busy": ("ns", m.kernel_busy_ns),
        "GPU busy share of span": ("%", m.kernel_busy_pct),
        "idle (all gaps)": ("ns", m.idle.total_ns),
        "idle: host wait": ("ns", m.idle.host_wait_ns),
        "idle: kernel wait": ("ns", m.idle.kernel_wait_ns),
        "idle: other": ("ns", m.idle.other_ns),
    }
    if m.launch is not None:
        out |= {
            "launch calls": ("count", m.launch.launch_calls),
            "launch call time": ("ns", m.launch.launch_time_ns),
            "graph launches": ("count", m.launch.graph_launches),
            "kernels replayed by graphs": ("count", m.launch.kernels_via_graph),
            "kernels with launch not captured": ("count", m.launch.kernels_launch_not_captured),
        }
    return out


def _merge(a: Iterable[tuple[str, str, int, int]], b: Iterable[tuple[str, str, int, int]],
           key_of: str) -> dict[tuple[str, str], Row]:
    """Sum raw (name, family, count, time) rows of both sides under (family, key)."""
    rows: dict[tuple[str, str], Row] = {}
    for side, raw in (("a", a), ("b", b)):
        for name, family, count, time_ns in raw:
            key = family if key_of == "family" else normalize(name)
            row = rows.setdefault((family, key), Row(key=key, family=family))
            setattr(row, f"{side}_count", getattr(row, f"{side}_count") + count)
            setattr(row, f"{side}_time_ns", getattr(row, f"{side}_time_ns") + time_ns)
            setattr(row, f"{side}_variants", getattr(row, f"{side}_variants") + 1)
    return rows


def _ranked(rows: Iterable[Row], net: int | None) -> list[Row]:
    out = sorted(rows, key=lambda r: (-abs(r.delta_ns), -max(r.a_time_ns, r.b_time_ns), r.key))
    for r in out:
        r.share_of_change = r.delta_ns / net if net else None
    return out


def _swaps(families: list[Row], kernels: list[Row], lim: Thresholds) -> list[Swap]:
    """Families whose kernels' Σ|Δ| is ≥ diff_swap_gross_ratio × |the family's Δ| and ≥
    diff_swap_min_ns, with kernels present on one side only (workers0 → workers4: gemm moves
    +2.01 ms net while cuDNN's wgrad/dgrad/splitK kernels swap ±23 ms)."""
    out = []
    for f in families:
        ks = [k for k in kernels if k.family == f.key]
        gross = sum(abs(k.delta_ns) for k in ks)
        only_a = sum(1 for k in ks if k.presence == "only_a")
        only_b = sum(1 for k in ks if k.presence == "only_b")
        if (only_a + only_b and gross >= lim.diff_swap_min_ns
                and gross >= lim.diff_swap_gross_ratio * abs(f.delta_ns)):
            out.append(Swap(f.key, f.delta_ns, gross, only_a, only_b))
    return out


def compare(a: Analysis, b: Analysis) -> Diff:
    """The diff B − A of two analyzed captures (each must hold GPU kernels)."""
    lim = thresholds.defaults()
    ka, kb = _kernel_rows(a), _kernel_rows(b)
    total_a = sum(t for *_, t in ka)
    net = sum(t for *_, t in kb) - total_a
    noise = abs(net) < lim.diff_min_net_share * total_a
    ma, mb = _metrics(a), _metrics(b)
    changes = [Change(k, unit, float(va), float(mb[k][1]))
               for k, (unit, va) in ma.items() if k in mb]
    families = _ranked(_merge(ka, kb, "family").values(), None if noise else net)
    kernels = _ranked(_merge(ka, kb, "name").values(), None if noise else net)
    return Diff(
        a_paths=_ok_paths(a), b_paths=_ok_paths(b), metrics=changes,
        families=families, kernels=kernels,
        net_change_ns=net, account=explain(a, b), swaps=_swaps(families, kernels, lim),
        net_in_noise=noise, noise_share=lim.diff_min_net_share,
    )

"""The machine's drift between two captures (issue 39 item 2, decision 0851): when the same
kernels (same identity — kernel key, grid and block where recorded — and the same count on
both sides) all took one factor longer or shorter, the GPU ran at another speed on the same
work: clocks, power, thermals, another tenant, another board — not the code.

The factor is the median of the kernels' time ratios B ÷ A weighted by A's time; the spread
the weighted median absolute deviation of their log ratios. Drift is named when those kernels
hold ≥ `min_coverage` of each side's kernel time, the factor is ≥ `min_shift` away from 1 and
the spread is ≤ `max_spread_ratio` × |log factor| (knowledge/diff.yaml). Kernels whose own
ratio is more than `kernel_tolerance` off the factor changed beyond the drift."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from crossview.identity import kernel_key
from crossview.knowledge.loader import load_yaml

if TYPE_CHECKING:
    from crossview.analysis import Analysis

_SQL = "SELECT name, grid, block, count(*), sum(dur_ns) FROM f_kernels GROUP BY ALL"
_COUNTERS = ("SELECT m.metric, any_value(m.unit), median(m.value), count(*),"
             " list(DISTINCT a.path ORDER BY a.path) FROM metric_samples m JOIN input_files a"
             " USING (artifact_id) WHERE m.metric IN (SELECT unnest($m)) AND m.value IS NOT NULL"
             " GROUP BY m.metric")

Key = tuple[str, str, str]  # kernel key, grid, block ("" when not recorded)


@dataclass(frozen=True)
class Counter:
    """One GPU counter's median on each side (None: not recorded there), with its files."""

    metric: str
    unit: str
    a: float | None
    b: float | None
    a_files: list[str]
    b_files: list[str]

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


@dataclass(frozen=True)
class Off:
    """A kernel whose own ratio is off the drift factor: it changed beyond the machine."""

    kernel: str
    count: int
    a_ns: int
    b_ns: int

    @property
    def ratio(self) -> float:
        return self.b_ns / self.a_ns if self.a_ns else math.inf

    def to_dict(self) -> dict[str, object]:
        return {**asdict(self), "ratio": self.ratio}


@dataclass
class Drift:
    detected: bool
    why: str  # the reason it is (or is not) named
    factor: float | None = None  # B ÷ A time of the same kernels
    spread: float = 0.0  # weighted median |log ratio − log factor|
    kernels: int = 0  # kernel identities compared (same count on both sides)
    coverage_a: float = 0.0  # their share of each side's kernel time
    coverage_b: float = 0.0
    off: list[Off] = field(default_factory=list)
    counters: list[Counter] = field(default_factory=list)
    causes: dict[str, str] = field(default_factory=dict)  # diff.yaml drift.causes
    fix: str = ""

    @property
    def direction(self) -> str:
        return "slower" if (self.factor or 1) > 1 else "faster"

    @property
    def times(self) -> float | None:
        """The factor as "N× slower / faster" reads it (≥ 1)."""
        if not self.factor:
            return None
        return self.factor if self.factor >= 1 else 1 / self.factor

    def to_dict(self) -> dict[str, Any]:
        return {"detected": self.detected, "why": self.why, "factor": self.factor,
                "direction": self.direction if self.factor else None, "times": self.times,
                "spread_log": self.spread, "kernels_compared": self.kernels,
                "coverage_a": self.coverage_a, "coverage_b": self.coverage_b,
                "changed_beyond_drift": [o.to_dict() for o in self.off],
                "counters": [c.to_dict() for c in self.counters],
                "likely_causes": list(self.causes.values()) if self.detected else [],
                "fix": self.fix if self.detected else None}


def rules() -> dict[str, Any]:
    return dict(load_yaml("diff.yaml")["drift"])


def kernels_by_identity(r: Analysis) -> dict[Key, tuple[int, int]]:
    """(count, time ns) per kernel identity under the analysis' filter."""
    assert r.views is not None
    out: dict[Key, list[int]] = {}
    for name, grid, block, n, t in r.views.store.sql(_SQL).fetchall():
        x = out.setdefault((kernel_key(str(name)), str(grid or ""), str(block or "")), [0, 0])
        x[0] += int(n)
        x[1] += int(t)
    return {k: (c, t) for k, (c, t) in out.items()}


def _weighted_median(pairs: list[tuple[float, float]]) -> float:
    pairs = sorted(pairs)
    half = sum(w for _, w in pairs) / 2
    acc = 0.0
    for x, w in pairs:
        acc += w
        if acc >= half:
            return x
    return pairs[-1][0]


def counters(a: Analysis, b: Analysis, names: list[str]) -> list[Counter]:
    side: list[dict[str, tuple[str, float, list[str]]]] = []
    for r in (a, b):
        assert r.views is not None
        side.append({str(m): (str(u or ""), float(v), [str(p) for p in files])
                     for m, u, v, _n, files in r.views.store.sql(
                         _COUNTERS, {"m": names}).fetchall()})
    out = []
    for m in names:
        ha, hb = side[0].get(m), side[1].get(m)
        if ha or hb:
            out.append(Counter(m, (ha or hb)[0],  # type: ignore[index]
                               ha[1] if ha else None, hb[1] if hb else None,
                               ha[2] if ha else [], hb[2] if hb else []))
    return out


def detect(a: Analysis, b: Analysis, ka: dict[Key, tuple[int, int]] | None = None,
           kb: dict[Key, tuple[int, int]] | None = None) -> Drift:
    """`ka` / `kb`: each side's kernels_by_identity, when already read."""
    cfg = rules()
    ka = kernels_by_identity(a) if ka is None else ka
    kb = kernels_by_identity(b) if kb is None else kb
    ta, tb = sum(t for _, t in ka.values()), sum(t for _, t in kb.values())
    same = [k for k in ka if k in kb and ka[k][0] == kb[k][0] and ka[k][1] > 0 and kb[k][1] > 0]
    d = Drift(False, "", kernels=len(same), counters=counters(a, b, list(cfg["counters"])),
              causes=dict(cfg["causes"]), fix=str(cfg["fix"]))
    if not ta or not tb:
        d.why = "no kernel time on one side"
        return d
    d.coverage_a = sum(ka[k][1] for k in same) / ta
    d.coverage_b = sum(kb[k][1] for k in same) / tb
    if not same:
        d.why = "no kernel ran the same number of times in both captures: different work"
        return d
    logs = [(math.log(kb[k][1] / ka[k][1]), float(ka[k][1])) for k in same]
    mid = _weighted_median(logs)
    d.factor = math.exp(mid)
    d.spread = _weighted_median([(abs(x - mid), w) for x, w in logs])
    cover = min(d.coverage_a, d.coverage_b)
    if cover < cfg["min_coverage"]:
        d.why = (f"the kernels run the same number of times on both sides hold "
                 f"{cover:.0%} of a side's kernel time (< {cfg['min_coverage']:.0%}): "
                 "not the same work, so no machine factor")
    elif abs(d.factor - 1) < cfg["min_shift"]:
        d.why = (f"the same kernels took {d.factor:.3f}× their time in A: within "
                 f"{cfg['min_shift']:.0%}, the GPU ran at the same speed")
    elif d.spread > cfg["max_spread_ratio"] * abs(mid):
        d.why = (f"the same kernels changed by different factors (median {d.factor:.2f}×, "
                 f"spread ±{math.expm1(d.spread):.0%}): not one machine-wide factor")
    else:
        d.detected = True
        f, tol = d.factor, float(cfg["kernel_tolerance"])
        d.off = sorted((Off(k[0], ka[k][0], ka[k][1], kb[k][1]) for k in same
                        if abs(kb[k][1] / ka[k][1] / f - 1) > tol),
                       key=lambda o: (-abs(o.b_ns - o.a_ns * f), o.kernel))
        d.why = (f"{len(same)} kernels run the same number of times on both sides "
                 f"({d.coverage_a:.0%} of A's kernel time, {d.coverage_b:.0%} of B's) took "
                 f"{d.factor:.2f}× their time in A, spread ±{math.expm1(d.spread):.1%}")
    return d

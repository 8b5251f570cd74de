"""`crossview diff A B`: what changed between two captures of one workload, as typed rows.

Each side is one ordinary `analyze()` run (whole capture, default filter), so its numbers are
exactly those `crossview analyze` prints for that capture. Kernels are matched across sides by
(family, normalized name) — `identity.kernel_key` documents what is stripped; host frames and
ops by `identity.frame_key` (experiments/op_match.py). Deltas are B − A; a row's share of the
change is its delta over the net change of total kernel time (None when that is zero, e.g. a
capture diffed against itself).

Read in this order (issue 39): are the runs comparable (experiments/comparable.py); did the
GPU itself run at another speed on the same work (experiments/drift.py: every per-cause and
per-kernel change is then also given beyond that factor); is the step-to-step noise known
(account_diff.noise); did anything change at all. `lever` (experiments/lever_check.py) and
`gate` (experiments/regression.py) are attached by the command when asked for.
"""

from __future__ import annotations

from collections.abc import Iterable

from crossview.analysis import Analysis
from crossview.experiments import drift as drift_mod
from crossview.experiments import op_match
from crossview.experiments.account_diff import explain
from crossview.experiments.comparable import assess
from crossview.experiments.diff_rows import OPS_SHOWN, Change, Diff, Row, Swap
from crossview.experiments.headline import gate_line, lead, lever_line, nothing_changed
from crossview.experiments.lever_check import LeverCheck
from crossview.experiments.regression import Gate
from crossview.identity import kernel_key as normalize
from crossview.knowledge import thresholds
from crossview.knowledge.thresholds import Thresholds

__all__ = ["OPS_SHOWN", "Change", "Diff", "Row", "Swap", "attach", "compare"]

_KERNELS_SQL = (
    "SELECT name, family, count(*), sum(dur_ns) FROM f_kernels GROUP BY name, family"
)


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
    ia, ib = drift_mod.kernels_by_identity(a), drift_mod.kernels_by_identity(b)
    dr = drift_mod.detect(a, b, ia, ib)
    factor = dr.factor if dr.detected else None
    families = _ranked(_merge(ka, kb, "family").values(), None if noise else net)
    kernels = _ranked(_merge(ka, kb, "name").values(), None if noise else net)
    if factor is not None:
        for r in families + kernels:
            r.beyond_drift_ns = int(r.b_time_ns - r.a_time_ns * factor)
    d = Diff(
        a_paths=_ok_paths(a), b_paths=_ok_paths(b), metrics=changes,
        families=families, kernels=kernels,
        net_change_ns=net, account=explain(a, b, factor),
        swaps=_swaps(families, kernels, lim),
        net_in_noise=noise, noise_share=lim.diff_min_net_share,
        comparability=assess(a, b, ia, ib),
        drift=dr, ops=op_match.match(a, b),
    )
    nothing_changed(d)
    d.headline = lead(d)
    return d


def attach(d: Diff, lever: LeverCheck | None = None, gate: Gate | None = None) -> None:
    """Add the --lever check and the --fail-on-regression gate, each with its headline."""
    if lever is not None:
        d.lever = lever
        line = lever_line(d)
        if line:
            d.headline.append(line)
    if gate is not None:
        d.gate = gate
        line = gate_line(d)
        if line:
            d.headline.append(line)

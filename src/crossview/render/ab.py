"""`crossview ab` output: a benchstat-like table (markdown) or JSON. Formats only."""

from __future__ import annotations

import json
from typing import Any

from crossview.experiments.ab import ABResult, MetricResult
from crossview.schema import versioned

_METHOD = ("medians; CI: bootstrap percentile on the ratio variant ÷ baseline median "
           "(seeded, {n} resamples, {lvl:g} %); p: exact permutation (Mann-Whitney) test, "
           "two-sided; win/loss needs p ≤ α {alpha:g} AND the CI beyond 1 ± {noise:g} % noise")


def _arm(m: MetricResult, base: bool) -> dict[str, Any]:
    c = m.cmp
    n = m.n_base if base else m.n_var
    if c is None:
        return {"median": None, "spread_pct": None, "n": n, "unit": m.unit}
    return {"median": c.base_median if base else c.var_median,
            "spread_pct": c.base_spread_pct if base else c.var_spread_pct, "n": n,
            "unit": m.unit}


def metric_json(m: MetricResult) -> dict[str, Any]:
    c = m.cmp
    return {"metric": m.metric, "unit": m.unit, "direction": m.direction,
            "baseline": _arm(m, True), "variant": _arm(m, False),
            "delta_pct": c.delta_pct if c else None, "ratio": c.ratio if c else None,
            "ci": list(c.ci) if c else None, "p": c.p if c else None,
            "test": ("exact permutation (Mann-Whitney)" if c.exact else
                     f"Monte Carlo permutation (Mann-Whitney, {c.permutations})") if c else None,
            "verdict": m.verdict, "reason": m.reason}


def trials_json(res: ABResult) -> dict[str, list[dict[str, Any]]]:
    """Each trial's regime: warm, or cold with the reason (experiments/cold.py)."""
    return {arm.name: [{"file": f, "trial": t, "regime": "cold" if why else "warm",
                        "reason": why, "excluded": i in arm.excluded}
                       for i, ((f, t), why) in enumerate(zip(arm.trial_ids, arm.cold,
                                                            strict=False))]
            for arm in (res.baseline, res.variant)}


def to_json(res: ABResult, resamples: int) -> dict[str, Any]:
    return {"trials_are": res.baseline.kind,
            "metrics": [metric_json(m) for m in res.metrics], "trials": trials_json(res),
            "refusals": res.refusals,
            "notes": res.notes, "noise_pct": res.noise_pct, "alpha": res.alpha,
            "ci_level": res.ci_level,
            "method": _METHOD.format(n=resamples, lvl=res.ci_level * 100, alpha=res.alpha,
                                     noise=res.noise_pct)}


def render_json(res: ABResult, resamples: int) -> str:
    return json.dumps(versioned({"baseline": res.baseline.paths, "variant": res.variant.paths,
                                 **to_json(res, resamples)}), indent=2) + "\n"


def _fmt(x: float) -> str:
    return f"{x:.4g}" if abs(x) < 1e4 else f"{x:.0f}"


def render_md(res: ABResult, resamples: int) -> str:
    out = ["# A/B: variant vs baseline", "",
           f"Baseline: {', '.join(res.baseline.paths)}  ",
           f"Variant: {', '.join(res.variant.paths)}", ""]
    for r in res.refusals:
        out.append(f"- **refused**: {r}")
    for n in res.notes:
        out.append(f"- note: {n}")
    if res.refusals or res.notes:
        out.append("")
    out += ["| metric | baseline median ± spread | variant median ± spread | delta | "
            "CI (ratio) | p | n | verdict |", "|---|---|---|---|---|---|---|---|"]
    for m in res.metrics:
        c = m.cmp
        v = m.verdict if m.verdict in ("win", "loss") else f"{m.verdict} ({m.reason})"
        if c is None:
            out.append(f"| {m.metric} | – | – | – | – | – | {m.n_base}+{m.n_var} | {v} |")
            continue
        u = f" {m.unit}" if m.unit else ""
        out.append(
            f"| {m.metric} | {_fmt(c.base_median)}{u} ± {c.base_spread_pct:.1f} % | "
            f"{_fmt(c.var_median)}{u} ± {c.var_spread_pct:.1f} % | {c.delta_pct:+.2f} % | "
            f"[{c.ci[0]:.4f}, {c.ci[1]:.4f}] | {c.p:.3g} | {m.n_base}+{m.n_var} | {v} |")
    evidence = ("each capture's steady steps (the time account's steps): one trial per "
                "capture, its median over them" if res.baseline.kind == "captures" else
                "`trials` table of each result file (one value per trial)")
    out += ["", f"Evidence: {evidence}. Method: "
            + _METHOD.format(n=resamples, lvl=res.ci_level * 100, alpha=res.alpha,
                             noise=res.noise_pct) + ".", ""]
    return "\n".join(out)

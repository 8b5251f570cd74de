"""The lever ledger (conventions.md §6) as far as `crossview ab` needs it: read the JSON, set
one lever's `confidence` and `ab` from an A/B result, write it back. Every other field and
every other lever is kept exactly as read (docs/input-formats.md "Ledger JSON").

The status passes the VERDICT gate (experiments/gates.py): every gate is written to
`ab.gates`, the failed ones to `ab.failed_gates`; a VERDICT row carries `ab.measured` (median
delta with its CI on the isolating metric), `ab.predicted` and `ab.prediction_error_pct_points`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from crossview.errors import InputError, UsageError
from crossview.experiments.ab import ABResult, MetricResult
from crossview.experiments.gates import Gate, NodeClaim, evaluate, isolating, target_of


def read_ledger(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as e:
        raise InputError(path, f"cannot read ledger: {e.strerror or e}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise InputError(path, f"ledger is not valid JSON: {e}") from None
    # a synthesis JSON (crossview synthesize) keeps its rows under "ledger"
    key = "levers" if isinstance(data, dict) and "levers" in data else "ledger"
    if not isinstance(data, dict) or not isinstance(data.get(key), list) or not all(
            isinstance(r, dict) and "id" in r for r in data[key]):
        raise InputError(path, 'not a ledger: expected {"levers": [{"id": …, …}, …]} or a '
                         'synthesis JSON {"ledger": [{"id": …, …}, …]}')
    return data


def rows_of(data: dict[str, Any]) -> list[dict[str, Any]]:
    return data["levers"] if "levers" in data else data["ledger"]


def lever_outcome(res: ABResult, metrics: list[MetricResult] | None = None
                  ) -> tuple[str, str, str]:
    """(confidence, ab verdict, reason) from the compared metrics (the isolating ones when
    given), before the gates."""
    ms = res.metrics if metrics is None else metrics
    if res.refusals:
        return "DRAFT", "refused", "; ".join(res.refusals)
    vs = {m.verdict for m in ms}
    if "win" in vs and "loss" in vs:
        return "VERDICT", "mixed", "some metrics win, others lose"
    for v in ("win", "loss"):
        if v in vs:
            return "VERDICT", v, ", ".join(m.metric for m in ms if m.verdict == v)
    if "null" in vs:
        return "tried-null", "null", "no metric changed beyond noise"
    why = "; ".join(f"{m.metric}: {m.reason}" for m in ms) or "no metric compared"
    return "DRAFT", "insufficient", why


def measured(m: MetricResult, res: ABResult) -> dict[str, Any] | None:
    c = m.cmp
    if c is None:
        return None
    return {"metric": m.metric, "unit": m.unit, "direction": m.direction,
            "baseline_median": c.base_median, "variant_median": c.var_median,
            "delta_pct": c.delta_pct,
            "ci_pct": [(c.ci[0] - 1) * 100, (c.ci[1] - 1) * 100],
            "ci_level": res.ci_level, "n": [m.n_base, m.n_var], "verdict": m.verdict,
            "evidence": {"baseline": res.baseline.paths, "variant": res.variant.paths}}


def predicted(row: dict[str, Any], m: MetricResult) -> dict[str, Any]:
    """The ledger's prediction in the metric's terms: removing share s of the metric's time
    changes a lower-is-better metric by −s and a higher-is-better one by 1 ÷ (1 − s) − 1
    (assumes the metric's time is the lever's window: an upper bound when it is not)."""
    share = row.get("window_share")
    s = share.get("value") if isinstance(share, dict) else None
    out: dict[str, Any] = {"expected_effect": row.get("expected_effect"), "delta_pct": None,
                           "basis": "the row's window_share, taken as the share of the "
                           "metric's time (GPU-bound upper bound)"}
    if "effect" in row and row["effect"] is None:  # the synthesis made no prediction (issue 16)
        out["basis"] = "not predicted by the synthesis: no predicted change to compare"
    elif isinstance(s, int | float) and 0 <= s < 100 and m.direction in ("lower", "higher"):
        out["delta_pct"] = -float(s) if m.direction == "lower" else (
            100 * (1 / (1 - s / 100) - 1))
    else:
        out["basis"] = "no numeric window_share in the row: the prediction stays text"
    return out


def gated_outcome(res: ABResult, row: dict[str, Any], bundle_ctx: dict[str, Any] | None,
                  claim: NodeClaim, allow: set[str]) -> tuple[str, dict[str, Any]]:
    """(confidence, ab record): VERDICT / tried-null only when every gate passed."""
    gates: list[Gate] = evaluate(res, row, bundle_ctx, claim, allow)
    iso = isolating(res, target_of(row))
    confidence, verdict, reason = lever_outcome(res, iso or res.metrics)
    failed = [g for g in gates if not g.passed]
    rec: dict[str, Any] = {"gates": [g.to_dict() for g in gates],
                           "failed_gates": [f"{g.name}: {g.detail}" for g in failed]}
    if confidence in ("VERDICT", "tried-null") and failed:
        reason = (f"{verdict} on the numbers, kept DRAFT: failed gate(s) "
                  + ", ".join(g.name for g in failed))
        confidence = "DRAFT"
    rec.update({"verdict": verdict, "reason": reason})
    if confidence in ("VERDICT", "tried-null") and iso:
        m = next((x for x in iso if x.verdict in ("win", "loss")), iso[0])
        meas, pred = measured(m, res), predicted(row, m)
        rec["measured"], rec["predicted"] = meas, pred
        rec["prediction_error_pct_points"] = (
            meas["delta_pct"] - pred["delta_pct"]
            if meas and pred["delta_pct"] is not None else None)
    return confidence, rec


def update_ledger(path: Path, lever_id: str, res: ABResult, ab_json: dict[str, Any],
                  claim: NodeClaim | None = None, allow: set[str] | None = None
                  ) -> tuple[str, list[str]]:
    """Record the A/B on lever `lever_id`; returns the new confidence and the failed gates."""
    data = read_ledger(path)
    row = next((r for r in rows_of(data) if str(r["id"]) == lever_id), None)
    if row is None:
        ids = ", ".join(str(r["id"]) for r in rows_of(data)) or "none"
        raise UsageError(f"--lever {lever_id!r}: no such lever in {path} (ids: {ids})")
    ctx = data.get("context") if isinstance(data.get("context"), dict) else None
    confidence, rec = gated_outcome(res, row, ctx, claim or NodeClaim(), allow or set())
    row["confidence"] = confidence
    row["ab"] = {**rec, "baseline": res.baseline.paths, "variant": res.variant.paths,
                 **ab_json}
    path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    return confidence, list(rec["failed_gates"])

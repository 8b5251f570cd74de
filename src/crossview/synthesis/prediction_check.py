"""Prediction next to measurement once an A/B lands (issue 16): for each metric the A/B
compared, the lever's predicted change of that metric, the measured change and the error.

The prediction is the lever's saving as a share f of its window (`window_share`), taken as
the share of the metric's time the lever removes: a lower-is-better time metric (latency,
TPOT) changes by −f, a higher-is-better rate (throughput) by 1/(1 − f) − 1. Metrics with no
known direction, and levers with no prediction, get no predicted value."""

from __future__ import annotations

from typing import Any


def predicted_pct(share_pct: float, direction: str | None) -> float | None:
    f = share_pct / 100
    if direction == "lower":
        return -100 * f
    if direction == "higher" and f < 1:
        return 100 * (1 / (1 - f) - 1)
    return None


def check(ab: dict[str, Any] | None, share_pct: float, predicted: bool
          ) -> list[dict[str, Any]]:
    """One row per A/B metric: metric, measured_pct, predicted_pct, error_pts (measured −
    predicted, percentage points); [] before an A/B."""
    if not ab:
        return []
    rows = []
    for m in ab.get("metrics") or []:
        measured = m.get("delta_pct")
        pred = predicted_pct(share_pct, m.get("direction")) if predicted else None
        rows.append({"metric": m.get("metric"), "verdict": m.get("verdict"),
                     "measured_pct": measured, "predicted_pct": pred,
                     "error_pts": (measured - pred) if measured is not None
                     and pred is not None else None})
    return rows

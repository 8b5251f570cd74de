"""Ledger rows after an A/B: measured change, predicted change and the error side by side
(issue 16). Hand-computed: a lever predicted to save 19.5% of its window."""

from __future__ import annotations

import pytest

from crossview.core.measurement import Measurement
from crossview.synthesis.ledger import Lever
from crossview.synthesis.prediction_check import predicted_pct

AB = {"verdict": "win", "reason": "tpot_ms",
      "metrics": [{"metric": "tpot_ms", "direction": "lower", "delta_pct": -12.0,
                   "verdict": "win"},
                  {"metric": "output_tok_s", "direction": "higher", "delta_pct": 14.0,
                   "verdict": "win"},
                  {"metric": "odd", "direction": None, "delta_pct": 1.0, "verdict": "null"}]}


def _lever(effect: str | None) -> Lever:
    return Lever("kernel:k:decode", "faster k", "kernel", "kernel",
                 {"window": "decode", "roofline_fraction": "80%"},
                 Measurement(34.87e6, "ns", "d.csv", {}), Measurement(19.5, "%", "d.csv", {}),
                 "basis", ["d.csv"], "L4", ab=AB, effect=effect)


def test_measured_predicted_and_error() -> None:
    rows = {r["metric"]: r for r in _lever("roofline").prediction_check()}
    # time metric: −19.5%; measured −12.0% → error +7.5 pts
    assert rows["tpot_ms"]["predicted_pct"] == pytest.approx(-19.5)
    assert rows["tpot_ms"]["error_pts"] == pytest.approx(7.5)
    # rate: 1 / (1 − 0.195) − 1 = +24.22%; measured +14.0% → error −10.22 pts
    assert rows["output_tok_s"]["predicted_pct"] == pytest.approx(24.2236, abs=1e-3)
    assert rows["output_tok_s"]["error_pts"] == pytest.approx(-10.2236, abs=1e-3)
    assert rows["odd"]["predicted_pct"] is None and rows["odd"]["error_pts"] is None
    assert _lever("roofline").to_dict()["prediction_check"][0]["metric"] == "tpot_ms"


def test_no_prediction_no_error() -> None:
    rows = _lever(None).prediction_check()
    assert all(r["predicted_pct"] is None and r["measured_pct"] is not None for r in rows)
    assert predicted_pct(19.5, None) is None

"""host-python-overhead names an optimizer zero_grad that zero-fills the gradients.

kineto_v100_resnet50_workers4 records `Optimizer.zero_grad#SGD.zero_grad` with `aten::zero_`
ops under it. The test counts them in the raw JSON (zero_ events inside each zero_grad
interval on the same thread) and checks the finding's numbers and its set_to_none fix.
"""

from __future__ import annotations

import pytest

import oracle
from conftest import SHARED_DATA, SHARED_DATA_ABSENT
from crossview.analysis import analyze

TRACE = SHARED_DATA / "kineto" / "kineto_v100_resnet50_workers4.pt.trace.json.gz"
pytestmark = pytest.mark.skipif(not TRACE.exists(), reason=SHARED_DATA_ABSENT)


def test_zero_filling_zero_grad_is_told_set_to_none() -> None:
    ev = oracle.complete_events(TRACE)
    resets = [e for e in ev if str(e.get("name", "")).startswith("Optimizer.zero_grad")]
    fills = sum(1 for z in resets for e in ev if e.get("name") == "aten::zero_"
                and e.get("tid") == z["tid"] and z["ts"] <= e["ts"] <= z["ts"] + z["dur"])
    assert (len(resets), fills) == (6, 966)  # 161 gradients per call
    (f,) = [f for f in analyze([TRACE]).findings if f.pattern == "host-python-overhead"]
    assert (f"{fills:,} `aten::zero_` ops under {len(resets)} calls (161 per call"
            in f.observation)
    assert f.fix.startswith("Drop the gradients instead of zero-filling them")
    assert "set_to_none=True" in f.fix

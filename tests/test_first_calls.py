"""First calls of a shape (views/host/first_calls.py, detectors/first_calls.py).

Real capture: tracelens_b200_vllm_eager_prefill_tp8 (vLLM eager, one 888-token prefill step,
shapes recorded): each GEMM shape's first `aten::addmm` takes 1.4–2.4 ms of host time, its 35
later calls 34–71 µs (5.38 ms of the 87.22 ms step). Expected numbers are recomputed here from
the raw trace JSON: the events inside the engine's step annotation, grouped by (name, Input
Dims, Input type), self time = duration minus the direct children on the same thread. The
other shared captures with shapes stay under the cut (no finding). Synthetic traces: the cuts.
"""

from __future__ import annotations

import gzip
import json
import statistics
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from conftest import SHARED_DATA, shared_file
from crossview.analysis import analyze
from crossview.knowledge.thresholds import defaults
from test_kineto_synthetic import X, kernel, runtime, write_trace

B200 = SHARED_DATA / "kineto" / "tracelens_b200_vllm_eager_prefill_tp8.json.gz"
PATTERN = "first-call-per-shape"
GEMM = "[[2880],[888,512],[512,2880],[],[]]"


def _self_us(e: dict[str, Any], same_thread: list[dict[str, Any]]) -> float:
    """Duration minus the direct children (contained events not inside another child)."""
    s, t = e["ts"], e["ts"] + e["dur"]
    inside = [x for x in same_thread if x is not e and s <= x["ts"] and x["ts"] + x["dur"] <= t
              and not (x["ts"] == s and x["dur"] == e["dur"])]
    direct = [x for x in inside if not any(
        y is not x and y["ts"] <= x["ts"] and x["ts"] + x["dur"] <= y["ts"] + y["dur"]
        and (y["ts"], y["dur"]) != (x["ts"], x["dur"]) for y in inside)]
    return e["dur"] - sum(x["dur"] for x in direct)


@cache
def _raw_gemm() -> tuple[float, list[float]]:
    """The first call's self time (µs) and the later ones', for the GEMM shape above."""
    with gzip.open(B200) as fh:
        events = [e for e in json.load(fh)["traceEvents"] if e.get("ph") == "X"]
    calls = sorted((e for e in events if e["name"] == "aten::addmm"
                    and json.dumps(e["args"].get("Input Dims"), separators=(",", ":")) == GEMM),
                   key=lambda e: e["ts"])
    tid = calls[0]["tid"]
    lo, hi = calls[0]["ts"], calls[-1]["ts"] + calls[-1]["dur"]
    thread = [e for e in events if e["tid"] == tid and e["ts"] + e["dur"] >= lo
              and e["ts"] <= hi]
    selfs = [_self_us(c, thread) for c in calls]
    return selfs[0], selfs[1:]


def test_b200_first_gemm_calls_match_the_raw_trace() -> None:
    a = analyze([shared_file(B200)])
    fc = a.views.first_calls  # type: ignore[union-attr]
    [g] = [g for g in fc.groups if g.name == "aten::addmm" and g.input_dims == GEMM]
    first, rest = _raw_gemm()
    assert g.calls == 1 + len(rest) == 36
    assert abs(g.first_ns - first * 1000) <= 1000  # µs floats → integer ns
    assert abs(g.rest_median_ns - statistics.median(rest) * 1000) <= 1000
    assert 2_400_000 < g.first_ns < 2_450_000 and 45_000 < g.rest_median_ns < 56_000
    # the three GEMM shapes; the [1, 512] copy_'s first call (1.58 ms) has one later call only
    assert [x.name for x in fc.groups] == ["aten::addmm"] * 3


def test_b200_finding() -> None:
    a = analyze([shared_file(B200)])
    fc = a.views.first_calls  # type: ignore[union-attr]
    [f] = [f for f in a.findings if f.pattern == PATTERN]
    # its host time lies inside the launch-bound 🔴's wait: a part of it, not a second saving
    # (issue 37: one owner per nanosecond)
    assert f.severity == "info" and f.details["within"] == "kernel-launch-bound"
    assert f.share == pytest.approx(fc.excess_ns / fc.step_ns)
    assert 0.06 < f.share < 0.065  # 5.38 ms of the 87.22 ms step
    assert "5.38 ms per step" in f.observation and "3 op groups" in f.observation
    assert "cudagraph_capture_sizes" in f.fix  # the vLLM variant
    # listed as a part of the launch-bound red whose wait it is part of
    lb = next(x for x in a.findings if x.pattern == "kernel-launch-bound")
    assert lb.severity == "red" and PATTERN in lb.details["parts"]  # type: ignore[operator]


@pytest.mark.parametrize("name", ["kineto_v100_resnet50_workers0.pt.trace.json.gz",
                                  "tracelens_h100_hf_qwen1.5_0.5b_forward.json.gz",
                                  "hta_v100_ddp_training.json.gz"])
def test_no_finding_under_the_cut(name: str) -> None:
    a = analyze([shared_file(SHARED_DATA / "kineto" / name)])
    assert not [f for f in a.findings if f.pattern == PATTERN]


# --------------------------------------------------------------------------- synthetic


def _trace(tmp: Path, first_us: float, later_us: float, calls: int = 10) -> Path:
    """One 1 ms step; `calls` aten::mm calls of one shape, the first of first_us, then one
    launch + kernel so the step has GPU work."""
    ev: list[dict[str, Any]] = [X("user_annotation", "ProfilerStep#1", 1, 1, 1000.0, 1000.0)]
    t = 1001.0
    for i in range(calls):
        d = first_us if i == 0 else later_us
        ev.append(X("cpu_op", "aten::mm", 1, 1, t, d, **{"Input Dims": [[8, 8], [8, 8]],
                                                          "Input type": ["float", "float"]}))
        t += d + 1
    ev.append(runtime("cudaLaunchKernel", 1990.0, 5.0, 1, 1, 1))
    ev.append(kernel("k", 1995.0, 4.0, 1))
    return write_trace(tmp / "t.json", ev)


def _finding(path: Path) -> Any:
    found = [f for f in analyze([path]).findings if f.pattern == PATTERN]
    return found[0] if found else None


def test_synthetic_first_call_is_flagged(tmp_path: Path) -> None:
    f = _finding(_trace(tmp_path, first_us=300.0, later_us=10.0))
    assert f is not None
    assert f.details["excess_ns"] == 290_000  # 300 µs − the later calls' 10 µs median
    assert f.share == pytest.approx(0.29)  # of the 1 ms step


def test_synthetic_cuts(tmp_path: Path) -> None:
    lim = defaults()
    # ratio under the cut: 9.5 × the later calls
    assert _finding(_trace(tmp_path, first_us=lim.first_call_min_ratio * 30 - 15,
                           later_us=30.0)) is None
    # excess under the cut: 10× but only 180 µs more
    assert _finding(_trace(tmp_path, first_us=200.0, later_us=20.0)) is None
    # too few later calls to call it a pattern (the README example's one index_select pair)
    few = lim.first_call_min_later
    assert _finding(_trace(tmp_path, first_us=300.0, later_us=10.0, calls=few)) is None
    assert _finding(_trace(tmp_path, first_us=300.0, later_us=10.0, calls=few + 1)) is not None


def test_cpu_only_capture_gets_no_cuda_graph_advice(tmp_path: Path) -> None:
    p = _trace(tmp_path, first_us=300.0, later_us=10.0)
    d = json.loads(p.read_text())
    d["traceEvents"] = [e for e in d["traceEvents"] if e["cat"] not in ("kernel",
                                                                          "cuda_runtime")]
    p.write_text(json.dumps(d))
    f = _finding(p)
    assert f is not None and "CUDA graph" not in f.fix and "warm-up step per size" in f.fix

"""launch-lag on the real MI300X vLLM decode (full CUDA graph): the 13 GPU ops launched one by
one (9 hipMemcpyAsync, 3 hipLaunchKernel, 1 hipExtModuleLaunchKernel) start 7.28–16.72 ms after
their calls return, where a launch takes microseconds — recomputed here from the raw JSON
(GPU op ts − (runtime call ts + dur) by correlation; graph-replayed kernels left out). The
recap's 8.35 ms "outside the capture's kernels" at the step's start is that, not the workload:
a note says so. Captures with ordinary launch latency get none. Skips without ../shared/data."""

from __future__ import annotations

import gzip
import json

import pytest

from conftest import SHARED_DATA, shared_file
from crossview.analysis import analyze

MI300X = SHARED_DATA / "kineto" / "tracelens_mi300x_vllm_decode_full_graph.json.gz"
QWEN = SHARED_DATA / "kineto" / "tracelens_h100_hf_qwen1.5_0.5b_forward.json.gz"


def test_mi300x_ops_start_milliseconds_after_their_launch() -> None:
    with gzip.open(shared_file(MI300X)) as fh:
        ev = json.load(fh)["traceEvents"]
    calls = {e["args"]["correlation"]: e for e in ev
             if e.get("cat") == "cuda_runtime" and "correlation" in (e.get("args") or {})
             and e["name"] != "hipGraphLaunch"}
    lags = sorted(e["ts"] - (c["ts"] + c["dur"]) for e in ev
                  if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")
                  and (c := calls.get((e.get("args") or {}).get("correlation"))) is not None)
    assert len(lags) == 13
    f = next(f for f in analyze([MI300X]).findings if f.pattern == "launch-lag")
    assert f.severity == "info" and f.details["ops"] == 13
    assert f.details["min_ns"] == pytest.approx(1000 * lags[0], abs=1)
    assert f.details["max_ns"] == pytest.approx(1000 * lags[-1], abs=1)


def test_ordinary_launch_latency_gets_no_note() -> None:
    assert not [f for f in analyze([shared_file(QWEN)]).findings if f.pattern == "launch-lag"]

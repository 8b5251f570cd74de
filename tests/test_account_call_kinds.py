"""Two time-account causes read from what the call did, not only its name (real B200 vLLM
eager prefill trace, one step).

1. A `cudaMemcpyAsync` that returned before its copy ended queued the copy and went on: its
   time is launch-API overhead, not a blocking copy. In this trace 160 of the 161 copy calls
   return before their copy ends (146 DtoD staging copies of vLLM's symmetric-memory
   all-reduce, 12 pinned and 2 eight-byte pageable HtoD), counted here from the raw JSON; the
   account charged 2.96 ms to "blocking / pageable copy" before, now under 1 ms (what is left
   is GPU copy time with no kernel running).
2. A JIT / autotune frame shorter than account.yaml `startup_frame_min_ns` is a per-step cache
   lookup: flashinfer's autotuner `choose_one` (×36, one per MoE layer, ≤ 115 µs) was charged
   2.08 ms as "JIT compile / autotune (start-up)" and kept out of the steady state.
Skips without ../shared/data."""

from __future__ import annotations

import gzip
import json

from conftest import SHARED_DATA, shared_file
from crossview.analysis import analyze
from crossview.knowledge import causes

B200 = SHARED_DATA / "kineto" / "tracelens_b200_vllm_eager_prefill_tp8.json.gz"


def _events() -> list[dict]:
    with gzip.open(shared_file(B200)) as fh:
        return [e for e in json.load(fh)["traceEvents"] if e.get("ph") == "X"]


def test_copy_calls_that_return_early_are_launch_overhead() -> None:
    ev = _events()
    calls = {e["args"]["correlation"]: e for e in ev if e.get("name") == "cudaMemcpyAsync"}
    copies = [e for e in ev if e.get("cat") == "gpu_memcpy"]
    early = [c for c in copies if (k := calls.get(c["args"].get("correlation"))) is not None
             and k["ts"] + k["dur"] < c["ts"] + c["dur"]]
    assert (len(calls), len(early)) == (161, 160)
    acc = analyze([B200]).views.account
    assert acc is not None
    rows = {c.cause: c for c in acc.steady_state}
    assert rows["blocking_copy"].ns < 1_000_000  # 2.96 ms before
    assert "cudaMemcpyAsync" not in {f.frame for f in rows["launch_overhead"].top_frames} or \
        rows["launch_overhead"].ns > 0


def test_short_autotune_frames_are_dispatch_not_startup() -> None:
    ev = _events()
    tuner = [e for e in ev if str(e.get("name", "")).startswith("flashinfer/autotuner.py")]
    assert tuner and max(e["dur"] for e in tuner) * 1000 < causes.rules().startup_frame_min_ns
    acc = analyze([B200]).views.account
    assert acc is not None
    jit = [c for c in acc.steady_state if c.cause == "jit_compile"]  # 2.08 ms before
    assert sum(c.ns for c in jit) < 10_000  # left: a 1.5 µs cudaGetFuncBySymbol (an API call)
    assert not [f for c in jit for f in c.top_frames if "autotuner" in f.frame]
    frames = {f.frame for c in acc.steady_state if c.cause == "cpu_dispatch"
              for f in c.top_frames}
    assert frames  # the lookups now count with the step's other host dispatch

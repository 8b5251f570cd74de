"""pageable-memcpy charges only the GPU idle under the calls that launched pageable copies.

tracelens_b200_vllm_eager_prefill_tp8: the account's blocking-copy row (2.96 ms per step) is
mostly 146 device-to-device `cudaMemcpyAsync` calls; the capture's only pageable copies are two
8-byte HtoD copies. Recomputed here from the JSON (tests/oracle.py): the GPU idles 22,314 ns
(22.3 µs) inside those two calls (call interval minus the kernel union, within the kernel span)
— so the finding is a note, not the 🟡 "pin your memory" it was. Skips without ../shared/data."""

from __future__ import annotations

import pytest

import oracle
from conftest import SHARED_DATA, SHARED_DATA_ABSENT
from crossview.analysis import analyze

B200 = SHARED_DATA / "kineto" / "tracelens_b200_vllm_eager_prefill_tp8.json.gz"


def test_b200_pageable_copies_do_not_carry_the_device_to_device_calls() -> None:
    if not B200.exists():
        pytest.skip(SHARED_DATA_ABSENT)
    tr = oracle.load_trace(B200)
    ev = [e for e in oracle.events(tr) if e.get("ph") == "X"]
    union = oracle.union_intervals((k.start_ns, k.end_ns) for k in oracle.kernels(tr))
    lo, hi = union[0][0], union[-1][1]
    copies = [e for e in ev if e.get("cat") == "gpu_memcpy" and "Pageable" in e["name"]]
    assert [(e["args"]["bytes"]) for e in copies] == [8, 8]
    corr = {e["args"]["correlation"] for e in copies}
    calls = [e for e in ev if e.get("cat") == "cuda_runtime"
             and (e.get("args") or {}).get("correlation") in corr]
    idle = 0
    for c in calls:
        s = max(oracle.us_to_ns(c["ts"]), lo)
        e = min(oracle.us_to_ns(c["ts"]) + oracle.us_to_ns(c["dur"]), hi)
        if e > s:
            idle += (e - s) - sum(max(0, min(e, b) - max(s, a)) for a, b in union)
    assert idle == 22_314
    a = analyze([B200])
    (f,) = [f for f in a.findings if f.pattern == "pageable-memcpy"]
    assert f.severity == "info" and f.share < 0.001
    assert "(22.3 µs of " in f.observation and "device-to-device copy calls" in f.observation

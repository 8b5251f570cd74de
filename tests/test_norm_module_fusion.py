"""Memory-bound ops attributed to their nn.Module (op_roofline `modules`, op_memory_bound).

tracelens_h100_hf_qwen1.5_0.5b_forward was captured with with_modules=True: `nn.Module:
Qwen2RMSNorm_N` python events enclose the RMSNorm's aten ops. The test recomputes from the raw
JSON the kernel time launched inside those module intervals (launch calls on the module's
thread within its interval, kernels by `args.correlation`) and compares it with the finding.
"""

from __future__ import annotations

import re

import pytest

import oracle
from conftest import SHARED_DATA, SHARED_DATA_ABSENT
from crossview.analysis import analyze

TRACE = SHARED_DATA / "kineto" / "tracelens_h100_hf_qwen1.5_0.5b_forward.json.gz"
pytestmark = pytest.mark.skipif(not TRACE.exists(), reason=SHARED_DATA_ABSENT)


def _rmsnorm_kernel_ns() -> int:
    ev = oracle.complete_events(TRACE)
    mods = [e for e in ev if str(e.get("name", "")).startswith("nn.Module: Qwen2RMSNorm_")]
    launches = [e for e in ev if e.get("cat") == "cuda_runtime"
                and e.get("name") == "cudaLaunchKernel"]
    corr = {e["args"]["correlation"] for e in launches for m in mods
            if e["tid"] == m["tid"] and m["ts"] <= e["ts"] <= m["ts"] + m["dur"]}
    return round(1000 * sum(e["dur"] for e in ev if e.get("cat") == "kernel"
                            and e["args"].get("correlation") in corr))


def test_rmsnorm_ops_are_named_by_their_module_and_told_to_fuse() -> None:
    a = analyze([TRACE])
    (f,) = [f for f in a.findings if f.pattern == "memory-bandwidth-bound"]
    assert "`aten::pow` [16, 559, 1024] fp32 in `Qwen2RMSNorm`" in f.observation
    m = re.search(r"`Qwen2RMSNorm` alone runs 6 distinct ops \(([^)]*)\) over ([\d,]+) calls: "
                  r"([\d.]+) ms", f.observation)
    assert m and "aten::rsqrt" in m.group(1) and "aten::copy_" in m.group(1)
    # the JSON's kernel time under the module intervals: 7.38 ms, as the finding says
    assert float(m.group(3)) == pytest.approx(_rmsnorm_kernel_ns() / 1e6, abs=0.01)
    assert f.fix.startswith("`Qwen2RMSNorm` is a normalization layer run as separate")
    assert "LigerRMSNorm" in f.fix and "7.38 ms" in f.expected_effect
    groups = a.views.op_roofline.groups  # type: ignore[union-attr]
    pow_ = [g for g in groups if g.op == "aten::pow"]
    assert pow_ and pow_[0].modules == ["Qwen2RMSNorm"]

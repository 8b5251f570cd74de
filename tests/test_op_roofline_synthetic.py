"""Hand-built Kineto traces (no shared capture has these cases): an FP32 SGEMM whose kernel
also has Nsight Compute counters (analytic-vs-ncu FLOP agreement, end to end), and an eager
(unfused) attention chain bmm → softmax → bmm on an H100 (kernel-inefficiency findings).
Every expected number is computed by hand here.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from crossview.analysis import analyze
from crossview.render import markdown

H100 = {"id": 0, "name": "NVIDIA H100 80GB HBM3", "totalGlobalMem": 85018279936,
        "numSms": 132, "computeMajor": 9, "computeMinor": 0}
SGEMM = "sgemm_fp32_kernel(float const*, float*)"


def _op(name: str, ts: float, dur: float, dims: list[Any], types: list[str]) -> dict[str, Any]:
    return {"ph": "X", "cat": "cpu_op", "name": name, "pid": 1, "tid": 1, "ts": ts, "dur": dur,
            "args": {"Input Dims": dims, "Input type": types,
                     "Concrete Inputs": [""] * len(dims)}}


def _launch(ts: float, corr: int, kname: str, kts: float, kdur: float) -> list[dict[str, Any]]:
    return [{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1,
             "ts": ts, "dur": 4, "args": {"correlation": corr}},
            {"ph": "X", "cat": "kernel", "name": kname, "pid": 0, "tid": 7, "ts": kts,
             "dur": kdur, "args": {"device": 0, "stream": 7, "correlation": corr}}]


def _trace(tmp: Path, events: list[dict[str, Any]]) -> Path:
    p = tmp / "t.pt.trace.json"
    p.write_text(json.dumps({"deviceProperties": [H100], "traceEvents": events}))
    return p


# the SYNTHETIC ncu raw page of tests/test_ncu_inputs.py: this SGEMM on an H100, 1.5 ms,
# (FADD 500 + FMUL 100 + 2 × FFMA 12,000) inst/cycle × 1.755 cycle/ns
NCU_RAW = "\n".join([
    '"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream",'
    '"Block Size","Grid Size","Device","CC","device__attribute_display_name",'
    '"gpu__time_duration.sum","dram__bytes_read.sum","dram__bytes_write.sum",'
    '"smsp__sass_thread_inst_executed_op_ffma_pred_on.sum.per_cycle_elapsed",'
    '"smsp__sass_thread_inst_executed_op_fadd_pred_on.sum.per_cycle_elapsed",'
    '"smsp__sass_thread_inst_executed_op_fmul_pred_on.sum.per_cycle_elapsed",'
    '"smsp__cycles_elapsed.avg.per_second"',
    '"","","","","","","","","","","","","msecond","Gbyte","Mbyte","inst/cycle","inst/cycle",'
    '"inst/cycle","cycle/nsecond"',
    f'"0","4242","python3","node1","{SGEMM}","1","7","(256, 1, 1)","(132, 8, 1)","0","9.0",'
    '"NVIDIA H100 80GB HBM3","1.5","1.2","400","12,000","500","100","1.755"',
]) + "\n"


def test_analytic_vs_ncu_flops_end_to_end(tmp_path: Path) -> None:
    # aten::mm(A[4096,1930], B[1930,4096]) FP32 → one 1.5 ms kernel, profiled by ncu too
    trace = _trace(tmp_path, [_op("aten::mm", 1000, 1600, [[4096, 1930], [1930, 4096]],
                                  ["float", "float"]),
                              *_launch(1010, 1, SGEMM, 1020, 1500)])
    csv = tmp_path / "sgemm_raw.csv"
    csv.write_text(NCU_RAW)
    a = analyze([trace, csv])
    r = a.views.op_roofline  # type: ignore[union-attr]
    (g,) = r.groups
    assert g.flops == 2 * 4096 * 4096 * 1930 == 64_760_053_760
    (ag,) = r.agreement
    ncu = (500 + 100 + 2 * 12000) * 1.755e9 * 1.5e-3  # 64,759,500,000 FLOP
    assert ag["ncu_flops"] == pytest.approx(ncu)
    assert ag["ratio"] == pytest.approx(64_760_053_760 / ncu) and ag["agree"] is True
    assert "ncu check" in markdown.render(a) and "ratio 1.00 (agree)" in markdown.render(a)
    # FP32 matmul: the FP32 (CUDA-core) ceiling, 67 TFLOP/s on the H100 SXM
    assert g.ceiling == "fp32" and g.tensor_cores is False
    assert g.pct_of_roofline == pytest.approx(100 * 64_760_053_760 / 1.5e-3 / 67e12)


def test_unfused_attention_and_slow_bmm(tmp_path: Path) -> None:
    # eager attention with the Qwen shapes (B·H = 256 heads, S = 559, D = 64), BF16:
    # scores = bmm(Q, Kᵀ) 200 µs; softmax 150 µs; out = bmm(P, V) 200 µs
    bf = "c10::BFloat16"
    ev = [_op("aten::bmm", 1000, 210, [[256, 559, 64], [256, 64, 559]], [bf, bf]),
          *_launch(1001, 1, "ampere_bf16_s16816gemm_bf16_128x64_ldg8_f2f_tn", 1010, 200),
          _op("aten::_softmax", 1300, 160, [[16, 16, 559, 559], [], []], [bf, "Scalar",
                                                                           "Scalar"]),
          *_launch(1301, 2, "softmax_warp_forward<c10::BFloat16>", 1310, 150),
          _op("aten::bmm", 1500, 210, [[256, 559, 559], [256, 559, 64]], [bf, bf]),
          *_launch(1501, 3, "ampere_bf16_s16816gemm_bf16_64x64_ldg8_f2f_nn", 1510, 200)]
    a = analyze([_trace(tmp_path, ev)])
    groups = {g.shape: g for g in a.views.op_roofline.groups}  # type: ignore[union-attr]
    qk = groups["M=559 N=559 K=64 batch=256"]
    # FLOPs 2·256·559·559·64 = 10,239,377,408; bytes 256·(559·64 + 64·559 + 559·559)·2 B
    assert qk.flops == 10_239_377_408 and qk.bytes == 256 * (2 * 559 * 64 + 559 * 559) * 2
    ai = 10_239_377_408 / 196_624_896  # 52.1 FLOP/B < ridge 989.5/3.35 = 295 → memory-bound
    assert qk.intensity == pytest.approx(ai) and qk.bound == "memory"
    # achieved 10.24 GFLOP / 200 µs = 51.2 TFLOP/s of attainable 52.1 × 3.35 TB/s = 174 TFLOP/s
    assert qk.pct_of_roofline == pytest.approx(100 * (10_239_377_408 / 200e-6)
                                               / (ai * 3.35e12))
    assert 29 < qk.pct_of_roofline < 30
    # the chain owns its softmax and matmuls (issue 37: one owner per nanosecond): the two
    # bmm groups are slow too, but they are the chain's, so no second "far below the
    # roofline" finding charges the same kernels (before: 100% of kernel time twice)
    [chain] = [f for f in a.findings if f.pattern == "unfused-attention"]
    assert chain.title.startswith("Unfused attention")
    assert not [f for f in a.findings if f.pattern == "kernel-inefficiency"]
    assert chain.share == pytest.approx(1.0)  # every kernel in the trace is in the chain
    assert "scaled_dot_product_attention" in chain.fix
    # the model kind is not in this trace (no module names, no recorded is_causal): the fix
    # keeps the model's own mask instead of printing a causal one
    assert "is_causal=True" not in chain.fix and "attn_mask=mask" in chain.fix


def test_what_if_fraction_of_roofline(tmp_path: Path) -> None:
    bf = "c10::BFloat16"
    ev = [_op("aten::bmm", 1000, 210, [[256, 559, 64], [256, 64, 559]], [bf, bf]),
          *_launch(1001, 1, "gemm_a", 1010, 200)]
    a = analyze([_trace(tmp_path, ev)])
    (g,) = a.views.op_roofline.groups  # type: ignore[union-attr]
    # 200 µs at 29.36% of its roofline → at 70%: 200 × 29.36 / 70 = 83.9 µs (116.1 µs saved)
    assert g.time_at_ns(70) == pytest.approx(200_000 * g.pct_of_roofline / 70)  # type: ignore[operator]
    assert g.time_at_ns(10) == 200_000  # never slower than now
    f = next(x for x in a.findings if x.pattern == "kernel-inefficiency")
    saved = 200_000 - 200_000 * g.pct_of_roofline / 70  # type: ignore[operator]
    assert f"{saved / 1e3:,.1f} µs less" in f.expected_effect

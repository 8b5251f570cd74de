"""An FP32 matmul that ran on TF32 tensor cores is rated against the TF32 ceiling.

hta_a100_16rank_training_graphs (A100): `aten::mm` M=64 N=2798 K=4096 fp32 launches
`cutlass_80_tensorop_s1688gemm_64x64_32x6_nn` (a TF32 tensor-op kernel: `s1688` = FP32
operands on the 16×8×8 MMA). It was rated at 54.9% of the 19.5 TFLOP/s FP32 peak; against
TF32's 156 TFLOP/s its intensity (30.8 FLOP/B, under the ridge 156e12 / 2.039e12 ≈ 76.5) makes
it memory-bound: 347 GB/s of 2,039 GB/s = 17.0%. FLOPs and bytes by hand: 2·64·2798·4096 =
1.467 GFLOP; (64·4096 + 4096·2798 + 64·2798)·4 B = 47.6 MB. Skips without ../shared/data."""

from __future__ import annotations

import pytest

import oracle
from conftest import SHARED_DATA, shared_file
from crossview.analysis import analyze

A100_16 = SHARED_DATA / "kineto" / "hta_a100_16rank_training_graphs.json.gz"


def test_tf32_kernel_gets_the_tf32_ceiling() -> None:
    names = {e.get("name") for e in oracle.complete_events(shared_file(A100_16))
             if e.get("cat") == "kernel"}
    top = "void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_64x64_32x6_nn_align4>"
    assert any(str(n).startswith(top[:60]) for n in names)
    r = analyze([shared_file(A100_16)]).views.op_roofline
    (g,) = [g for g in r.groups if g.op == "aten::mm" and g.shape == "M=64 N=2798 K=4096"]
    assert "tensorop_s1688gemm" in g.top_kernel
    assert g.ceiling == "tf32_tensor" and g.tensor_cores
    assert g.flops == 2 * 64 * 2798 * 4096
    assert g.bytes == pytest.approx((64 * 4096 + 4096 * 2798 + 64 * 2798) * 4)
    assert g.bound == "memory" and round(g.pct_of_roofline, 1) == 17.0

"""The memory-bound fix fits what the capture shows (op_memory_bound._variant): no autocast
advice where the matmuls already run in 16 bits, no weight quantization unless a matmul is
among the memory-bound ops. The Qwen forward is real (shared data); the decode GEMV trace is
hand-built (no shared capture has a memory-bound matmul near the DRAM ceiling), its numbers
worked out by hand below."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import SHARED_DATA, SHARED_DATA_ABSENT
from crossview.analysis import analyze
from crossview.knowledge.fixes import variant_text
from test_op_roofline_synthetic import _launch, _op, _trace

QWEN = SHARED_DATA / "kineto" / "tracelens_h100_hf_qwen1.5_0.5b_forward.json.gz"
WORKERS0 = SHARED_DATA / "kineto" / "kineto_v100_resnet50_workers0.pt.trace.json.gz"
WEIGHTS = "quantize the weights"


def _finding(path: Path):  # type: ignore[no-untyped-def]
    if not path.exists():
        pytest.skip(SHARED_DATA_ABSENT)
    (f,) = [f for f in analyze([path]).findings if f.pattern == "memory-bandwidth-bound"]
    return f


def test_bf16_model_gets_no_autocast_advice() -> None:
    """Qwen's GEMMs are bf16 (its one FP32 bmm, the rotary embedding's 3.5 µs, is far under
    fp32_math_min_share); its FP32 near-ceiling ops are Qwen2RMSNorm's upcast chain."""
    f = _finding(QWEN)
    assert f.fix.endswith(variant_text("memory-bandwidth-bound-analytic",
                                       "sixteen_bit_upcast", "aten::mul"))
    assert "autocast does not remove" in f.fix and "`torch.autocast`" not in f.fix
    assert WEIGHTS not in f.fix  # no matmul among its near-ceiling ops
    assert "halving the bytes (a fused kernel)" in f.expected_effect  # no "16-bit instead"


def test_fp32_training_on_v100_keeps_the_mixed_precision_advice() -> None:
    """ResNet-50 FP32 training: its near-ceiling ops include `aten::mm` M=1000 N=2048 K=32
    (the fc layer's weight gradient, 51.5% of DRAM bandwidth), which is no decode GEMV: no
    weight quantization in a training step."""
    f = _finding(WORKERS0)
    assert f.fix == variant_text("memory-bandwidth-bound-analytic", "training_fp16",
                                 "aten::cudnn_batch_norm_backward")
    assert "GradScaler" in f.fix and WEIGHTS not in f.fix
    assert "halving the bytes (16-bit instead of FP32, a fused kernel)" in f.expected_effect


def test_decode_gemv_near_the_ceiling_gets_weight_quantization(tmp_path: Path) -> None:
    """aten::mm x[1, 4096] @ W[4096, 4096] bf16 on an H100, 10 calls of 12 µs: 33,570,816
    bytes per call (2 × (4,096 + 16,777,216 + 4,096)) → 2.80 TB/s = 83.5% of 3.35 TB/s,
    FLOP/byte ≈ 1: memory-bound, the only kernel time (100%)."""
    ev = []
    for i in range(10):
        t = 100.0 * i
        ev.append(_op("aten::mm", t, 20, [[1, 4096], [4096, 4096]], ["c10::BFloat16"] * 2))
        ev += _launch(t + 1, 1 + i, "gemv_bf16_kernel", t + 10, 12)
    a = analyze([_trace(tmp_path, ev)])
    (f,) = [f for f in a.findings if f.pattern == "memory-bandwidth-bound"]
    assert "= 83.5% of DRAM bandwidth" in f.observation
    assert f.fix == (variant_text("memory-bandwidth-bound-analytic", "sixteen_bit", "aten::mm")
                     + " " + variant_text("memory-bandwidth-bound-weights", "default"))
    assert WEIGHTS in f.fix and "FP8" in f.fix

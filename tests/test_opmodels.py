"""Operator models: FLOPs and bytes computed by hand (the arithmetic is in each test) for one
op of each family, from shapes recorded in ../shared/data traces (read through the Kineto
reader into op_args, so the reader's stored inputs are checked too). Where no shared trace
records the op (FP8 _scaled_mm, grouped GEMM, a convolution forward with its stride and
padding), the record is constructed and the test says so.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

import pytest

from conftest import SHARED_DATA
from crossview import opmodels
from crossview.opmodels.inputs import OpCost
from crossview.sources.registry import read_all
from crossview.store.store import Store

KINETO = SHARED_DATA / "kineto"
QWEN = KINETO / "tracelens_h100_hf_qwen1.5_0.5b_forward.json.gz"
B200 = KINETO / "tracelens_b200_vllm_eager_prefill_tp8.json.gz"
V100 = KINETO / "kineto_v100_resnet50_workers0.pt.trace.json.gz"
needs_data = pytest.mark.skipif(not QWEN.exists(), reason="../shared/data not present")


@cache
def _store(path: Path) -> Store:
    s = Store()
    read_all([path], s)
    return s


def recorded(path: Path, op: str, dims: str) -> OpCost:
    """The cost of the first `op` call whose stored Input Dims text equals `dims`."""
    rows = _store(path).sql(
        "SELECT a.input_dims, a.input_types, a.concrete_inputs FROM op_args a"
        " JOIN host_ops h ON h.op_id = a.op_id AND NOT a.on_gpu"
        " WHERE h.name = $n AND a.input_dims = $d LIMIT 1", {"n": op, "d": dims},
    ).fetchall()
    assert rows, f"{op} {dims} not recorded in {path.name}"
    c = opmodels.cost(op, *rows[0])
    assert c is not None
    return c


def constructed(op: str, dims: str, types: str, concrete: str) -> OpCost:
    c = opmodels.cost(op, dims, types, concrete)
    assert c is not None
    return c


@needs_data
def test_matmul_addmm_qwen() -> None:
    # aten::addmm(bias[1024], A[8944,1024], B[1024,1024]) BF16: M = 16·559 = 8944, K = N = 1024
    c = recorded(QWEN, "aten::addmm", "[[1024],[8944,1024],[1024,1024],[],[]]")
    assert c.flops == 2 * 8944 * 1024 * 1024 + 8944 * 1024 == 18_766_086_144
    # (M·K + K·N + M·N)·2 B + bias 1024·2 B = (9,158,656 + 1,048,576 + 9,158,656)·2 + 2,048
    assert c.bytes == 38_733_824
    assert (c.dtype.name, c.family) == ("bf16", "matmul")


@needs_data
def test_matmul_mm_and_linear_qwen() -> None:
    c = recorded(QWEN, "aten::mm", "[[8944,1024],[1024,2816]]")
    assert c.flops == 2 * 8944 * 2816 * 1024 == 51_581_550_592
    assert c.bytes == (8944 * 1024 + 1024 * 2816 + 8944 * 2816) * 2 == 74_457_088
    lin = recorded(QWEN, "aten::linear", "[[16,559,1024],[1024,1024],[1024]]")
    assert lin.flops == 18_766_086_144  # the same product as the addmm under it


@needs_data
def test_attention_flash_causal_qwen() -> None:
    # q = k = v = [B=16, H=16, S=559, D=64] BF16, is_causal True (Concrete Inputs[4])
    c = recorded(QWEN, "aten::_scaled_dot_product_flash_attention",
                 "[[16,16,559,64],[16,16,559,64],[16,16,559,64],[],[],[],[]]")
    # 2·B·H·Sq·Sk·(D + Dv) × 1/2 = 2·256·312,481·128 / 2 = 10,239,377,408
    assert c.flops == 2 * 16 * 16 * 559 * 559 * (64 + 64) * 0.5 == 10_239_377_408
    # (q + k + v + out)·2 B = 4 · 9,158,656 · 2
    assert c.bytes == 4 * 16 * 16 * 559 * 64 * 2 == 73_269_248
    assert "causal" in c.shape


@needs_data
def test_attention_backward_constructed() -> None:
    # no shared trace has a backward; the forward's shapes, causal: 2.5 × forward FLOPs
    c = constructed("aten::_scaled_dot_product_flash_attention_backward",
                    "[[16,16,559,64],[16,16,559,64],[16,16,559,64],[16,16,559,64],"
                    "[16,16,559,64],[16,16,559]]",
                    '["c10::BFloat16","c10::BFloat16","c10::BFloat16","c10::BFloat16",'
                    '"c10::BFloat16","float"]',
                    '["","","","","","","","","","","0.","True"]')
    assert c.flops == 2.5 * 10_239_377_408
    assert c.bytes == 8 * 9_158_656 * 2  # read q,k,v,out,dout + write dq,dk,dv (+ out once)


@needs_data
def test_conv_backward_v100_resnet() -> None:
    # cudnn_convolution_backward(input[32,512,7,7], grad_out[32,2048,7,7], w[2048,512,1,1])
    # FP32; the legacy trace records no output_mask: both grads (data + weight) counted
    c = recorded(V100, "aten::cudnn_convolution_backward",
                 "[[32,512,7,7],[32,2048,7,7],[2048,512,1,1],[],[],[],[],[],[],[],[]]")
    # 2 passes × 2·N·K·C·R·S·P·Q = 2 × 2·32·2048·512·1·1·7·7 = 2 × 3,288,334,336
    assert c.flops == 2 * 2 * 32 * 2048 * 512 * 49 == 6_576_668_672
    # 2 × (input 802,816 + weight 1,048,576 + grad_out 3,211,264) · 4 B
    assert c.bytes == 2 * (32 * 512 * 49 + 2048 * 512 + 32 * 2048 * 49) * 4 == 40_501_248
    assert c.dtype.ceiling_keys(c.ceiling_kind) == ("tf32_tensor", "fp32")


@needs_data
def test_conv_forward_needs_stride() -> None:
    # the V100 trace records the first conv's shapes ([32,3,224,224] ⊛ [64,3,7,7]) but not
    # its stride/padding (legacy GenericList): unmodeled, never guessed
    rows = _store(V100).sql(
        "SELECT a.input_dims, a.input_types, a.concrete_inputs FROM op_args a JOIN host_ops h"
        " ON h.op_id = a.op_id WHERE h.name = 'aten::cudnn_convolution' AND a.input_dims ="
        " '[[32,3,224,224],[64,3,7,7],[],[],[],[],[],[],[]]' LIMIT 1").fetchall()
    assert rows and opmodels.cost("aten::cudnn_convolution", *rows[0]) is None
    # constructed: the same shapes with ResNet-50 conv1's stride 2, padding 3 recorded as a
    # PyTorch ≥ 2.1 trace does (aten::convolution: bias, stride, padding, dilation, …)
    c = constructed("aten::convolution",
                    "[[32,3,224,224],[64,3,7,7],[],[],[],[],[],[],[]]",
                    '["float","float","","ScalarList","ScalarList","ScalarList","Scalar",'
                    '"ScalarList","Scalar"]',
                    '["","","","[2, 2]","[3, 3]","[1, 1]","False","[0, 0]","1"]')
    # out = (224 + 2·3 − 1·(7 − 1) − 1) // 2 + 1 = 112; 2·N·K·C·R·S·P·Q
    assert c.flops == 2 * 32 * 64 * 3 * 7 * 7 * 112 * 112 == 7_552_892_928
    assert c.bytes == (32 * 3 * 224 * 224 + 64 * 3 * 49 + 32 * 64 * 112 * 112) * 4


@needs_data
def test_norm_fused_add_rms_norm_b200() -> None:
    # vLLM _C::fused_add_rms_norm(x[888,2880], residual[888,2880], w[2880]) BF16, in place
    c = recorded(B200, "_C::fused_add_rms_norm", "[[888,2880],[888,2880],[2880],[]]")
    assert c.flops == 5 * 888 * 2880 == 12_787_200
    # read x, residual + write x, residual = 4·2,557,440 elements, + the weight 2,880; ·2 B
    assert c.bytes == (4 * 888 * 2880 + 2880) * 2 == 20_465_280


@needs_data
def test_softmax_v100() -> None:
    # aten::_log_softmax(x[32,1000]) FP32: 5 FLOP per element, read + write once
    c = recorded(V100, "aten::_log_softmax", "[[32,1000],[],[]]")
    assert (c.flops, c.bytes) == (5 * 32_000, 2 * 32_000 * 4)


@needs_data
def test_elementwise_and_reduction_qwen() -> None:
    # aten::silu(x[16,559,2816]) BF16: bytes only = read + write 25,186,304 elements · 2 B
    c = recorded(QWEN, "aten::silu", "[[16,559,2816]]")
    assert (c.flops, c.bytes) == (0, 2 * 16 * 559 * 2816 * 2) == (0, 100_745_216)
    # aten::mean(x[16,559,1024]) FP32: the input read once = 9,158,656 · 4 B
    r = recorded(QWEN, "aten::mean", "[[16,559,1024],[],[],[]]")
    assert (r.flops, r.bytes, r.family) == (0, 36_634_624, "reduction")


@needs_data
def test_embedding_qwen() -> None:
    # aten::embedding(weight[151936,1024] BF16, indices[16,559] int64): n = 8,944 rows
    c = recorded(QWEN, "aten::embedding", "[[151936,1024],[16,559],[],[],[]]")
    # rows read + result written: 2·8,944·1,024·2 B = 36,634,624; indices 8,944·8 B = 71,552
    assert c.bytes == 2 * 8944 * 1024 * 2 + 8944 * 8 == 36_706_176
    assert c.flops == 0


def test_scaled_mm_fp8_constructed() -> None:
    # no shared trace records aten::_scaled_mm: the B200 QKV projection's shapes in FP8
    # (A[888,2880], B[2880,640] e4m3, BF16 output: out_dtype code 15)
    c = constructed("aten::_scaled_mm", "[[888,2880],[2880,640],[],[],[],[],[],[]]",
                    '["c10::Float8_e4m3fn","c10::Float8_e4m3fn","float","float","","","Scalar",'
                    '"Scalar"]', '["","","","","","","15","False"]')
    assert c.flops == 2 * 888 * 640 * 2880 == 3_273_523_200
    assert c.bytes == 888 * 2880 * 1 + 2880 * 640 * 1 + 888 * 640 * 2 == 5_537_280
    assert c.dtype.ceiling_keys("matmul") == ("fp8_tensor",)


def test_grouped_mm_constructed() -> None:
    # constructed: 1,024 routed tokens over 8 experts, K = 2,880, N = 768, BF16
    c = constructed("aten::_grouped_mm", "[[1024,2880],[8,2880,768],[8]]",
                    '["c10::BFloat16","c10::BFloat16","int"]', '["","",""]')
    assert c.flops == 2 * 1024 * 768 * 2880 == 4_529_848_320
    assert c.bytes == (1024 * 2880 + 8 * 2880 * 768 + 1024 * 768) * 2 == 42_860_544


def test_hostile_records_are_unmodeled() -> None:
    assert opmodels.cost("aten::mm", "not json", "[]", "[]") is None
    assert opmodels.cost("aten::mm", "[[2,3],[4,5,6]]", '["float","float"]', "[]") is None
    assert opmodels.cost("aten::no_such_op", "[[2]]", '["float"]', "[]") is None


@needs_data
def test_elementwise_out_overload_a100_16rank() -> None:
    # aten::mul.out(self[4,2798,2798] FP32, other: a double scalar, out[4,2798,2798]): the
    # out tensor is written, not read: bytes = (31,315,204 read + 31,315,204 written) · 4 B
    # (+ the 0-dim double, 8 B)
    c = recorded(KINETO / "hta_a100_16rank_training_graphs.json.gz", "aten::mul",
                 "[[4,2798,2798],[],[4,2798,2798]]")
    assert c.bytes == 2 * 4 * 2798 * 2798 * 4 + 8 == 250_521_736

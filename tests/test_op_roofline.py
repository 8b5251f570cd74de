"""Per-op analytic roofline, collective/copy bandwidth and their findings on real traces.

Expected times come from the raw trace (gzip + json: the kernels launched inside each op
call, by correlation id), never from crossview; FLOPs per call are computed by hand.
"""

from __future__ import annotations

import gzip
import json
from functools import cache
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from conftest import SHARED_DATA
from crossview.analysis import Analysis, analyze
from crossview.detectors.kernel_inefficiency import attention_chains
from crossview.render import json as json_render
from crossview.render import markdown
from crossview.sol import op_ncu_agreement
from crossview.sol.op_roofline import OpGroup

KINETO = SHARED_DATA / "kineto"
QWEN = KINETO / "tracelens_h100_hf_qwen1.5_0.5b_forward.json.gz"
A100 = KINETO / "hta_a100_ddp_resnet_nccl.json.gz"
needs_data = pytest.mark.skipif(not QWEN.exists(), reason="../shared/data not present")
H100_BF16_PEAK = 989.5e12  # sol_ceilings.yaml h100-sxm tflops.bf16_tensor (dense)
H100_HBM = 3.35e12  # sol_ceilings.yaml h100-sxm hbm_tb_s


@cache
def _analysis(path: Path) -> Analysis:
    return analyze([path])


@cache
def _events(path: Path) -> list[dict[str, Any]]:
    with gzip.open(path, "rt") as f:
        return [e for e in json.load(f)["traceEvents"] if e.get("ph") == "X"]


def _kernel_us_under(path: Path, op: str, dims: list[list[int]]) -> tuple[int, float]:
    """(calls, Σ kernel µs) of the kernels launched inside `op` calls with these Input Dims:
    runtime calls inside the op's time span on its thread, kernels by correlation id (2021
    legacy categories Operator / Runtime / Kernel too)."""
    ev = _events(path)
    calls = [e for e in ev if e.get("cat") in ("cpu_op", "Operator") and e["name"] == op
             and e.get("args", {}).get("Input Dims") == dims]
    rt = [e for e in ev if e.get("cat") in ("cuda_runtime", "Runtime")]
    corr: set[int] = set()
    for c in calls:
        lo, hi = c["ts"], c["ts"] + c["dur"]
        corr |= {r["args"]["correlation"] for r in rt
                 if r["tid"] == c["tid"] and lo <= r["ts"] <= hi}
    us = sum(e["dur"] for e in ev if e.get("cat") in ("kernel", "Kernel")
             and e.get("args", {}).get("correlation") in corr)
    return len(calls), us


@needs_data
def test_qwen_recap_top_gemms_against_h100_bf16_roofline() -> None:
    a = _analysis(QWEN)
    text = markdown.render(a)
    assert "**Per-op roofline (analytic, from recorded shapes; rigor L2)**" in text
    assert "NVIDIA H100 SXM5 80GB" in text
    g = next(x for x in a.views.op_roofline.groups  # type: ignore[union-attr]
             if x.op == "aten::mm" and x.shape == "M=8944 N=2816 K=1024")
    calls, us = _kernel_us_under(QWEN, "aten::mm", [[8944, 1024], [1024, 2816]])
    assert g.calls == calls == 48
    assert g.time_ns == pytest.approx(us * 1e3, abs=calls)  # µs → ns, rounding per kernel
    flops = 2 * 8944 * 2816 * 1024  # per call, by hand
    assert g.flops == flops
    achieved = calls * flops / (us * 1e-6)
    assert g.flops_per_s == pytest.approx(achieved, rel=1e-6)
    # intensity 51.58 GFLOP / 74.46 MB = 692.8 FLOP/B ≥ ridge 989.5e12 / 3.35e12 = 295.4
    assert g.intensity == pytest.approx(flops / 74_457_088)
    assert g.bound == "compute" and g.ceiling == "bf16_tensor"
    assert g.pct_of_roofline == pytest.approx(100 * achieved / H100_BF16_PEAK, rel=1e-6)
    assert 55 < g.pct_of_roofline < 70  # 617 TFLOP/s of 989.5: ~62%
    row = next(ln for ln in text.splitlines() if ln.startswith("| `aten::mm` | M=8944 N=2816"))
    assert "TFLOP/s" in row and "% (bf16_tensor)" in row and "| compute |" in row
    gemm_rows = [ln for ln in text.splitlines()
                 if ln.startswith(("| `aten::mm`", "| `aten::addmm`"))]
    assert len(gemm_rows) >= 3
    # the attention op: intensity 139.75 FLOP/B < ridge → memory-bound by the model
    att = next(x for x in a.views.op_roofline.groups  # type: ignore[union-attr]
               if x.op == "aten::_scaled_dot_product_flash_attention")
    assert att.bound == "memory"
    assert att.intensity == pytest.approx(10_239_377_408 / 73_269_248)
    assert att.pct_of_roofline == pytest.approx(
        100 * att.flops_per_s / (att.intensity * H100_HBM), rel=1e-9)
    doc = json_render.as_dict(a)
    assert doc["ops"]["groups"][0]["op"] and doc["ops"]["shapes_recorded"] is True


@needs_data
def test_a100_allreduce_bucket_bus_bandwidth() -> None:
    a = _analysis(A100)
    buckets = [c for c in a.views.comm_bandwidth.collectives  # type: ignore[union-attr]
               if c.op == "allreduce"]
    assert len(buckets) == 5
    # by hand, from the raw trace: the bucket of 2,049,000 FP32 elements on 2 ranks
    ks = [e for e in _events(A100) if e.get("cat") == "kernel"
          and e.get("args", {}).get("In msg nelems") == 2049000]
    size = 2049000 * 4  # 8,196,000 B
    t = sum(e["dur"] for e in ks) * 1e-6  # s
    algbw = size * len(ks) / t
    busbw = algbw * 2 * (2 - 1) / 2  # NCCL all-reduce factor 2(n−1)/n, n = 2
    b = next(c for c in buckets if c.message_bytes == size)
    assert (b.count, b.ranks, b.dtype, b.group) == (len(ks), 2, "Float", "pg 0")
    assert b.algbw_bytes_per_s == pytest.approx(algbw, rel=1e-4)
    assert b.busbw_bytes_per_s == pytest.approx(busbw, rel=1e-4)
    # A100 SXM4 NVLink 600 GB/s bidirectional → 300 GB/s per direction
    assert b.ceiling_bytes_per_s == 300e9
    text = markdown.render(a)
    assert "**Collectives — bandwidth**" in text and "| allreduce | pg 0 | 2 | Float | 8.2 MB" \
        in text


@needs_data
def test_trace_without_shapes_says_so_once() -> None:
    a = _analysis(A100)
    text = markdown.render(a)
    assert text.count("record_shapes=True") == 1
    assert a.views.op_roofline.groups == []  # type: ignore[union-attr]


def _group(op: str, shape: str, family: str, flops: float, kernels: list[str], calls: int = 4,
           share: float = 0.1) -> OpGroup:
    return OpGroup(op=op, shape=shape, dtype="bf16", model=op, family=family, hw_key="h100-sxm",
                   calls=calls, kernels=calls, time_ns=1000, share=share, flops=flops,
                   bytes=1.0, flops_per_s=None, bytes_per_s=1.0, intensity=None, ceiling=None,
                   peak_flops_per_s=None, peak_bytes_per_s=None, attainable_flops_per_s=None,
                   bound="memory", pct_of_roofline=None, tensor_cores=True,
                   top_kernel=kernels[0], kernel_names=kernels)


def test_ncu_agreement_constructed_pair() -> None:
    # no shared capture has both a trace and ncu counters of the same kernel: a constructed
    # pair — the Qwen aten::mm group (51.58 GFLOP per call, one kernel per call) and ncu rows
    # for its kernel whose FLOP count is 1.0× and 2.0× the analytic one
    k = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x256x64_warpgroupsize2x1x1"
    g = _group("aten::mm", "M=8944 N=2816 K=1024", "matmul", 51_581_550_592, [k])
    dur = 80_000.0  # ns
    agree = SimpleNamespace(name=k, achieved_flops_per_s=51_581_550_592 / (dur * 1e-9),
                            duration_ns=dur)
    off = SimpleNamespace(name=k, achieved_flops_per_s=2 * 51_581_550_592 / (dur * 1e-9),
                          duration_ns=dur)
    rows = op_ncu_agreement.compare([g], [agree, off])  # type: ignore[list-item]
    assert [r["ratio"] for r in rows] == pytest.approx([1.0, 0.5])
    assert [r["agree"] for r in rows] == [True, False]


def test_unfused_attention_chain_constructed() -> None:
    # constructed eager attention with the Qwen shapes (B·H = 256, S = 559, D = 64):
    # scores = bmm(Q[256,559,64], Kᵀ[256,64,559]); softmax([16,16,559,559]); bmm(P, V)
    qk = _group("aten::bmm", "M=559 N=559 K=64 batch=256", "matmul", 1.0, ["k1"])
    pv = _group("aten::bmm", "M=559 N=64 K=559 batch=256", "matmul", 1.0, ["k2"])
    sm = _group("aten::_softmax", "[16, 16, 559, 559]", "softmax", 1.0, ["k3"])
    other = _group("aten::mm", "M=8944 N=1024 K=1024", "matmul", 1.0, ["k4"])
    chains = attention_chains([qk, pv, sm, other])
    assert len(chains) == 1 and chains[0][0] is sm and set(map(id, chains[0][1])) == {
        id(qk), id(pv)}


@needs_data
def test_html_panel_and_mcp_tools() -> None:
    from crossview.mcp.cache import AnalysisCache
    from crossview.mcp.safety import Refused, Roots
    from crossview.mcp.tools_ops import OpTools
    from crossview.render.html import render

    page = render(_analysis(QWEN))
    assert 'id="op-roofline-draw"' in page and "Per-op roofline (analytic)" in page
    tools = OpTools(AnalysisCache(Roots([KINETO.resolve()])))
    d = json.loads(tools.op_roofline([str(QWEN.resolve())], None, 2))
    assert len(d["groups"]) == 2 and d["groups"][0]["time_ns"] >= d["groups"][1]["time_ns"]
    t = json.loads(tools.transfers([str(A100.resolve())], None))
    assert {c["message_bytes"] for c in t["collectives"] if c["op"] == "allreduce"} >= {8196000}
    with pytest.raises(Refused):
        OpTools(AnalysisCache(Roots([KINETO.resolve()]))).op_roofline(
            [str(KINETO.resolve() / "missing.json")], None, 2)


@needs_data
def test_b200_multimem_allreduce_sizes_from_launching_op() -> None:
    b200 = KINETO / "tracelens_b200_vllm_eager_prefill_tp8.json.gz"
    a = _analysis(b200)
    # the multimem all-reduce kernels carry no sizes; the launching symm_mem op records its
    # buffer: 2,557,440 BF16 elements = 5,114,880 B, TP 8 (the trace's world size)
    calls, us = _kernel_us_under(b200, "symm_mem::multimem_all_reduce_", [[2557440], [], []])
    c = next(x for x in a.views.comm_bandwidth.collectives  # type: ignore[union-attr]
             if x.message_bytes == 2557440 * 2)
    assert (c.op, c.ranks, c.count) == ("allreduce", 8, calls)
    algbw = 2557440 * 2 * calls / (us * 1e-6)
    assert c.busbw_bytes_per_s == pytest.approx(algbw * 2 * 7 / 8, rel=1e-4)
    assert "assumed" in c.sizes_from


@needs_data
def test_qwen_memory_bound_ops_near_dram_ceiling() -> None:
    a = _analysis(QWEN)
    f = next(x for x in a.findings if x.pattern == "memory-bandwidth-bound")
    assert f.details["basis"] == "analytic"
    # aten::pow(x[16,559,1024], 2) FP32: read + write 9,158,656 elements · 4 B per call
    calls, us = _kernel_us_under(QWEN, "aten::pow", [[16, 559, 1024], []])
    g = next(x for x in a.views.op_roofline.groups  # type: ignore[union-attr]
             if x.op == "aten::pow")
    assert g.calls == calls and g.bytes == 2 * 16 * 559 * 1024 * 4 == 73_269_248
    bw = calls * 73_269_248 / (us * 1e-6)
    assert g.pct_of_roofline == pytest.approx(100 * bw / H100_HBM, rel=1e-4)
    assert g.pct_of_roofline >= 50  # near the ceiling: the finding names it
    assert "`aten::pow`" in f.observation or len(f.details["ops"]) > 4  # type: ignore[arg-type]


@needs_data
def test_v100_legacy_conv_forward_output_from_its_backward() -> None:
    # the 2021 trace records no stride/padding; the backward of the same input/weight shapes
    # records grad_out [32,64,112,112]: conv1 is costed with that output (as the stride-2,
    # padding-3 formula gives: (224 + 6 − 6 − 1) // 2 + 1 = 112)
    v100 = KINETO / "kineto_v100_resnet50_workers0.pt.trace.json.gz"
    r = _analysis(v100).views.op_roofline  # type: ignore[union-attr]
    g = next(x for x in r.groups if x.op == "aten::cudnn_convolution"
             and x.shape.startswith("in=[32, 3, 224, 224]"))
    assert "out=[32, 64, 112, 112] (output size from the backward op)" in g.shape
    assert g.flops == 2 * 32 * 64 * 3 * 7 * 7 * 112 * 112 == 7_552_892_928
    calls, us = _kernel_us_under(v100, "aten::cudnn_convolution",
                                 [[32, 3, 224, 224], [64, 3, 7, 7], [], [], [], [], [], [], []])
    assert g.calls == calls and g.time_ns == pytest.approx(us * 1e3, abs=calls)
    assert r.modeled_ns / r.kernel_ns > 0.95  # conv forward no longer unmodeled


@needs_data
@pytest.mark.skipif(not Path("/usr/bin/chromium").exists(), reason="/usr/bin/chromium absent")
def test_op_roofline_chart_draws_in_chromium(tmp_path: Path) -> None:
    import shutil
    import tempfile

    from crossview.render.html import render

    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright not installed")
    page_file = tmp_path / "r.html"
    page_file.write_text(render(_analysis(QWEN)), encoding="utf-8")
    points = [g for g in _analysis(QWEN).views.op_roofline.groups  # type: ignore[union-attr]
              if g.intensity and g.flops_per_s]
    errors: list[str] = []
    profile = tempfile.mkdtemp(prefix="cv-chromium-")
    try:
        with sync_api.sync_playwright() as p:
            ctx = p.chromium.launch_persistent_context(
                profile, executable_path="/usr/bin/chromium", headless=True,
                args=["--headless", "--no-sandbox", "--disable-gpu"])
            page = ctx.new_page()
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.goto(page_file.as_uri())
            assert page.locator("#op-roofline-draw svg circle").count() == len(points) > 0
            ctx.close()
    finally:
        shutil.rmtree(profile, ignore_errors=True)
    assert not errors, errors


@needs_data
def test_memory_bound_fix_fits_a_training_capture() -> None:
    # workers0 is ResNet-50 training: its near-ceiling memory-bound ops include
    # aten::cudnn_batch_norm_backward (read off the recap by hand), so the fix names training
    # levers (mixed precision for activations + gradients, channels_last for a conv net) and
    # not decode-GEMM weight quantization, which only fits inference
    v100 = KINETO / "kineto_v100_resnet50_workers0.pt.trace.json.gz"
    f = next(x for x in _analysis(v100).findings if x.pattern == "memory-bandwidth-bound")
    assert "_backward" in f.observation
    assert "channels_last" in f.fix and "GradScaler" in f.fix
    assert "decode" not in f.fix and "INT4" not in f.fix
    # a V100 has no BF16 tensor cores (sol_ceilings.yaml: fp16_tensor 125 TFLOP/s,
    # bf16_tensor null; NVIDIA V100 datasheet): the fix autocasts to FP16 with a GradScaler,
    # it must not tell the user to autocast to bfloat16
    assert _analysis(v100).views.op_roofline.no_bf16 == [  # type: ignore[union-attr]
        "NVIDIA Tesla V100 SXM2 32GB"]
    assert "torch.float16" in f.fix and "bfloat16" not in f.fix


@needs_data
def test_memory_bound_fix_on_a_bf16_gpu_names_bf16() -> None:
    # the H100 Qwen forward (inference, BF16-capable GPU, bf16 matmuls): no FP16-only
    # wording, no training text; its FP32 ops are upcasts (test_memory_bound_fix_fit.py)
    qwen = _analysis(QWEN)
    assert qwen.views.op_roofline.no_bf16 == []  # type: ignore[union-attr]
    f = next(x for x in qwen.findings if x.pattern == "memory-bandwidth-bound")
    assert "no BF16" not in f.fix and "GradScaler" not in f.fix
    assert "the matmuls already run in 16 bits" in f.fix


@needs_data
def test_fp32_convolutions_on_a_v100_are_a_tensor_core_lever() -> None:
    # workers0: ResNet-50 training in FP32 on a V100 (every op group's recorded dtype is
    # float; kernels are cudnn *_engine<float…>, implicit_convolve_sgemm, volta_sgemm — no
    # h884/tensor-core names). Recomputed here from the op groups: the compute-bound FP32
    # conv/matmul groups' time over all kernel time, and their 16-bit floor at the V100's
    # FP16 tensor ceiling (125 TFLOP/s, sol_ceilings.yaml) or half their bytes at DRAM speed.
    from crossview.knowledge import hardware

    v100 = _analysis(KINETO / "kineto_v100_resnet50_workers0.pt.trace.json.gz")
    r = v100.views.op_roofline  # type: ignore[union-attr]
    hits = [g for g in r.groups if g.dtype == "fp32" and g.bound == "compute"
            and g.family in ("matmul", "conv", "attention") and g.ceiling == "fp32"]
    spec = hardware.by_key(hits[0].hw_key or "")
    assert spec is not None and spec.peak_flops("fp16_tensor") == 125e12
    share = sum(g.time_ns for g in hits) / r.kernel_ns
    assert 0.6 < share < 0.75  # 67.1% when written
    floor = sum(g.calls * max(g.flops / 125e12, g.bytes / 2 / (spec.dram_bytes_per_s or 1))
                for g in hits) * 1e9
    f = next(x for x in v100.findings if x.pattern == "tensor-cores-unused")
    # a 🟡 here: the convolutions lie off the step's critical path (decision 0773)
    assert f.severity == "yellow" and f.details["basis"] == "analytic"
    assert f.details["kernel_ns"] == sum(g.time_ns for g in hits)
    assert abs(f.details["floor_ns"] - floor) < 1e-3 * floor
    assert f"{100 * share:.1f}% of kernel time" in f.title
    assert "GradScaler" in f.fix and "torch.float16" in f.fix and "bfloat16" not in f.fix
    # the effect an A/B checks: at most kernel time - floor goes; the GPU is busy 67.6% of its
    # span (under kernel_bound_busy_pct 80), so the step shortens only once idle time is gone
    from crossview.units import duration

    gone = duration(sum(g.time_ns for g in hits) - f.details["floor_ns"])
    assert f"so at most {gone} of kernel time goes" in f.expected_effect
    assert v100.views.metrics.kernel_busy_pct < 80  # type: ignore[union-attr]
    assert "the step shortens only once the GPU's idle time is gone" in f.expected_effect
    # the H100 Qwen forward runs BF16 ops: not flagged
    assert not [x for x in _analysis(QWEN).findings if x.pattern == "tensor-cores-unused"]


@needs_data
def test_fp32_gemms_named_without_shapes() -> None:
    # hta_v100_ddp_training records no input shapes; its GEMMs are cuBLAS volta_sgemm_*
    # (FP32 CUDA cores) on a V100. Recomputed from the raw trace: kernel events whose name
    # holds "sgemm" or "_engine<float", over all kernel time.
    import gzip
    import json

    path = KINETO / "hta_v100_ddp_training.json.gz"
    with gzip.open(path) as fh:
        ev = json.loads(fh.read())["traceEvents"]
    kern = [e for e in ev if e.get("cat") == "kernel" and e.get("ph") == "X"]
    total = sum(e["dur"] for e in kern)
    fp32 = sum(e["dur"] for e in kern if "sgemm" in e["name"] or "_engine<float" in e["name"])
    f = next(x for x in _analysis(path).findings if x.pattern == "tensor-cores-unused")
    assert f.details["basis"] == "kernel names"
    assert abs(f.details["kernel_ns"] / 1e3 - fp32) < 1.0  # µs in the trace, ns in the store
    assert f"{100 * fp32 / total:.1f}% of kernel time" in f.title  # 41.0% when written
    assert "volta_sgemm_128x32_nt" in f.observation and "record_shapes=True" in f.observation
    assert "GradScaler" in f.fix and "bfloat16" not in f.fix  # a V100: FP16, not BF16


@needs_data
def test_slow_fused_attention_gets_kernel_choice_advice() -> None:
    # the H100 Qwen forward's slowest op is aten::_scaled_dot_product_flash_attention in bf16
    # (a fused tensor-core kernel, 19.3% of its roofline when written): "run matmuls in
    # BF16 / allow TF32 / pad GEMM dims" does not fit it; the SDPA backend choice does
    f = next(x for x in _analysis(QWEN).findings if x.pattern == "kernel-inefficiency")
    assert f.details["ops"][0]["family"] == "attention" and f.details["ops"][0]["dtype"] == "bf16"
    assert "SDPBackend" in f.fix and "allow_tf32" not in f.fix

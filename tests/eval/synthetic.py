"""SYNTHETIC captures for the evaluation set: the cases ../shared/data lacks (issue 37).

Each builder writes one capture from the documented format (docs/formats.md; Kineto trace
JSON, the Nsight Systems SQLite export, the ncu raw-page CSV) with made-up but physically
consistent numbers, stated here. None is a real recording: the eval set marks them
`synthetic: true`. Deterministic (no randomness), small (kilobytes), rebuilt per run.

- vit_encoder: a Hugging Face ViT-style encoder forward on an H100, eager attention
  (bmm → softmax → bmm over 197×197 scores, 12 heads, batch 32), nn.Module names
  `ViTSelfAttention` / `ViTLayer`, no causal mask anywhere.
- compile_window: a capture whose window holds torch.compile compiling the model (the
  dynamo_timed annotations torch 2.13 records: `_compile.compile_inner (dynamo_timed)`,
  `async_compile.wait (dynamo_timed)`, …, 672 ms) and the first compiled call's few kernels:
  GPU busy well under 1%.
- preprocess_step: one steady ProfilerStep of an image model whose first 223 ms is CPU
  preprocessing (`image_transforms.py normalize` 105 ms, numpy `astype` 30 ms,
  `read_video_pyav` 24 ms, …) before its kernels: the workload, not start-up.
- one_off_stall: one SGLang step beginning with a 493 ms blocking copy
  (`hipMemcpyWithStream` under `torch.tensor`, GPU idle), library frames only
  (`sglang/…`, `aiter/ops/mha.py`): one occurrence in a one-step capture.
- single_thread_kernel: an Nsight Systems export (a copy of the real nvFuser 2024.6 export,
  edited) whose kernels are replaced by one `<<<1,1>>>` kernel of 6.3 s on an A100.
- cudajl_ncu: an ncu raw page of a CUDA.jl (Julia) kernel, memory-bound on an A100.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

H100 = {"id": 0, "name": "NVIDIA H100 80GB HBM3", "totalGlobalMem": 85018279936,
        "numSms": 132, "computeMajor": 9, "computeMinor": 0}
A100 = {"id": 0, "name": "NVIDIA A100-SXM4-80GB", "totalGlobalMem": 85899345920,
        "numSms": 108, "computeMajor": 8, "computeMinor": 0}
MI300X = {"id": 0, "name": "AMD Instinct MI300X", "totalGlobalMem": 205822885888,
          "numSms": 304, "computeMajor": 9, "computeMinor": 4}


class Trace:
    """A Kineto trace under construction: host ops on one thread, kernels on one stream."""

    def __init__(self) -> None:
        self.ev: list[dict[str, Any]] = []
        self.corr = 0

    def x(self, cat: str, name: str, ts: float, dur: float, **args: Any) -> None:
        e: dict[str, Any] = {"ph": "X", "cat": cat, "name": name, "pid": 1, "tid": 1,
                             "ts": ts, "dur": dur}
        if args:
            e["args"] = args
        self.ev.append(e)

    def op(self, name: str, ts: float, dur: float, dims: list[Any] | None = None,
           types: list[str] | None = None) -> None:
        if dims is None:
            self.x("cpu_op", name, ts, dur)
        else:
            self.x("cpu_op", name, ts, dur, **{"Input Dims": dims, "Input type": types,
                                               "Concrete Inputs": [""] * len(dims)})

    def launch(self, ts: float, kname: str, kts: float, kdur: float,
               grid: list[int] | None = None, block: list[int] | None = None) -> None:
        self.corr += 1
        self.x("cuda_runtime", "cudaLaunchKernel", ts, 4, correlation=self.corr)
        args: dict[str, Any] = {"device": 0, "stream": 7, "correlation": self.corr}
        if grid:
            args["grid"] = grid
        if block:
            args["block"] = block
        self.ev.append({"ph": "X", "cat": "kernel", "name": kname, "pid": 0, "tid": 7,
                        "ts": kts, "dur": kdur, "args": args})

    def write(self, path: Path, device: dict[str, Any]) -> Path:
        path.write_text(json.dumps({"deviceProperties": [device], "traceEvents": self.ev}))
        return path


BF16 = "c10::BFloat16"


def vit_encoder(out: Path) -> Path:
    """A ViT-L/14 encoder at 336 px (577 tokens), 24 layers, one step, GPU-bound (the host
    launches 10 µs per op, well ahead of the kernels, which run back to back). Per layer (µs):
    the QKV and output GEMMs 4 × 18 (9.7 GFLOP each, ~540 TFLOP/s), the MLP GEMMs 2 × 65,
    eager attention Q·Kᵀ bmm 45, softmax 70, P·V bmm 45 (the 85 MB score matrix written and
    read back), layer norms and adds 4 × 12 as one-op kernels. Batch 8, 16 heads, head dim
    64, hidden 1024."""
    t = Trace()
    b, h, s, d, hid = 8, 16, 577, 64, 1024
    host, gpu = 10.0, 50.0  # the host's clock and the GPU stream's

    def run(name: str, dims: list[Any], types: list[str], kname: str, dur: float,
            grid: list[int]) -> None:
        nonlocal host, gpu
        t.op(name, host, 9, dims, types)
        start = max(gpu, host + 6)
        t.launch(host + 1, kname, start, dur, grid, [128, 1, 1])
        host += 10
        gpu = start + dur + 1

    gemm = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64"
    add = ("void at::native::vectorized_elementwise_kernel<4, "
           "at::native::CUDAFunctor_add<c10::BFloat16>>")
    softmax = ("void softmax_warp_forward<c10::BFloat16, c10::BFloat16, float, 8, false, "
               "false>(c10::BFloat16*, c10::BFloat16 const*, int, int, int)")
    layer_spans = []
    mm = [BF16, BF16, BF16, "Scalar", "Scalar"]
    for layer in range(24):
        h0 = host
        for _ in range(3):
            run("aten::addmm", [[hid], [b * s, hid], [hid, hid], [], []], mm, gemm, 18,
                [37, 8, 1])
        run("aten::bmm", [[b * h, s, d], [b * h, d, s]], [BF16, BF16],
            "sm90_xmma_gemm_bf16bf16_bf16f32_f32_nt_n_batched", 45, [5, 5, 128])
        run("aten::_softmax", [[b, h, s, s], [], []], [BF16, "Scalar", "Scalar"], softmax,
            70, [9232, 1, 1])
        run("aten::bmm", [[b * h, s, s], [b * h, s, d]], [BF16, BF16],
            "sm90_xmma_gemm_bf16bf16_bf16f32_f32_nn_n_batched", 45, [1, 5, 128])
        a_end = host
        run("aten::addmm", [[hid], [b * s, hid], [hid, hid], [], []], mm, gemm, 18, [37, 8, 1])
        run("aten::addmm", [[4 * hid], [b * s, hid], [hid, 4 * hid], [], []], mm, gemm, 65,
            [37, 32, 1])
        run("aten::addmm", [[hid], [b * s, 4 * hid], [4 * hid, hid], [], []], mm, gemm, 65,
            [37, 8, 1])
        for name in ("aten::layer_norm", "aten::add", "aten::layer_norm", "aten::add"):
            run(name, [[b, s, hid], [b, s, hid]], [BF16, BF16], add, 12, [4616, 1, 1])
        layer_spans.append((layer, h0, a_end, host))
    t.x("user_annotation", "ProfilerStep#3", 0, gpu + 20)
    t.x("python_function", "vit_infer.py(21): <module>", 1, host)
    t.x("python_function", "nn.Module: ViTModel_0", 2, host - 3)
    for layer, h0, a_end, h1 in layer_spans:
        t.x("python_function", f"nn.Module: ViTLayer_{layer}", h0 - 0.5, h1 - h0)
        t.x("python_function", f"nn.Module: ViTSelfAttention_{layer}", h0 - 0.4, a_end - h0)
    t.x("cuda_runtime", "cudaDeviceSynchronize", host + 1, gpu - host + 5)
    return t.write(out / "vit_encoder.pt.trace.json", H100)


def compile_window(out: Path) -> Path:
    """torch.compile compiling a ResNet-18 inside the profiler's window (annotation names as
    torch 2.13 records them), then the first compiled call: 24 Triton kernels of 20 µs."""
    t = Trace()
    t.x("user_annotation", "resnet18 compile", 0, 672_000)
    nest = [("dynamo", 0, 671_900), ("entire_frame_compile", 10, 671_800),
            ("_compile.compile_inner (dynamo_timed)", 20, 671_700),
            ("OutputGraph.call_user_compiler (dynamo_timed)", 30_000, 640_000),
            ("create_aot_dispatcher_function (dynamo_timed)", 31_000, 630_000),
            ("compile_fx_inner (dynamo_timed)", 60_000, 600_000),
            ("fx_codegen_and_compile (dynamo_timed)", 61_000, 598_000),
            ("GraphLowering.compile_to_module (dynamo_timed)", 120_000, 500_000),
            ("async_compile.wait (dynamo_timed)", 200_000, 410_000)]
    for name, ts, dur in nest:
        t.x("user_annotation", name, ts, dur)
    now = 672_100.0
    t.x("user_annotation", "Torch-Compiled Region: 0/0", now, 24 * 30 + 50)
    for i in range(24):
        t.launch(now + 10 + i * 30, f"triton_poi_fused_convolution_relu_{i}",
                 now + 14 + i * 30, 20)
    return t.write(out / "compile_window.pt.trace.json", H100)


def preprocess_step(out: Path) -> Path:
    """One steady ProfilerStep of a video/image model: 223 ms of CPU preprocessing on the
    launching thread (normalize 105 ms, astype 30 ms, read_video_pyav 24 ms, resize 40 ms,
    to_tensor 24 ms), then 60 ms of kernels (300 × 200 µs, back to back)."""
    t = Trace()
    t.x("user_annotation", "ProfilerStep#6", 0, 290_000)
    t.x("python_function", "run_video.py(42): <module>", 1, 289_000)
    t.x("python_function", "transformers/models/videomae/image_processing_videomae.py(301): "
        "preprocess", 50, 223_100)
    pre = [("transformers/image_transforms.py(383): normalize", 105_000),
           ("numpy/core/_methods.py(50): astype", 30_000),
           ("transformers/models/videomae/processing.py(88): read_video_pyav", 24_000),
           ("transformers/image_transforms.py(310): resize", 40_000),
           ("transformers/image_transforms.py(150): to_channel_dimension_format", 24_000)]
    now = 100.0
    for name, dur in pre:
        t.x("python_function", name, now, dur)
        now += dur
    now += 500
    for _ in range(300):
        t.op("aten::addmm", now, 10)
        t.launch(now + 1, "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n", now + 5, 200)
        now += 200
    return t.write(out / "preprocess_step.pt.trace.json", H100)


def one_off_stall(out: Path) -> Path:
    """One SGLang step on an MI300X: a 493 ms blocking host-to-device copy
    (`hipMemcpyWithStream` under `aten::to` in `torch.tensor`, GPU idle) at the step's start,
    then 40 ms of kernels from library frames only."""
    t = Trace()
    step = "sglang/srt/model_executor/model_runner.py(1520): forward"
    t.x("python_function", step, 0, 540_000)
    t.x("python_function", "aiter/ops/mha.py(212): mha_batch_prefill", 10, 494_000)
    t.x("python_function", "<built-in method tensor of type object at 0x7f>", 20, 493_500)
    t.op("aten::to", 30, 493_400)
    t.x("cuda_runtime", "hipMemcpyWithStream", 40, 493_300, correlation=1)
    t.ev.append({"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD (Host -> Device)",
                 "pid": 0, "tid": 7, "ts": 493_300, "dur": 20,
                 "args": {"device": 0, "stream": 7, "correlation": 1, "bytes": 4096}})
    t.corr = 1
    now = 494_000.0
    for _ in range(200):
        t.x("python_function", "aiter/ops/mha.py(230): fmha_fwd", now, 30)
        t.launch(now + 2, "fmha_fwd_bf16_kernel", now + 6, 190)
        now += 200
    return t.write(out / "one_off_stall.pt.trace.json", MI300X)


def single_thread_kernel(out: Path, nsys_base: Path) -> Path | None:
    """The real nvFuser 2024.6 export with its kernels replaced by one `<<<1,1>>>` kernel of
    6.3 s (grid 1×1×1, block 1×1×1) on an A100-SXM4-80GB (108 SMs); its launch call kept
    (the first one's correlation)."""
    if not nsys_base.is_file():
        return None
    p = out / "single_thread_kernel.sqlite"
    shutil.copyfile(nsys_base, p)
    p.chmod(stat.S_IRUSR | stat.S_IWUSR)
    con = sqlite3.connect(p)
    first = con.execute("SELECT rowid, start, correlationId FROM CUPTI_ACTIVITY_KIND_KERNEL"
                        " ORDER BY start LIMIT 1").fetchone()
    con.execute("DELETE FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE rowid <> ?", (first[0],))
    sid = con.execute("SELECT max(id) + 1 FROM StringIds").fetchone()[0]
    con.execute("INSERT INTO StringIds VALUES (?, ?)", (sid, "saxpy_serial(float*, float "
                                                       "const*, float, int)"))
    con.execute("UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET gridX = 1, gridY = 1, gridZ = 1,"
                " blockX = 1, blockY = 1, blockZ = 1, end = start + 6300000000,"
                " demangledName = ?, shortName = ?, mangledName = ?", (sid, sid, sid))
    for table, col in (("TARGET_INFO_GPU", "name"), ("TARGET_INFO_CUDA_DEVICE", "name")):
        cols = [r[1] for r in con.execute(f"PRAGMA table_info({table})").fetchall()]
        if col in cols:
            con.execute(f"UPDATE {table} SET {col} = 'NVIDIA A100-SXM4-80GB'")
        for c, val in (("smCount", 108), ("computeMajor", 8), ("computeMinor", 0),
                       ("totalMemory", 85899345920)):
            if c in cols:
                con.execute(f"UPDATE {table} SET {c} = ?", (val,))
    con.commit()
    con.close()
    return p


_IDS = ('"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream",'
        '"Block Size","Grid Size","Device","CC","device__attribute_display_name",'
        '"gpu__time_duration.sum","dram__bytes_read.sum","dram__bytes_write.sum",'
        '"sm__throughput.avg.pct_of_peak_sustained_elapsed",'
        '"gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed",'
        '"dram__throughput.avg.pct_of_peak_sustained_elapsed",'
        '"launch__waves_per_multiprocessor","sm__warps_active.avg.pct_of_peak_sustained_active",'
        '"sm__maximum_warps_per_active_cycle_pct"')


def cudajl_ncu(out: Path) -> Path:
    """A CUDA.jl broadcast kernel (Julia names its kernels julia_<name>_<n>) profiled by ncu on
    an A100: 1.2 ms moving 2.2 GB (≈ 1.83 TB/s, 90% of 2.039 TB/s): memory-bound."""
    text = "\n".join([
        _IDS,
        '"","","","","","","","","","","","","msecond","Gbyte","Gbyte","%","%","%","","%","%"',
        '"0","5151","julia","node1","julia_broadcast_kernel_4512(CuKernelContext, '
        'CuDeviceArray<Float32, 2, 1>, Broadcasted<…>, Int64)","1","7","(256, 1, 1)",'
        '"(8640, 1, 1)","0","8.0","NVIDIA A100-SXM4-80GB","1.2","1.5","0.7","18","90","90",'
        '"10","88","90"',
    ]) + "\n"
    p = out / "cudajl_broadcast_raw.csv"
    p.write_text(text)
    return p


BUILDERS: dict[str, Callable[[Path], Path | None]] = {
    "vit_encoder": vit_encoder,
    "compile_window": compile_window,
    "preprocess_step": preprocess_step,
    "one_off_stall": one_off_stall,
    "cudajl_ncu": cudajl_ncu,
}


def build(name: str, out: Path, shared: Path) -> Path | None:
    """The synthetic capture `name` under `out` (None: its real base export is absent)."""
    out.mkdir(parents=True, exist_ok=True)
    if name == "single_thread_kernel":
        return single_thread_kernel(out, shared / "nsys" / "nvfuser_h200_nsys2024.6.sqlite")
    return BUILDERS[name](out)

"""Runs of one-op kernels (views/device/fusion_runs.py) on synthetic traces (edge cases no
shared capture isolates; the real H100 Qwen numbers are in test_unfused_elementwise.py): what
ends a run (a GEMM, a copy), streams kept apart, a kernel alone saving nothing."""

from __future__ import annotations

from pathlib import Path

from crossview.analysis import analyze
from test_kineto_synthetic import X, kernel, runtime, write_trace

EW = "void at::native::vectorized_elementwise_kernel<4, at::native::AddFunctor<float>>"
RED = "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float>>"
GEMM = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64"


def _runs(tmp_path: Path, events: list[dict]) -> dict[str, int]:
    a = analyze([write_trace(tmp_path / "t.json", events)])
    return a.views.fusion_runs.to_dict()


def test_gemm_and_copy_end_runs_streams_apart(tmp_path: Path) -> None:
    ev = [
        # stream 7: [EW 10, RED 30, EW 20] GEMM [EW 5] memcpy [EW 4, EW 6]
        kernel(EW, 0, 10, None), kernel(RED, 10, 30, None), kernel(EW, 40, 20, None),
        kernel(GEMM, 60, 100, None), kernel(EW, 160, 5, None),
        X("gpu_memcpy", "Memcpy HtoD (Pageable -> Device)", 0, 7, 165, 10, device=0,
          stream=7, bytes=1024),
        kernel(EW, 175, 4, None), kernel(EW, 179, 6, None),
        # stream 9, interleaved in time with stream 7's first run: its own run of two
        kernel(EW, 5, 8, None, stream=9), kernel(EW, 15, 2, None, stream=9),
    ]
    r = _runs(tmp_path, ev)
    # runs ≥ 2: (10+30+20, longest 30), (4+6, 6), (8+2, 8); alone: the EW of 5 µs
    assert r == {"kernels": 8, "kernel_ns": 85_000, "runs": 3, "run_kernels": 7,
                 "run_ns": 80_000, "fused_ns": 44_000, "alone": 1, "saving_ns": 36_000}


def test_no_fusible_kernels_or_only_single_ones(tmp_path: Path) -> None:
    r = _runs(tmp_path, [kernel(GEMM, 0, 10, None), kernel(EW, 10, 3, None),
                         kernel(GEMM, 13, 10, None)])
    assert (r["kernels"], r["runs"], r["alone"], r["saving_ns"]) == (1, 0, 1, 0)
    r = _runs(tmp_path, [kernel(GEMM, 0, 10, None)])
    assert (r["kernels"], r["runs"], r["kernel_ns"], r["saving_ns"]) == (0, 0, 0, 0)


def test_fuse_elementwise_lever_on_a_gpu_bound_stream(tmp_path: Path) -> None:
    """The replay lever (replay/levers/fuse_elementwise.py) on a hand-made GPU-bound step:
    the host launches 4 one-op kernels (10, 30, 20, 5 µs), a GEMM (100 µs), then 2 more (4 and
    6 µs), each launch a 2 µs call 2 µs apart, then waits in cudaDeviceSynchronize (30 →
    185 µs) and the step ends 1 µs later; the stream runs the kernels back to back from 10
    µs. Runs: [10, 30, 20, 5] → 30 µs and [4, 6] → 6 µs: kernel time 175 → 136 µs (−39 µs), 4
    launch calls removed. The GPU is the bound, so the step (0 → 186 µs) shortens by the 39
    µs: 186 → 147 µs."""
    from crossview.replay import whatif

    durs = [(EW, 10), (RED, 30), (EW, 20), (EW, 5), (GEMM, 100), (EW, 4), (EW, 6)]
    ev: list[dict] = [X("cpu_op", "ProfilerStep#1", 100, 100, 0, 186),
                      runtime("cudaDeviceSynchronize", 30, 155, corr=99)]
    t = 10.0
    for i, (name, d) in enumerate(durs):
        ev.append(runtime("cudaLaunchKernel", 4 * i, 2, corr=i + 1))
        ev.append(kernel(name, t, d, i + 1))
        t += d
    w = whatif.run([write_trace(tmp_path / "t.json", ev)], ["fuse-elementwise"])
    assert w.selfcheck_ok
    assert w.changes == ["fuse-elementwise: 2 runs of 6 one-op kernels: 0.07 → 0.04 ms of "
                         "kernel time; 4 launch calls removed (0.01 ms of host time, each at "
                         "most the median call's 2.0 µs)"]
    m = w.medians()
    assert (m["measured_step_ns"], m["predicted_step_ns"]) == (186_000, 147_000)


def test_fuse_elementwise_keeps_a_graph_launch(tmp_path: Path) -> None:
    """Kernels replayed from a CUDA graph (one cudaGraphLaunch, 0 → 10 µs, for three one-op
    kernels of 10, 20 and 30 µs run back to back from 10 µs, then a sync to 70 µs): fused, the
    three take 30 µs, and the graph's one launch call keeps its cost (no call is cut per
    fused-away kernel). Step 0 → 71 µs → 41 µs."""
    from crossview.replay import whatif

    ev: list[dict] = [X("cpu_op", "ProfilerStep#1", 100, 100, 0, 71),
                      runtime("cudaGraphLaunch", 0, 10, corr=1),
                      runtime("cudaDeviceSynchronize", 10, 60, corr=99)]
    t = 10.0
    for d in (10, 20, 30):
        ev.append(kernel(EW, t, d, 1))
        t += d
    w = whatif.run([write_trace(tmp_path / "g.json", ev)], ["fuse-elementwise"])
    assert w.selfcheck_ok
    assert w.changes[0].startswith("fuse-elementwise: 1 run of 3 one-op kernels: 0.06 → 0.03 "
                                   "ms of kernel time; 0 launch calls removed")
    m = w.medians()
    assert (m["measured_step_ns"], m["predicted_step_ns"]) == (71_000, 41_000)

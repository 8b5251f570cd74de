"""Launch configuration as evidence (detectors/launch_config.py, issue 37): a kernel whose
grid × block cannot fill the GPU, read from the timeline's recorded grid and block.

Kineto: a synthetic trace (no shared capture launches such a kernel from user code), numbers
by hand. A100 (108 SMs); per step a `reduce_serial` kernel <<<1, 16>>> of 600 µs and a full
GEMM <<<(432,1,1), (256,1,1)>>> of 400 µs, 5 steps: 3,000 of 5,000 µs kernel time = 60% is
launched with 1 block for 108 SMs and 16 threads per block (half a warp) → 🔴 (≥ 20%). The
host launches both, then waits in cudaDeviceSynchronize: the kernels are the step's critical
path.
Spread over every SM and lane it could take 600 × 1/108 × 16/32 = 2.78 µs per call.
nsys: the real nvFuser 2024.6 export edited to one <<<1,1>>> kernel (tests/eval/synthetic.py).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from conftest import SHARED_DATA, shared_file
from crossview.analysis import analyze

A100 = {"id": 0, "name": "NVIDIA A100-SXM4-80GB", "totalGlobalMem": 85899345920,
        "numSms": 108, "computeMajor": 8, "computeMinor": 0}


def _kineto(tmp: Path) -> Path:
    ev: list[dict[str, Any]] = []
    corr = 0
    for k in range(5):
        t = 1000 * k
        ev.append({"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{k}",
                   "pid": 1, "tid": 1, "ts": t, "dur": 1000})
        for off, name, dur, grid, block in ((0, "reduce_serial(float*, int)", 600, [1, 1, 1],
                                             [16, 1, 1]),
                                            (600, "ampere_sgemm_128x64_nn", 400, [432, 1, 1],
                                             [256, 1, 1])):
            corr += 1
            ev.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel",
                       "pid": 1, "tid": 1, "ts": t + (10 if off else 0), "dur": 3,
                       "args": {"correlation": corr}})
            ev.append({"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": 7,
                       "ts": t + off + 4, "dur": dur - 4 if off == 0 else dur,
                       "args": {"device": 0, "stream": 7, "correlation": corr,
                                "grid": grid, "block": block}})
        # the host waits for the GPU at the step's end: a GPU-bound step
        ev.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaDeviceSynchronize",
                   "pid": 1, "tid": 1, "ts": t + 20, "dur": 979})
    p = tmp / "launch_config.json"
    p.write_text(json.dumps({"deviceProperties": [A100], "traceEvents": ev}))
    return p


def _finding(path: Path) -> Any:
    a = analyze([path])
    f = [x for x in a.findings if x.pattern == "below-roofline"
         and x.title.startswith("Launch configuration")]
    return f[0] if f else None, a


def test_kineto_launch_config(tmp_path: Path) -> None:
    f, _ = _finding(_kineto(tmp_path))
    assert f is not None
    assert f.severity == "red"
    (k,) = f.details["kernels"]
    assert k["name"].startswith("reduce_serial")
    assert (k["blocks"], k["threads_per_block"], k["sms"], k["calls"]) == (1, 16, 108, 5)
    assert k["time_ns"] == 5 * 596_000
    assert abs(f.share - 5 * 596 / (5 * 596 + 5 * 400)) < 1e-9
    assert "1 block for 108 SMs" in f.observation and "16 threads per block" in f.observation
    # the user's own kernel: more blocks / a grid-stride loop, not a library call's shape
    assert "grid-stride" in f.fix


def test_nsys_single_thread_kernel(tmp_path: Path) -> None:
    shared_file(SHARED_DATA / "nsys" / "nvfuser_h200_nsys2024.6.sqlite")
    sys.path.insert(0, str(Path(__file__).resolve().parent / "eval"))
    import synthetic  # noqa: PLC0415

    p = synthetic.build("single_thread_kernel", tmp_path, SHARED_DATA)
    assert p is not None
    f, _ = _finding(p)
    assert f is not None and f.severity == "red"
    (k,) = f.details["kernels"]
    assert (k["blocks"], k["threads_per_block"], k["sms"]) == (1, 1, 108)
    assert k["time_ns"] == 6_300_000_000
    assert "1 thread on 108 SMs" in f.title

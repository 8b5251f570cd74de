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


_PER_LAUNCH = """
SELECT g.name, g.grid, g.block, b.blocks, b.threads, d.sm_count, count(*), sum(g.dur_ns)
FROM f_kernels g,
     LATERAL (SELECT
       list_reduce(list_transform(string_split(trim(g.grid, '[]() '), ','),
                                  lambda x: TRY_CAST(trim(x) AS BIGINT)), lambda p, q: p * q)
         AS blocks,
       list_reduce(list_transform(string_split(trim(g.block, '[]() '), ','),
                                  lambda x: TRY_CAST(trim(x) AS BIGINT)), lambda p, q: p * q)
         AS threads) b,
     (SELECT device, max(sm_count) AS sm_count FROM devices GROUP BY device) d
WHERE d.device = g.device AND g.grid IS NOT NULL AND g.block IS NOT NULL
  AND coalesce(g.family, '') <> 'comm' AND d.sm_count > 0
  AND (b.blocks < $share * d.sm_count OR b.threads < $warp)
GROUP BY ALL
"""


def test_small_launches_on_a_real_capture_match_the_per_launch_reading() -> None:
    """views/device/launch_shapes.small sums launches per shape before parsing each shape
    once; the same rows as parsing every launch's grid and block (the query above, its
    former form), on the V100 DDP capture (59 small shapes at share 0.5, warp 32), ordered by
    kernel time, then name and shape."""
    from crossview.views.device.launch_shapes import small

    a = analyze([shared_file(SHARED_DATA / "kineto" / "hta_v100_ddp_training.json.gz")])
    assert a.views is not None
    got = [tuple(x) for x in small(a.views, 0.5, 32)]
    ref = a.views.store.sql(_PER_LAUNCH, {"share": 0.5, "warp": 32}).fetchall()
    assert len(got) == 59
    assert got == sorted(ref, key=lambda r: (-r[7], r[0], r[1], r[2]))

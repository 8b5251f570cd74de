"""Nsight Compute reader and per-kernel roofline on the real captures in ../shared/data/ncu.

Every expected number is read here independently (plain `csv` on the CSV exports, NVIDIA's
`ncu_report` on the .ncu-rep files) or computed by hand in the comments, and compared with
what crossview stores and derives. Tests skip with a reason when ../shared/data (or, for the
.ncu-rep files, the optional `ncu-report` package) is absent.
"""

from __future__ import annotations

import csv
import re
from functools import cache
from pathlib import Path

import pytest

from conftest import SHARED_DATA, SHARED_DATA_ABSENT
from crossview.analysis import Analysis, analyze
from crossview.sol.roofline import KernelRoofline

DATA = SHARED_DATA / "ncu"
RTX5090 = DATA / "llm-perf-opt_rtx5090_deepseek-ocr"
RTX2080TI = DATA / "cudacode_rtx2080ti_two_kernels.ncu-rep"
A10G = DATA / "esmm_a10g_sgemm_variants.ncu-rep"
SKIP = SHARED_DATA_ABSENT


def need(path: Path) -> Path:
    if not path.exists():
        pytest.skip(SKIP)
    return path


def ncu_report():  # type: ignore[no-untyped-def]
    return pytest.importorskip(
        "ncu_report", reason="optional extra crossview[ncu] (ncu-report) not installed")


def csv_metric(path: Path, section: str, metric: str) -> tuple[str, str]:
    """(value, unit) of one metric row, read with the csv module alone."""
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            if row["Section Name"] == section and row["Metric Name"] == metric:
                return row["Metric Value"], row["Metric Unit"]
    raise KeyError(metric)


@cache
def rtx5090(gpu: str | None = "RTX 5090") -> Analysis:
    return analyze([need(RTX5090)], gpu=gpu)


def by_name(a: Analysis, part: str) -> KernelRoofline:
    assert a.views is not None
    (k,) = [k for k in a.views.kernels if part in k.name]
    return k


# -- CSV: the RTX 5090 decode GEMV (cuBLAS) -------------------------------------------------

def test_gemv_duration_and_dram_bytes_parse_with_units() -> None:
    details = need(RTX5090 / "kernel_0001_ncu.details.csv")
    dur, dur_unit = csv_metric(details, "Command line profiler metrics", "gpu__time_duration.sum")
    rd, rd_unit = csv_metric(details, "Command line profiler metrics", "dram__bytes_read.sum")
    wr, wr_unit = csv_metric(details, "Command line profiler metrics", "dram__bytes_write.sum")
    assert (dur, dur_unit) == ("6.75", "us")  # as recorded: auto-scaled to µs
    assert (rd, rd_unit, wr, wr_unit) == ("2.33", "Mbyte", "0", "byte")
    k = by_name(rtx5090(), "cublasGemv")
    assert k.duration_ns == pytest.approx(6750.0)  # 6.75 µs → ns
    assert k.dram_bytes == pytest.approx(2.33e6)  # ncu's Mbyte is decimal: 2.33 × 10^6 B
    # decimal, not 2^20: ncu's own bandwidth 345.14 GB/s × 6.75 µs = 2.3297 MB
    assert k.dram_bytes == pytest.approx(345.14e9 * 6.75e-6, rel=2e-3)


def test_gemv_roofline_matches_hand_computation() -> None:
    k = by_name(rtx5090(), "cublasGemv")
    sec = need(RTX5090 / "kernel_0001_ncu.section_SpeedOfLight_RooflineChart.csv")
    with open(sec, newline="") as f:
        rows = list(csv.DictReader(f))

    def val(label: str) -> float:
        return float(next(r["Metric Value"] for r in rows if r["Metric Name"] == label)
                     .replace(",", ""))

    ffma = val("Predicated-On FFMA Thread Instructions Executed Per Cycle")  # 79.06
    fadd = val("Predicated-On FADD Thread Instructions Executed Per Cycle")  # 1.97
    fmul = val("Predicated-On FMUL Thread Instructions Executed Per Cycle")  # 0
    hz = val("SM Frequency") * 1e9  # 2.15 Ghz
    assert (ffma, fadd, fmul, hz) == (79.06, 1.97, 0.0, 2.15e9)
    # ncu's FP32 roofline: (FADD + FMUL + 2·FFMA) per cycle × cycles/s
    fp32 = (1.97 + 0 + 2 * 79.06) * 2.15e9  # = 160.09 × 2.15e9 = 344.19 GFLOP/s
    assert k.flops_per_s["fp32"] == pytest.approx(fp32)
    assert k.achieved_flops_per_s == pytest.approx(344.1935e9)
    # sanity from first principles: a bf16 GEMV does 2 FLOP per 2-byte weight read once:
    # 2.33 MB / 2 B × 2 FLOP / 6.75 µs = 345 GFLOP/s, within 0.3% of the SASS count
    assert k.achieved_flops_per_s == pytest.approx(2.33e6 / 2 * 2 / 6.75e-6, rel=5e-3)
    assert k.dram_bytes_per_s == pytest.approx(345.14e9)  # DRAM Bandwidth, Gbyte/s
    assert k.arithmetic_intensity == pytest.approx(344.1935e9 / 345.14e9)  # 0.9973 FLOP/B
    # % of the RTX 5090 datasheet ceilings (sol_ceilings.yaml): FP32 104.8 TFLOP/s, 1792 GB/s
    assert k.hw_key == "rtx-5090"
    assert k.peak_flops_basis == "fp32"
    assert k.pct_of_peak_flops == pytest.approx(100 * 344.1935e9 / 104.8e12)  # 0.328%
    assert k.pct_of_peak_dram_bw == pytest.approx(100 * 345.14e9 / 1.792e12)  # 19.26%
    # ncu's own DRAM ceiling: 128 B/cycle × 13.72 GHz = 1.756 TB/s → 19.65% (ncu prints 19.66)
    assert k.ncu_peak_dram_bytes_per_s == pytest.approx(128 * 13.72e9)
    assert 100 * k.dram_bytes_per_s / k.ncu_peak_dram_bytes_per_s == pytest.approx(19.66,
                                                                                  abs=0.02)
    # waves: 224 blocks ÷ (2 blocks/SM, register-limited × 170 SMs) = 0.659 (ncu: "0.7 waves")
    assert k.occupancy_limiter == "registers"
    assert k.waves_per_sm == pytest.approx(224 / (2 * 170))
    assert (k.compute_sol_pct, k.memory_sol_pct) == (9.15, 19.66)
    assert k.bound == "small-grid"  # both < 60% and < 1 wave: ncu's SOLBottleneck says so too
    assert any(r["rule"] == "SOLBottleneck" and "too small" in str(r["message"])
               for r in k.ncu_rules)
    assert (k.achieved_occupancy_pct, k.theoretical_occupancy_pct) == (11.32, 16.67)
    assert k.tensor_cores is False  # sm__ops_path_tensor_src_bf16_dst_fp32.sum = 0
    assert k.at_roofline is False
    # the three exports of one launch merge into one row
    assert len(k.artifacts) == 3


def test_cutlass_gemm_tensor_roofline() -> None:
    k = by_name(rtx5090(), "cutlass_80_wmma")
    details = need(RTX5090 / "kernel_0003_ncu.details.csv")
    ops, unit = csv_metric(details, "Command line profiler metrics",
                           "sm__ops_path_tensor_src_bf16_dst_fp32.sum")
    assert (ops, unit) == ("1,275,068,416", "")  # localized thousands separators
    assert k.duration_ns == pytest.approx(23420.0)
    # bf16 tensor FLOP/s = 1,275,068,416 / 23.42 µs = 54.44 TFLOP/s = 25.99% of 209.5
    assert k.flops_per_s == {"bf16_tensor": pytest.approx(1_275_068_416 / 23.42e-6)}
    assert k.pct_of_peak_flops == pytest.approx(100 * 1_275_068_416 / 23.42e-6 / 209.5e12)
    assert k.dram_bytes == pytest.approx(3.35e6)
    assert k.dram_bytes_per_s == pytest.approx(143.20e9)  # Memory Workload Analysis
    assert k.arithmetic_intensity == pytest.approx(1_275_068_416 / 23.42e-6 / 143.20e9)
    assert k.tensor_cores is True
    # memory 61.83% vs compute 41.49%: ≥ 10 points apart → memory-bound (ncu: L2 bottleneck)
    assert k.bound == "memory-bound"
    assert k.l2_sol_pct == 61.83 and k.dram_sol_pct == 8.13
    # 608 blocks ÷ (2 blocks/SM, shared-memory-limited × 170 SMs) = 1.79 waves
    assert k.occupancy_limiter == "shared memory"
    assert k.waves_per_sm == pytest.approx(608 / 340)


def test_unnamed_device_says_so_and_invents_no_ceiling() -> None:
    a = rtx5090(None)
    k = by_name(a, "cublasGemv")
    assert k.hw_key is None and k.pct_of_peak_flops is None and k.pct_of_peak_dram_bw is None
    assert "does not name its GPU" in k.ceilings_note and "--gpu" in k.ceilings_note
    assert k.achieved_flops_per_s == pytest.approx(344.1935e9)  # counters still read
    # without the SM count the waves come from ncu's own SOLBottleneck rule text (0.7 waves)
    assert k.bound == "small-grid" and k.waves_per_sm == pytest.approx(0.7)


def test_roofline_findings_on_the_5090_bundle() -> None:
    found = {f.pattern: f for f in rtx5090().findings}
    assert found["memory-bandwidth-bound"].rigor == "L4"
    assert "L2 at 61.8%" in found["memory-bandwidth-bound"].observation
    assert "0.66 of one wave" in found["below-roofline"].observation
    # a GEMV at 1 FLOP/byte is memory-side whatever pipe does its math: not flagged
    assert "tensor-cores-unused" not in found
    for f in found.values():
        assert f.evidence and all(e.artifact.endswith(".csv") for e in f.evidence)


# -- .ncu-rep through ncu_report --------------------------------------------------------------

def _durations(path: Path) -> list[float]:
    N = ncu_report()
    ctx = N.load_report(str(path))
    rng = ctx.range_by_idx(0)
    return [rng.action_by_idx(i).metric_by_name("gpu__time_duration.sum").as_double()
            for i in range(rng.num_actions())]


def test_rtx2080ti_report_loads_with_sol_sections() -> None:
    durs = _durations(need(RTX2080TI))
    a = analyze([RTX2080TI])
    assert [r.status for r in a.artifacts] == ["ok"]
    ks = {k.name.split("(")[0]: k for k in a.views.kernels}  # type: ignore[union-attr]
    assert sorted(k.duration_ns for k in ks.values()) == sorted(durs)
    ka, kc = ks["kernel_A"], ks["kernel_C"]
    assert ka.duration_ns == pytest.approx(1_168_077_824)  # ns, as ncu_report gives it
    assert ka.hw_key == kc.hw_key == "rtx-2080-ti"
    # sm__throughput 80.30% vs compute-memory 9.45% → compute-bound; both ~40% → latency
    assert ka.bound == "compute-bound" and ka.compute_sol_pct == pytest.approx(80.302, abs=1e-3)
    # waves: 256,000 blocks ÷ (16 blocks/SM × 68 SMs) = 235.29 (launch__waves_per_multiprocessor)
    assert kc.bound == "latency-bound" and kc.waves_per_sm == pytest.approx(256000 / (16 * 68))
    # no FLOP counts were collected: never "at roofline" from SM-busy alone
    assert ka.achieved_flops_per_s is None and ka.at_roofline is None
    assert any("FLOP counts" in m for m in ka.missing)
    assert ka.busiest_pipes["fp64"] == pytest.approx(75.566, abs=1e-3)
    assert {r["rule"] for r in ka.ncu_rules} == {"Occupancy", "SOLBottleneck"}


def test_rtx2080ti_compute_bound_fix_follows_its_busy_pipes() -> None:
    """kernel_A(double *, …) keeps the ALU pipe 80.30% and the FP64 pipe 75.57% busy (read by
    the test above) on a GeForce whose FP64 runs at 1/32 of FP32 (sol_ceilings.yaml: 0.42 vs
    13.4 TFLOPS; the report's device__attribute_single_to_double_precision_perf_ratio = 32).
    The fix names the ALU work first, then FP64 → FP32, never the generic tensor-core advice;
    the effect's floor is the FP64 pipe's share of the kernel: 75.566% × 1.168 s = 882.67 ms."""
    need(RTX2080TI)
    ncu_report()
    a = analyze([RTX2080TI])
    (f,) = [f for f in a.findings if f.pattern == "compute-bound"]
    assert f.fix.index("(1) ALU pipe") < f.fix.index("(2) FP64 pipe on a GPU with slow FP64")
    assert "move the double math to FP32" in f.fix and "tensor cores in a narrower" not in f.fix
    assert "1/32 of its FP32 rate" in f.expected_effect
    assert "≥ 882.67 ms" in f.expected_effect and "75.6% of its 1.168 s" in f.expected_effect


def test_rtx5090_gemm_bound_on_l2_is_told_reuse_not_quantization() -> None:
    """kernel_0003's SpeedOfLight rows (read from its details CSV here): L2 Cache Throughput
    61.83% and DRAM Throughput 8.13% — the cache, not DRAM, limits this 32×32-tile cutlass
    WMMA GEMM, so the fix is never weight quantization; at 16.7% theoretical occupancy it is
    more warps per SM, not larger tiles (tests/test_cache_bound_occupancy.py)."""
    path = need(RTX5090) / "kernel_0003_ncu.details.csv"
    with path.open(newline="") as f:
        sol = {r["Metric Name"]: r["Metric Value"] for r in csv.DictReader(f)
               if r["Section Name"] == "GPU Speed Of Light Throughput"}
    assert (sol["L2 Cache Throughput"], sol["DRAM Throughput"]) == ("61.83", "8.13")
    (f,) = [f for f in analyze([RTX5090]).findings if f.pattern == "memory-bandwidth-bound"]
    assert "The busiest memory unit is L2 at 61.8% of its peak, DRAM at 8.1%" in f.observation
    assert "its name gives a 32×32 tile" in f.observation
    assert "is limited by cache traffic at an occupancy too low" in f.fix
    assert "quantization" not in f.fix and "ran its L2 traffic at 80%" in f.expected_effect


def test_rtx5090_gemv_waves_from_ncus_rule_make_it_small_grid() -> None:
    """kernel_0001 (a cuBLAS bf16 GEMV) has no LaunchStats waves and its GPU is unnamed (no SM
    count), but ncu's SOLBottleneck rule in its details CSV says "resulting in only 0.7 full
    waves across all SMs": that number, quoted, makes it small-grid, so the fix is more work
    per launch rather than fewer registers — and, cuBLAS's kernel, through the call (batching
    turns the M = 1 GEMV into a GEMM), not through tiles or split-K the user cannot set."""
    path = need(RTX5090) / "kernel_0001_ncu.details.csv"
    with path.open(newline="") as f:
        said = [r["Rule Description"] for r in csv.DictReader(f)
                if r["Rule Name"] == "SOLBottleneck"]
    assert any("resulting in only 0.7 full waves" in t for t in said)
    a = analyze([RTX5090])
    (k,) = [k for k in a.views.kernels if "cublasGemv" in k.name]  # type: ignore[union-attr]
    assert k.waves_per_sm == pytest.approx(0.7) and k.bound == "small-grid"
    assert any("SOLBottleneck rule states them" in e for e in k.evidence)
    (f,) = [f for f in a.findings if f.pattern == "below-roofline"]
    assert "is a library kernel whose grid follows the shape" in f.fix
    assert "a GEMV with M = 1" in f.fix and "split-K" not in f.fix


def test_a10g_report_loads_launch_and_duration_only() -> None:
    durs = _durations(need(A10G))
    a = analyze([A10G])
    ks = a.views.kernels  # type: ignore[union-attr]
    assert len(ks) == 12 and sorted(k.duration_ns for k in ks) == sorted(durs)
    basic = next(k for k in ks if k.name.startswith("basic("))
    assert basic.duration_ns == pytest.approx(10_776_992)
    assert basic.waves_per_sm == pytest.approx(12.8)  # launch__waves_per_multiprocessor
    assert basic.hw_key == "a10g" and basic.bound == "unknown"
    for k in ks:  # say which roofline inputs are missing, never invent them
        assert k.achieved_flops_per_s is None and k.dram_bytes is None
        assert any("FLOP counts" in m for m in k.missing)
        assert any("DRAM bytes" in m for m in k.missing)
        assert any("SpeedOfLight" in m for m in k.missing)


def test_profiled_kernel_absent_from_the_timeline_is_not_ranked_over_it() -> None:
    kineto = DATA.parent / "kineto" / "tracelens_mi300x_vllm_decode_full_graph.json.gz"
    need(kineto)
    ncu_report()
    a = analyze([kineto, need(RTX2080TI)])
    (f,) = [f for f in a.findings if f.pattern == "compute-bound"]
    # a 2080 Ti kernel is not in the MI300X timeline: its weight there is 0, so it is a note
    assert f.severity == "info" and f.share == 0.0
    assert "not in the timeline of this bundle" in f.observation


def _launch(path: Path) -> list[tuple[str, float, float, float]]:
    """(name, duration ns, grid blocks, SMs) per profiled launch, read with ncu_report."""
    N = ncu_report()
    rng = N.load_report(str(path)).range_by_idx(0)
    out = []
    for i in range(rng.num_actions()):
        a = rng.action_by_idx(i)
        out.append((a.name(), a.metric_by_name("gpu__time_duration.sum").as_double(),
                    a.metric_by_name("launch__grid_size").as_double(),
                    a.metric_by_name("device__attribute_multiprocessor_count").as_double()))
    return out


def test_a10g_grids_smaller_than_the_gpu_are_small_grid_from_launch_stats_alone() -> None:
    """The A10G report has launch stats but no SpeedOfLight section. Five 128×128-tile SGEMM
    variants launch 64 blocks (an (8, 8, 1) grid) on the A10G's 80 SMs: 16 SMs get no block,
    whatever the counters would say — small-grid, told to size the grid (own kernels), with
    cuBLAS's ampere_sgemm_128x64_nn of the same capture (640 blocks) as the example. The
    effect's floor is Σ time × 64 ÷ 80 over the five, computed here from ncu_report."""
    rows = _launch(need(A10G))
    small = [r for r in rows if r[2] < r[3]]
    assert sorted(r[2] for r in small) == [64.0] * 5 and {r[3] for r in rows} == {80.0}
    a = analyze([A10G])
    ks = a.views.kernels  # type: ignore[union-attr]
    def base(name: str) -> str:  # ncu_report's name() is the function's base name
        return re.split(r"[<(]", name.removeprefix("void "))[0]

    assert sorted(base(k.name) for k in ks if k.bound == "small-grid") == sorted(
        r[0] for r in small)
    assert all(k.bound == "unknown" for k in ks if k.bound != "small-grid")
    (f,) = [f for f in a.findings if f.pattern == "below-roofline"]
    assert f.title.startswith("Grid smaller than the GPU") and "far below" not in f.title
    assert "the grid has 64 blocks for 80 SMs: 16 SMs get no block" in f.observation
    cublas = min((r for r in rows if r[0] == "ampere_sgemm_128x64_nn"), key=lambda r: r[1])
    assert cublas[2] == 640.0
    assert (f"`ampere_sgemm_128x64_nn` in the same capture runs {cublas[1] / 1e3:.1f} µs on a "
            "(8, 16, 5) grid = 640 blocks") in f.observation
    assert f.fix.startswith("Size `void two_blocktiling") and "split-K" in f.fix
    floor_us = sum(r[1] for r in small) * 64 / 80 / 1e3
    assert f"≥ {floor_us:.1f} µs of their" in f.expected_effect
    assert f.severity == "yellow"


def test_a10g_recap_says_what_all_launches_lack_once() -> None:
    """Every one of the 12 A10G launches lacks the same sections (no SpeedOfLight, no memory
    workload, no roofline chart): the recap says so once above the list, not 12 times."""
    from crossview.render import markdown

    text = markdown.render(analyze([need(A10G)]))
    assert text.count("All 12 launches — not in the capture: DRAM bytes") == 1
    assert "   - not in the capture" not in text
    assert text.count("All 12 launches — compute class: not collected") == 1

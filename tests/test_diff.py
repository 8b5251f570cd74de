"""`crossview diff A B` on real Kineto captures, checked against stdlib-only recomputation.

Per-family and per-kernel numbers are recomputed from the raw traces with ``oracle`` (gzip +
json + Decimal, no crossview); the family of a raw kernel name is crossview's family table
(`classify`), which is the definition being summed, not an analysis result. Name normalization
is tested on names copied verbatim from the traces in ../shared/data.
"""

from __future__ import annotations

import json
import subprocess
from collections import defaultdict
from functools import cache
from pathlib import Path

import pytest

import oracle
from conftest import SHARED_DATA, run_cli
from crossview.kernels.families import classify
from crossview.kernels.names import normalize

KINETO = SHARED_DATA / "kineto"
A100_DDP = KINETO / "hta_a100_ddp_resnet_nccl.json.gz"
A100_16 = KINETO / "hta_a100_16rank_training_graphs.json.gz"
B200 = KINETO / "tracelens_b200_vllm_eager_prefill_tp8.json.gz"
MI300X = KINETO / "tracelens_mi300x_vllm_decode_full_graph.json.gz"
needs_data = pytest.mark.skipif(not KINETO.is_dir(),
                                reason="../shared/data not present: real-capture diff tests")


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return run_cli("diff", *args, timeout=120)


@cache
def _diff_json(a: Path, b: Path) -> dict:
    proc = _cli(str(a), str(b), "--format", "json")
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


@cache
def _oracle(path: Path) -> tuple[list[oracle.Kernel], dict[str, tuple[int, int]]]:
    """Raw kernels and {family: (count, time ns)} straight from the trace."""
    ks = oracle.kernels(oracle.load_trace(path))
    fam: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for k in ks:
        f = fam[classify(k.name)]
        f[0] += 1
        f[1] += k.dur_ns
    return ks, {f: (c, t) for f, (c, t) in fam.items()}


# -- name normalization (unit; real names from the traces) ----------------------------------

@pytest.mark.parametrize(("raw", "key"), [
    # B200 trace: return type with nested template + parens in its template arguments
    ("std::enable_if<(((8)>(0)))&&vllm::_typeConvert<c10::BFloat16>::exists, void>::type "
     "vllm::fused_add_rms_norm_kernel<c10::BFloat16, 8>(c10::BFloat16*, long, c10::BFloat16*)",
     "vllm::fused_add_rms_norm_kernel"),
    # A100 DDP trace: anonymous namespace kept as a scope word, template + args stripped
    ("void at::native::(anonymous namespace)::max_pool_backward_nchw<float, float>"
     "(float const*, long const*, int, long, long, long, int, int, int, int, int, int, int)",
     "at::native::anon::max_pool_backward_nchw"),
    # lambdas inside template arguments
    ("void at::native::vectorized_elementwise_kernel<4, at::native::neg_kernel_cuda("
     "at::TensorIteratorBase&)::{lambda()#2}::operator()() const::{lambda()#7}::operator()() "
     "const::{lambda(float)#1}, at::detail::Array<char*, 2> >(int, at::detail::Array<char*, 2>)",
     "at::native::vectorized_elementwise_kernel"),
    ("ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)",
     "ncclKernel_AllReduce_RING_LL_Sum_float"),
    # MI300X trace: Triton kernel index inside its generated module is stripped
    ("triton_poi_fused__to_copy_1", "triton_poi_fused__to_copy"),
    ("triton_poi_fused_constant_pad_nd_moe_forward_0",
     "triton_poi_fused_constant_pad_nd_moe_forward"),
    # non-Triton trailing digits are part of the kernel (tile/alignment): kept
    ("cutlass_80_tensorop_s1688gemm_64x64_16x6_nn_align4",
     "cutlass_80_tensorop_s1688gemm_64x64_16x6_nn_align4"),
    # synthetic: an address printed into a name
    ("my_kernel_0x7f3a2c001000<float>", "my_kernel_"),
])
def test_normalize(raw: str, key: str) -> None:
    assert normalize(raw) == key


# -- real captures ----------------------------------------------------------------------------

def _check_families(d: dict, a: Path, b: Path) -> None:
    _, fa = _oracle(a)
    _, fb = _oracle(b)
    net = sum(t for _, t in fb.values()) - sum(t for _, t in fa.values())
    assert d["net_change_ns"] == net
    got = {r["key"]: r for r in d["families"]}
    assert set(got) == set(fa) | set(fb)
    for fam, r in got.items():
        ca, ta = fa.get(fam, (0, 0))
        cb, tb = fb.get(fam, (0, 0))
        assert (r["a_count"], r["a_time_ns"], r["b_count"], r["b_time_ns"]) == (ca, ta, cb, tb)
        assert r["delta_ns"] == tb - ta
        assert r["share_of_change"] == pytest.approx((tb - ta) / net)
        assert r["a_mean_ns"] == (pytest.approx(ta / ca) if ca else None)
    # kernel rows partition the family rows exactly
    for side in ("a", "b"):
        per_fam: dict[str, int] = defaultdict(int)
        for r in d["kernels"]:
            per_fam[r["family"]] += r[f"{side}_time_ns"]
        assert {f: t for f, t in per_fam.items() if t} == {
            f: r[f"{side}_time_ns"] for f, r in got.items() if r[f"{side}_time_ns"]}


@needs_data
def test_diff_a100_pair_families_exact() -> None:
    d = _diff_json(A100_DDP, A100_16)
    _check_families(d, A100_DDP, A100_16)
    m = {c["metric"]: c for c in d["metrics"]}
    # oracle.py's table: kernel time 162,532,340 → 401,445,000 ns; busy 155,215,315 → 396,315,000
    assert (m["kernel time"]["a"], m["kernel time"]["b"]) == (162_532_340, 401_445_000)
    assert (m["GPU busy"]["a"], m["GPU busy"]["b"]) == (155_215_315, 396_315_000)
    assert m["graph launches"]["delta"] == 70  # 0 → 70 cudaGraphLaunch (README)
    assert m["kernels replayed by graphs"]["b"] == 135
    assert m["kernels with launch not captured"]["b"] == 705
    # per kernel: NCCL SendRecv only in B, AllReduce only in A, recomputed from the raw names
    ka, _ = _oracle(A100_DDP)
    kb, _ = _oracle(A100_16)
    rows = {(r["family"], r["key"]): r for r in d["kernels"]}
    send = rows[("comm", "ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t")]
    sr = [k for k in kb if k.name.startswith("ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(")]
    assert (send["presence"], send["b_count"], send["b_time_ns"]) == (
        "only_b", len(sr), sum(k.dur_ns for k in sr))
    assert "ncclKernel_AllReduce_RING_LL_Sum_float" in d["only_a"]
    # all cutlass::Kernel<…> GEMM tiles share one row (template arguments stripped)
    cut = rows[("gemm", "cutlass::Kernel")]
    for side, ks in (("a", ka), ("b", kb)):
        mine = [k for k in ks if k.name.startswith("void cutlass::Kernel<")]
        assert (cut[f"{side}_count"], cut[f"{side}_time_ns"]) == (
            len(mine), sum(k.dur_ns for k in mine))
        assert cut[f"{side}_variants"] == len({k.name for k in mine})


@needs_data
def test_diff_b200_eager_vs_mi300x_graph() -> None:
    d = _diff_json(B200, MI300X)
    _check_families(d, B200, MI300X)
    m = {c["metric"]: c for c in d["metrics"]}
    assert (m["kernels"]["a"], m["kernels"]["b"]) == (768, 425)
    assert (m["graph launches"]["a"], m["graph launches"]["b"]) == (0, 1)  # one hipGraphLaunch
    assert m["kernels replayed by graphs"]["b"] == 421


@needs_data
def test_diff_against_itself_is_zero() -> None:
    d = _diff_json(MI300X, MI300X)
    assert d["net_change_ns"] == 0 and d["only_a"] == [] and d["only_b"] == []
    for r in d["families"] + d["kernels"]:
        assert r["delta_ns"] == 0 and r["count_delta"] == 0 and r["share_of_change"] is None
    assert all(c["delta"] == 0 for c in d["metrics"])
    _, fam = _oracle(MI300X)
    assert {r["key"]: (r["a_count"], r["a_time_ns"]) for r in d["families"]} == fam


@needs_data
def test_diff_markdown_units_and_evidence() -> None:
    proc = _cli(str(MI300X), str(B200))
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert str(MI300X) in out and str(B200) in out  # evidence: each side's artifact
    assert "| kernel time | 10.67 ms | 10.86 ms | +188.4 µs |" in out  # 10,674,517 → 10,862,916
    assert "| graph launches | 1 | 0 | -1 |" in out
    assert "Only in A:" in out and "Only in B:" in out


@needs_data
def test_diff_bad_inputs_one_line_exit_2(tmp_path: Path) -> None:
    junk = tmp_path / "notes.json"
    junk.write_text("this is not a trace\n")
    for args in ((str(tmp_path / "missing.json.gz"), str(MI300X)), (str(MI300X), str(junk))):
        proc = _cli(*args)
        assert proc.returncode == 2
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("crossview: error: "), proc.stderr
        assert "Traceback" not in proc.stderr and proc.stdout == ""


NSYS = KINETO.parent / "nsys"


def _nsys_families(path: Path) -> dict[str, tuple[int, int]]:
    """{family: (count, time ns)} from the nsys SQLite export with plain sqlite3."""
    import sqlite3

    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    rows = con.execute("SELECT s.value, k.end - k.start FROM CUPTI_ACTIVITY_KIND_KERNEL k"
                       " JOIN StringIds s ON s.id = k.demangledName").fetchall()
    con.close()
    fam: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for name, dur in rows:
        f = fam[classify(name)]
        f[0] += 1
        f[1] += dur
    return {f: (c, t) for f, (c, t) in fam.items()}


@needs_data
def test_diff_nsys_pair_families_exact() -> None:
    a, b = NSYS / "nvfuser_h200_nsys2025.1.sqlite", NSYS / "nvfuser_h200_nsys2024.6.sqlite"
    d = _diff_json(a, b)
    fa, fb = _nsys_families(a), _nsys_families(b)
    got = {r["key"]: (r["a_count"], r["a_time_ns"], r["b_count"], r["b_time_ns"])
           for r in d["families"]}
    assert got == {f: (*fa.get(f, (0, 0)), *fb.get(f, (0, 0))) for f in set(fa) | set(fb)}
    assert sum(c for c, _ in fa.values()) == 18 and sum(c for c, _ in fb.values()) == 19

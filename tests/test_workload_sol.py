"""Workload speed-of-light from DCGM counters. The profiling-field file is synthetic (written
from the dcgm-exporter format in formats.md: no public capture with PROF fields is shipped);
the nvidia-smi H100 capture is real (shared/data/metrics)."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import SHARED_DATA
from crossview.analysis import analyze
from crossview.render import json as json_out
from crossview.render import markdown

DATA = SHARED_DATA


def _prom(tmp_path: Path, model: str) -> Path:
    lab = f'gpu="0",UUID="GPU-1",device="nvidia0",modelName="{model}",Hostname="n1"'
    vals = {"DCGM_FI_DEV_GPU_UTIL": 97, "DCGM_FI_PROF_GR_ENGINE_ACTIVE": 0.95,
            "DCGM_FI_PROF_SM_ACTIVE": 0.85, "DCGM_FI_PROF_SM_OCCUPANCY": 0.30,
            "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE": 0.20, "DCGM_FI_PROF_DRAM_ACTIVE": 0.70,
            "DCGM_FI_PROF_PCIE_TX_BYTES": 1.6e9, "DCGM_FI_PROF_PCIE_RX_BYTES": 3.2e9,
            "DCGM_FI_PROF_NVLINK_TX_BYTES": 45e9, "DCGM_FI_PROF_NVLINK_RX_BYTES": 9e9}
    p = tmp_path / "dcgm.prom"
    p.write_text("".join(f"{k}{{{lab}}} {v}\n" for k, v in vals.items()))
    return p


def test_h100_dcgm_percent_of_ceilings(tmp_path: Path) -> None:
    a = analyze([_prom(tmp_path, "NVIDIA H100 80GB HBM3")])
    assert a.views is not None and not a.rejected
    (s,) = a.views.workload_sol
    assert s.hw_key == "h100-sxm"
    rows = {r.what: r for r in s.rows}
    # by hand: 0.70 × 3.35 TB/s = 2.345 TB/s; 0.20 × 989.5 TFLOP/s = 197.9 TFLOP/s
    assert rows["hbm_bandwidth"].achieved == pytest.approx(2.345e12)
    assert rows["hbm_bandwidth"].pct == pytest.approx(70.0)
    assert rows["tensor_flops"].achieved == pytest.approx(197.9e12)
    # PCIe: max(TX 1.6, RX 3.2 GB/s) ÷ (128 GB/s bidirectional / 2) = 5%
    assert rows["pcie"].pct == pytest.approx(5.0)
    # NVLink: 45 GB/s ÷ 450 GB/s per direction = 10%
    assert rows["nvlink"].pct == pytest.approx(10.0)
    assert rows["sm_occupancy"].pct == pytest.approx(30.0)
    text = " ".join(s.verdicts)
    assert "GPU-bound" in text and "memory-bound at the workload level" in text
    assert "necessary, not sufficient" in text
    md = markdown.render(a)
    assert "Speed-of-light GPU 0" in md and "**70.0%**" in md
    assert '"workload_sol"' in json_out.render(a)


def test_unknown_gpu_no_guess(tmp_path: Path) -> None:
    a = analyze([_prom(tmp_path, "Quantum GPU 9000")])
    assert a.views is not None
    (s,) = a.views.workload_sol
    assert s.hw_key is None and not any(r.ceiling for r in s.rows)
    assert "not in sol_ceilings.yaml" in s.notes[0]


def test_real_h100_nvidia_smi_capture() -> None:
    path = DATA / "metrics" / "nvidia-smi_h100_capture.txt"
    if not path.exists():
        pytest.skip(f"real data not present: {path}")
    a = analyze([path])
    assert a.views is not None
    sols = {s.device: s for s in a.views.workload_sol}
    # the file's load section reads utilization.gpu 100 % (checked by hand), idle 0 %
    load = next(s for d, s in sols.items() if "[load]" in d)
    assert load.hw_key == "h100-sxm"
    assert any("GPU-bound: GPU busy 100.0%" in v for v in load.verdicts)
    assert any("cannot be told" in v for v in load.verdicts)  # no DCGM profiling fields

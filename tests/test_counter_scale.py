"""One counter scale (docs/decisions/0360): a device reads alike in the counter findings
(detectors/utilization_regime.py) and the workload speed-of-light verdicts. The DCGM files are
synthetic (dcgm-exporter text format, as in tests/test_workload_sol.py: no public capture with
profiling fields at these levels is shipped); the idle case is the real nvidia-smi capture."""

from __future__ import annotations

from pathlib import Path

import pytest

from crossview.analysis import analyze
from crossview.knowledge.thresholds import defaults

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
COUNTER_PATTERNS = {"gpu-idle", "below-roofline", "memory-bandwidth-bound"}


def _prom(tmp_path: Path, util: float, sm: float, dram: float, tensor: float) -> Path:
    lab = 'gpu="0",UUID="GPU-1",device="nvidia0",modelName="NVIDIA H100 80GB HBM3",Hostname="n1"'
    vals = {"DCGM_FI_DEV_GPU_UTIL": util, "DCGM_FI_PROF_GR_ENGINE_ACTIVE": util / 100,
            "DCGM_FI_PROF_SM_ACTIVE": sm / 100, "DCGM_FI_PROF_DRAM_ACTIVE": dram / 100,
            "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE": tensor / 100}
    p = tmp_path / "dcgm.prom"
    p.write_text("".join(f"{k}{{{lab}}} {v}\n" for k, v in vals.items()))
    return p


def _read(tmp_path: Path, **levels: float) -> tuple[str, set[str]]:
    a = analyze([_prom(tmp_path, **levels)])
    assert a.views is not None
    (s,) = a.views.workload_sol
    return " · ".join(s.verdicts), {f.pattern for f in a.findings} & COUNTER_PATTERNS


def test_a_device_at_70_percent_is_partly_idle_everywhere(tmp_path: Path) -> None:
    lim = defaults()
    assert lim.counters_starved_util_pct < 70 < lim.counters_busy_util_pct
    verdicts, found = _read(tmp_path, util=70, sm=65, dram=30, tensor=10)
    assert "partly idle: GPU busy 70.0%, between the 60% host-bound and 80% GPU-bound" in verdicts
    assert "host-bound: GPU busy" not in verdicts and "GPU-bound: GPU busy" not in verdicts
    assert "SM active 65.0% < 80% (DCGM's mark): part of the SMs idle" in verdicts
    # DRAM 30% leads tensor by 20 points but is under the 60% SOLBottleneck mark: not
    # memory-bound (the old rule said so while also saying "neither ceiling near")
    assert "memory-bound at the workload level" not in verdicts
    assert "neither ceiling near (DRAM 30.0%, tensor 10.0% < 60%)" in verdicts
    assert found == set()  # and no counter finding: the same reading


def test_a_device_at_55_percent_is_host_bound_everywhere(tmp_path: Path) -> None:
    verdicts, found = _read(tmp_path, util=55, sm=50, dram=20, tensor=10)
    assert "host-bound: GPU busy 55.0% < 60%" in verdicts
    assert found == {"gpu-idle"}


def test_a_busy_device_with_few_active_sms_and_dram_leading(tmp_path: Path) -> None:
    verdicts, found = _read(tmp_path, util=95, sm=40, dram=20, tensor=5)
    assert "GPU-bound: GPU busy 95.0% ≥ 80%" in verdicts
    assert "SM active 40.0% < 50%: most SMs idle" in verdicts
    assert found == {"below-roofline"}
    verdicts, found = _read(tmp_path, util=95, sm=90, dram=75, tensor=20)
    assert "memory-bound at the workload level: DRAM 75.0% ≥ 60%" in verdicts
    assert found == {"memory-bandwidth-bound"}


def test_an_idle_gpu_is_idle_not_host_bound() -> None:
    path = DATA / "metrics" / "nvidia-smi_h100_capture.txt"
    if not path.exists():
        pytest.skip(f"real data not present: {path}")
    a = analyze([path])
    assert a.views is not None
    # the file's idle section reads utilization.gpu 0 % (checked by hand)
    idle = next(s for s in a.views.workload_sol if "[idle]" in s.device)
    # the only line: no "capture DRAM/tensor counters" advice for a GPU that did nothing
    assert idle.verdicts == ["idle: GPU busy 0.0% < 5% — no load in the window to judge"]

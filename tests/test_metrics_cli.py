"""`crossview analyze` on metric files: alone (metrics-only recap), and in a folder next to a
trace (metrics first, then the trace views). Real files from ../shared/data."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import SHARED_DATA, run_cli

DATA = SHARED_DATA
VLLM = DATA / "metrics" / "vllm_v1_metrics_idle.prom"
H100 = DATA / "metrics" / "nvidia-smi_h100_capture.txt"
MI300X = DATA / "kineto" / "tracelens_mi300x_vllm_decode_full_graph.json.gz"


def need(*paths: Path) -> None:
    if not all(p.is_file() for p in paths):
        pytest.skip("../shared/data not present: real-capture tests need it")


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return run_cli("analyze", *args, timeout=300)


def test_metrics_file_alone_is_a_metrics_only_recap() -> None:
    need(VLLM)
    proc = cli(str(VLLM))
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    md = proc.stdout
    assert "**GPU metrics** (serving metrics" in md
    assert "metrics-only recap (no GPU view, no CPU view)" in md
    assert "Observed call tree" not in md and "CPU-only" not in md
    assert "## 🔴" not in md and "## 🟡" not in md  # idle scrape: nothing alarming
    assert "333 metric samples" in md


def test_metrics_json_contract() -> None:
    need(H100)
    proc = cli(str(H100), "--format", "json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    gm = doc["gpu_metrics"]
    load = next(d for d in gm["devices"] if d["section"] == "load")
    assert load["stats"]["mem_used"]["max"] == 19818.0
    assert load["stats"]["mem_used"]["unit"] == "MiB"
    assert load["name"] == "NVIDIA H100 80GB HBM3"
    assert doc["metrics"]["cpu_only"] is False and doc["metrics"]["kernel_count"] == 0
    for key in ("filter", "artifacts", "metrics", "gpu_view", "cpu_view", "findings"):
        assert key in doc  # the existing contract is kept


def test_folder_with_trace_and_metrics(tmp_path: Path) -> None:
    need(VLLM, MI300X)
    shutil.copyfile(VLLM, tmp_path / "metrics.prom")
    shutil.copyfile(MI300X, tmp_path / MI300X.name)
    (tmp_path / "notes.txt").write_text("captured during the decode benchmark\n")
    proc = cli(str(tmp_path), "--detail", "full")  # issue 40: the metrics behind the verdict
    # the unrecognized text file is not read but said: one warning line, exit 0 (issue 18)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.splitlines() == [
        f"crossview: warning: {tmp_path / 'notes.txt'}: skipped: content not recognized by any "
        "reader (not a capture format crossview reads)"], proc.stderr
    md = proc.stdout
    first, trace = md.index("**GPU metrics** (serving metrics"), md.index("**GPU metrics** (trace")
    # the verdict and the GPU view first; in the detail, workload metrics before the trace's
    assert md.index("**Observed call tree — GPU view**") < first < trace
    assert "notes.txt" not in md  # plain text that no reader recognizes is not an input
    jproc = cli(str(tmp_path), "--format", "json")
    doc = json.loads(jproc.stdout)
    assert doc["metrics"]["kernel_count"] == 425  # the trace is analyzed as before
    assert doc["gpu_metrics"]["serving"][0]["idle"] is True
    assert doc["engine"] == "vllm"

"""Trace and metrics on one clock (artifacts.clock_epoch_ns, scope/trace_clock.py).

Real traces, checked by hand with gzip+json (and recomputed below):
- hta_a100_ddp_resnet_nccl: baseTimeNanoseconds 1711964646000000000, first ts 4458676388068.751
  µs (51.6 days: an absolute monotonic clock, not relative to the base) → clock unknown.
- tracelens_h100_hf_qwen1.5_0.5b_forward: base 1751410836000000000, first ts 1428625731456.483
  µs (16.5 days) → unknown. (tracelens b200 / mi300x: base 1767189312000000000, ts 15.8 / 75.5
  days → unknown, same rule.)
- hta_a100_16rank_training_graphs, hta_v100_ddp_training: no baseTimeNanoseconds; ts already
  epoch µs (1683564901540885 = 2023-05-08T16:55:01Z) → base 0. 16rank's host/GPU events (all X
  events but the one cat "Trace" profiler span) run 1683564901548726 … 1683564902781195 µs.
- nsys nvfuser_h200_nsys2025.1.sqlite: TARGET_INFO_SESSION_START_TIME.utcEpochNs
  1741793819042497997 (sqlite3 by hand; re-read below).
NVML JSONL files and the small Kineto traces with a relative-ts base are synthetic (built here).
"""

from __future__ import annotations

import gzip
import json
import sqlite3
from pathlib import Path

import pytest

from conftest import SHARED_DATA
from crossview.analysis import analyze
from crossview.scope.filter import Filter
from crossview.sources.registry import read_all
from crossview.store.store import Store
from crossview.synthesis.bundle import load
from crossview.synthesis.inventory import take

DATA = SHARED_DATA
KINETO = DATA / "kineto"
A100_16 = KINETO / "hta_a100_16rank_training_graphs.json.gz"
NSYS = DATA / "nsys" / "nvfuser_h200_nsys2025.1.sqlite"
needs_data = pytest.mark.skipif(not A100_16.exists(), reason="../shared/data absent: "
                                "real-trace clock tests need the Kineto captures")
MS = 1_000_000


def _clock(path: Path) -> int | None:
    st = Store()
    (r,) = read_all([path], st)
    assert r.status == "ok", r.problems
    return st.sql("SELECT clock_epoch_ns FROM artifacts").fetchall()[0][0]


def _doc(path: Path) -> dict:
    with gzip.open(path) as f:
        return json.load(f)


def _span_ns(path: Path) -> tuple[int, int]:
    """Host/GPU event extent of a trace in its own ns, straight from the JSON (the 16-rank
    trace has integer µs: rounded to µs before scaling, a float ×1000 would lose ns)."""
    ev = [e for e in _doc(path)["traceEvents"] if e.get("ph") == "X" and e.get("cat") != "Trace"]
    return (round(min(float(e["ts"]) for e in ev)) * 1000,
            round(max(float(e["ts"]) + float(e.get("dur", 0)) for e in ev)) * 1000)


@needs_data
@pytest.mark.parametrize(("name", "base", "expect"), [
    ("hta_a100_ddp_resnet_nccl.json.gz", 1711964646000000000, None),
    ("tracelens_h100_hf_qwen1.5_0.5b_forward.json.gz", 1751410836000000000, None),
    ("hta_a100_16rank_training_graphs.json.gz", None, 0),
])
def test_real_kineto_clock_base(name: str, base: int | None, expect: int | None) -> None:
    path = KINETO / name
    assert _doc(path).get("baseTimeNanoseconds") == base  # what the file says
    assert _clock(path) == expect


@pytest.mark.skipif(not NSYS.exists(), reason="../shared/data absent: real nsys export")
def test_real_nsys_session_start() -> None:
    with sqlite3.connect(NSYS) as con:
        (want,) = con.execute("SELECT utcEpochNs FROM TARGET_INFO_SESSION_START_TIME").fetchone()
    assert want == 1741793819042497997
    assert _clock(NSYS) == want


def _kineto(path: Path, base: object, t0_us: float = 1000.0) -> Path:
    """Synthetic trace: one launch + one 50 ms kernel starting at t0_us (relative µs)."""
    doc: dict[str, object] = {"traceEvents": [
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1,
         "ts": t0_us, "dur": 5.0, "args": {"correlation": 1}},
        {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": t0_us + 10,
         "dur": 50_000.0, "args": {"device": 0, "stream": 7, "correlation": 1}}]}
    if base is not None:
        doc["baseTimeNanoseconds"] = base
    path.write_text(json.dumps(doc))
    return path


def test_synthetic_kineto_base_rules(tmp_path: Path) -> None:
    base = 1_767_225_600_000_000_000
    assert _clock(_kineto(tmp_path / "rel.json", base)) == base
    assert _clock(_kineto(tmp_path / "none.json", None)) is None  # monotonic ts, no base
    assert _clock(_kineto(tmp_path / "str.json", "soon")) is None  # hostile: read, unknown
    assert _clock(_kineto(tmp_path / "far.json", base, t0_us=5e12)) is None  # 58 days past


def _nvml(path: Path, t0: int, step: int, n: int) -> Path:
    """Synthetic NVML JSONL: n ticks from epoch t0, gpu_util = tick index (0, 1, 2, …)."""
    dev = {"index": 0, "name": "NVIDIA A100", "uuid": "GPU-1", "mem_total_mib": 81559}
    lines = [json.dumps({"format": "crossview-nvml", "version": 1, "hostname": "synth",
                         "interval_ms": step // MS, "devices": [dev]})]
    lines += [json.dumps({"ts_ns": t0 + i * step, "gpu": 0, "gpu_util_pct": float(i)})
              for i in range(n)]
    path.write_text("\n".join(lines) + "\n")
    return path


@needs_data
def test_window_scopes_metrics_on_real_trace_clock(tmp_path: Path) -> None:
    s, e = _span_ns(A100_16)
    assert (s, e) == (1683564901548726000, 1683564902781195000)
    t0, step = s - 100 * MS, 10 * MS  # ticks straddle the trace: 100 ms before → 1.4 s after
    nvml = _nvml(tmp_path / "nvml.jsonl", t0, step, 150)
    ticks = [t0 + i * step for i in range(150)]
    # trace base 0: the window in trace ns is the epoch window
    win = (s + 200 * MS, s + 455 * MS)
    want = [float(i) for i, t in enumerate(ticks) if win[0] <= t < win[1]]
    a = analyze([A100_16, nvml], Filter(window_ns=win))
    (d,) = a.views.gpu_metrics.devices
    assert d.samples == len(want) == 26
    assert d.mean("gpu_util") == pytest.approx(sum(want) / len(want))  # ticks 30..55 → 42.5
    notes = a.views.gpu_metrics.notes
    assert any("mapped to wall clock via the clock base of hta_a100_16rank" in n for n in notes)
    # metrics-first block: samples inside the mapped window
    assert any(n.startswith("nvml.jsonl: 26 of 150 metric samples fall inside the --window")
               for n in notes)
    # no window: samples inside the trace's whole span (s … e), counted independently
    inside = sum(1 for t in ticks if s <= t < e)
    b = analyze([A100_16, nvml])
    assert any(f"{inside} of 150 metric samples fall inside the trace hta_a100_16rank" in n
               for n in b.views.gpu_metrics.notes)
    assert inside == 124


def test_window_without_trace_clock_keeps_note(tmp_path: Path) -> None:
    trace = _kineto(tmp_path / "mono.json", None)  # synthetic: monotonic ts, no base
    nvml = _nvml(tmp_path / "nvml.jsonl", 1_767_225_600_000_000_000, 100 * MS, 5)
    a = analyze([trace, nvml], Filter(window_ns=(1_000_000, 30_000_000)))
    (d,) = a.views.gpu_metrics.devices
    assert d.samples == 5  # whole capture kept
    assert any("carries no wall-clock base" in n and "mono.json" in n
               for n in a.views.gpu_metrics.notes)


@needs_data
@pytest.mark.parametrize(("offset_ms", "n", "problem", "note"), [
    (-100, 150, False, False),  # covers the whole 1.23 s trace
    (86_400_000, 5, True, False),  # a day later: another run
    (600, 150, False, True),  # starts 600 ms into the trace: partial
])
def test_inventory_against_trace_span(tmp_path: Path, offset_ms: int, n: int, problem: bool,
                                      note: bool) -> None:
    b = tmp_path / "b"
    b.mkdir()
    (b / A100_16.name).write_bytes(A100_16.read_bytes())
    s, _e = _span_ns(A100_16)
    _nvml(b / "nvml.jsonl", s + offset_ms * MS, 10 * MS, n)
    inv = take(load(b))
    (entry,) = [x for x in inv.entries if x.path == "nvml.jsonl"]
    assert entry.valid is not problem
    if problem:
        (p,) = entry.problems
        assert p.problem == "outside-window" and "profiled steps" in p.fix
        assert "2023-05-08T16:55:01.548Z" in p.detail
    assert any("cover only part of the wall-clock span" in x for x in entry.notes) is note

"""Host CPU samples (views/counters/host_cpu.py, detectors/host_cpu.py, inventory host-cpu source).

1. A real CPU capture made here with `crossview.capture` on a tiny torch matmul loop: the view's
   numbers are recomputed independently from the written JSONL (json + statistics), then the
   chain capture → analyze (md/JSON) → inventory → synthesize (refused: one GPU view at most,
   host samples corroborate only) → report HTML is run on it.
2. Synthetic host-sample files (no public sample of crossview's own host format with a pinned
   or oversubscribed host exists) beside a real trace from ../shared/data (pinned core while
   the GPU idles) and beside synthetic NVML samples (oversubscribed, spare CPU).
"""

from __future__ import annotations

import json
import os
import statistics
import time
from pathlib import Path

import pytest

from conftest import SHARED_DATA, run_cli
from crossview.analysis import analyze
from crossview.capture import host_sampler
from crossview.scope.filter import Filter
from crossview.synthesis import bundle, inventory, synthesize

DATA = SHARED_DATA
B200 = DATA / "kineto" / "tracelens_b200_vllm_eager_prefill_tp8.json.gz"
T0 = 1_767_225_600_000_000_000  # 2026-01-01T00:00:00Z in epoch ns


def _host_file(path: Path, cores: list[list[float]], t0: int = T0, step: int = 500_000_000,
               iowait: float = 0.0, per_core: bool = True) -> Path:
    """Synthetic host-sampler JSONL: one tick per row of `cores` (busy % per core)."""
    lines = [json.dumps({"format": "crossview-host", "version": 1, "hostname": "synth",
                         "interval_ms": 500, "cpus": len(cores[0])})]
    for i, row in enumerate(cores):
        tick: dict[str, object] = {"ts_ns": t0 + i * step,
                                   "cpu_util_pct": round(sum(row) / len(row), 2),
                                   "cpu_user_pct": round(sum(row) / len(row), 2),
                                   "cpu_system_pct": 0.0, "cpu_iowait_pct": iowait,
                                   "mem_used_mib": 1000.0 + i}
        if per_core:
            tick["core_util_pct"] = row
        lines.append(json.dumps(tick))
    path.write_text("\n".join(lines) + "\n")
    return path


def _nvml_file(path: Path, util: float, ticks: int = 5) -> Path:
    dev = {"index": 0, "name": "NVIDIA H100", "uuid": "GPU-1", "mem_total_mib": 81559}
    lines = [json.dumps({"format": "crossview-nvml", "version": 1, "hostname": "synth",
                         "interval_ms": 500, "devices": [dev]})]
    lines += [json.dumps({"ts_ns": T0 + i * 500_000_000, "gpu": 0, "gpu_util_pct": util,
                          "mem_used_mib": 1000.0}) for i in range(ticks)]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_core_busy_from_proc_stat_lines() -> None:
    # hand-checked: cpu0 went 100 → 200 total jiffies with 50 idle + 10 iowait → 40% busy
    prev = host_sampler.core_times("cpu  0 0 0 0 0 0 0 0\ncpu0 10 0 10 70 10 0 0 0\n"
                                   "cpu1 0 0 0 100 0 0 0 0\nintr 5\n")
    cur = host_sampler.core_times("cpu  0 0 0 0 0 0 0 0\ncpu0 30 0 30 120 20 0 0 0\n"
                                  "cpu1 100 0 0 100 0 0 0 0\n")
    assert host_sampler.core_busy(prev, cur) == [40.0, 100.0]
    assert host_sampler.core_busy(prev, cur[:1]) is None  # core set changed: no reading


def test_real_cpu_capture_host_view_and_chain(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch", reason="torch not installed: pip install -e '.[test]'")
    import crossview
    out = tmp_path / "bundle"
    x = torch.randn(192, 192)
    with crossview.capture(out, wait=0, warmup=1, active=2, host_interval_ms=100) as cap:
        end = time.monotonic() + 1.2  # ≥ 10 host ticks at 100 ms
        while time.monotonic() < end:
            for _ in range(4):
                x = torch.tanh(x @ x)
            cap.step()
    lines = (out / "metrics" / "host_cpu.jsonl").read_text().splitlines()
    head, ticks = json.loads(lines[0]), [json.loads(ln) for ln in lines[1:]]
    assert head["cpus"] == os.cpu_count() and len(ticks) >= 5
    assert all(len(t["core_util_pct"]) == os.cpu_count() for t in ticks)
    busy = statistics.fmean(t["cpu_util_pct"] for t in ticks)
    per_core = [statistics.fmean(c) for c in zip(*(t["core_util_pct"] for t in ticks),
                                                  strict=True)]
    # the aggregate `cpu` line sums the cpuN lines; per tick they differ by jiffy rounding
    # (10 ms jiffies in a 100 ms tick: ±10 % per core, and the two lines are read at slightly
    # different instants); this checks the sampler's consistency, loosely, because on a loaded
    # 2-core machine the difference reached 8 points over a short capture. crossview's own
    # numbers are checked exactly below against these independently recomputed values.
    assert abs(statistics.fmean(per_core) - busy) < 15.0
    top = max(range(len(per_core)), key=lambda i: (per_core[i], -i))

    a = analyze([out])
    (h,) = a.views.gpu_metrics.host_cpu
    assert h.cpus == os.cpu_count() and h.whole.samples == len(ticks)
    assert h.whole.busy_mean_pct == pytest.approx(busy, abs=0.01)
    assert [c.mean_pct for c in h.whole.cores] == pytest.approx(per_core, abs=0.01)
    assert h.whole.busiest.core == top
    assert h.scoped.samples == len(ticks)  # no filter window: the whole capture
    d = a.views.gpu_metrics.to_dict()["host_cpu"][0]
    assert d["whole"]["busiest_core"]["core"] == top and d["whole"]["window_s"] > 0.5

    md = run_cli("analyze", out, "--detail", "full", timeout=120)  # issue 40: metrics
    assert md.returncode == 0, md.stderr
    assert f"({head['cpus']} CPUs) — crossview host sampler, {len(ticks)} samples" in md.stdout
    assert f"busiest core cpu{top} **{round(per_core[top], 2):.1f}%** mean" in md.stdout
    assert "stored, not interpreted" not in md.stdout and "**Host metrics**" in md.stdout

    inv = inventory.take(bundle.load(out))
    e = next(x for x in inv.entries if x.path == "metrics/host_cpu.jsonl")
    assert (e.source, e.tier, e.counts, e.valid) == ("host-cpu", "L3", False, True)
    assert e.what == f"{len(ticks)} host CPU samples ({os.cpu_count()} cores)"
    with pytest.raises(synthesize.Refused, match="host-cpu is valid but corroborates only"):
        synthesize.run(out)
    html = tmp_path / "r.html"
    r = run_cli("report", out, "-o", html, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "Host CPU on" in html.read_text()


@pytest.mark.skipif(not B200.exists(), reason="../shared/data not present: real-trace test")
def test_pinned_core_beside_real_idle_trace(tmp_path: Path) -> None:
    # synthetic host: cpu2 at 99-100 %, the other 3 cores at 4-6 % (all CPUs ≈ 28.5 %)
    host = _host_file(tmp_path / "host_cpu.jsonl",
                      [[5.0, 4.0, 99.0, 6.0], [5.0, 6.0, 100.0, 4.0], [5.0, 5.0, 99.0, 5.0]])
    a = analyze([B200, host])
    m = a.views.metrics
    idle = m.idle.total_ns / m.kernel_span_ns
    assert 0.8 < idle < 0.95  # README: ~13 % GPU busy over the kernel span
    by = {f.pattern: f for f in a.findings}
    f = by["host-cpu-pinned"]
    assert f.details["core"] == 2 and f.details["core_busy_pct"] == pytest.approx(99.33, 0.01)
    assert f.details["others_busy_pct"] == pytest.approx(5.0, abs=0.01)
    assert f.share == pytest.approx(idle) and f.rigor == "L3"
    assert "cpu2 pinned at 99%" in f.title and str(host) in str(f.evidence[0])
    # the trace's own host-side finding now names the host CPU reading (issue 15: gpu-idle is
    # no longer a note of its own; on this trace the host-side finding is launch-bound)
    g = by["kernel-launch-bound"]
    assert "one host thread is saturated" in g.observation
    assert any(ev.artifact == str(host) for ev in g.evidence)
    assert g.details["host_cpu"]["busiest_core"] == 2
    # trace evidence names the trace only; the host file is cited once, for what it holds
    assert [ev.artifact for ev in g.evidence].count(str(host)) == 1


def test_oversubscribed_and_spare_cpu_with_counters(tmp_path: Path) -> None:
    gpu = _nvml_file(tmp_path / "nvml.jsonl", util=30.0)
    hot = _host_file(tmp_path / "host_hot.jsonl", [[96.0, 97.0, 95.0, 98.0]] * 4)
    a = analyze([gpu, hot])
    by = {f.pattern: f for f in a.findings}
    f = by["cpu-oversubscribed"]
    assert f.details["busy_pct"] == 96.5 and f.share == pytest.approx(0.70)
    # counters only, no framework shown: the generic variant (no DataLoader `num_workers`)
    assert "OMP_NUM_THREADS" in f.fix and "num_workers" not in f.fix
    assert "oversubscribed" in by["gpu-idle"].observation

    cool = _host_file(tmp_path / "host_cool.jsonl", [[20.0, 10.0, 30.0, 20.0]] * 4)
    b = analyze([gpu, cool])
    pats = {f.pattern for f in b.findings}
    assert not pats & {"cpu-oversubscribed", "host-cpu-pinned"}
    g = next(f for f in b.findings if f.pattern == "gpu-idle")
    assert "spare CPU" in g.observation and "busiest core cpu2 30.0%" in g.observation

    busy_gpu = _nvml_file(tmp_path / "nvml_busy.jsonl", util=95.0)
    c = analyze([busy_gpu, hot])  # busy host under a busy GPU: no host finding
    assert "cpu-oversubscribed" not in {f.pattern for f in c.findings}


def test_filter_window_scopes_host_samples(tmp_path: Path) -> None:
    host = _host_file(tmp_path / "host_cpu.jsonl",
                      [[10.0, 10.0], [90.0, 10.0], [90.0, 10.0], [10.0, 10.0]])
    a = analyze([host], Filter(window_ns=(T0 + 400_000_000, T0 + 1_100_000_000)))
    (h,) = a.views.gpu_metrics.host_cpu
    assert (h.whole.samples, h.scoped.samples) == (4, 2)
    assert h.scoped.busiest.mean_pct == 90.0 and h.whole.busiest.mean_pct == 50.0
    from crossview.render.markdown import render
    assert "Within the filter's window (2 samples over 0.5 s)" in render(a)


def test_inventory_host_samples_outside_window_and_old_format(tmp_path: Path) -> None:
    b = tmp_path / "b"
    (b / "metrics").mkdir(parents=True)
    (b / "bundle.yaml").write_text("capture:\n  started: '2026-03-01T10:00:00Z'\n"
                                   "  ended: '2026-03-01T10:05:00Z'\n")
    _host_file(b / "metrics" / "host_cpu.jsonl", [[50.0, 50.0]] * 3)  # 2026-01-01: outside
    _host_file(b / "metrics" / "old_host.jsonl", [[50.0, 50.0]] * 3, per_core=False,
               t0=1_772_359_260_000_000_000)  # 2026-03-01T10:01Z: inside, no per-core
    inv = inventory.take(bundle.load(b))
    e = {x.path: x for x in inv.entries}
    (p,) = e["metrics/host_cpu.jsonl"].problems
    assert p.problem == "outside-window" and "host sampler" in p.fix
    old = e["metrics/old_host.jsonl"]
    assert old.valid and old.what == "3 host CPU samples (all CPUs only)"
    assert any("no per-core samples" in n for n in old.notes)


@pytest.mark.skipif(not B200.exists(), reason="../shared/data not present: real-trace test")
def test_synthesis_names_l3_host_evidence(tmp_path: Path) -> None:
    # real trace + synthetic NVML (2 counting sources) + synthetic pinned host samples
    b = tmp_path / "b"
    (b / "traces").mkdir(parents=True)
    (b / "traces" / B200.name).write_bytes(B200.read_bytes())
    _nvml_file(b / "nvml.jsonl", util=20.0)
    _host_file(b / "host_cpu.jsonl", [[5.0, 4.0, 99.0, 6.0], [5.0, 6.0, 100.0, 4.0]])
    s = synthesize.run(b)
    assert set(s.inv.sources()) == {"pytorch-profiler", "gpu-counters"}  # host-cpu not counted
    assert s.rec.l3_host == [("host_cpu.jsonl", "host CPU 28.6% busy (all CPUs, mean of 2 "
                              "samples), busiest core cpu2 99.5%: one core pinned "
                              "(single-threaded host loop)")]
    assert s.to_dict()["reconciliation"]["l3_host"][0]["artifact"] == "host_cpu.jsonl"

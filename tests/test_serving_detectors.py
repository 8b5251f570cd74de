"""Serving and counter detectors. The real captures in ../shared/data/metrics are idle (the vLLM
scrape, the T4 scrape) or a synthetic gpu-burn load measured with utilization only (the H100
capture), so the written-down expectation for them is: nothing alarming — no red, no yellow,
only capture-window notes. The loaded cases are SYNTHETIC scrape series / dmon logs / benchmark
results written from the documented formats (docs/formats.md, docs/input-formats.md)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import SHARED_DATA
from crossview.analysis import analyze

DATA = SHARED_DATA / "metrics"
MODEL = 'engine="0",model_name="m"'


def scrape(ts: float, running: float, waiting: float, kv: float = 0.5, preempt: float = 0,
           finished: float = 0, queries: float = 0, hits: float = 0, queue_sum: float = 0,
           e2e_sum: float = 0, count: float = 0) -> str:
    """One vLLM V1 /metrics scrape (documented names) preceded by our scrape_time marker."""
    return f"""# scrape_time {ts}
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{{{MODEL}}} {running}
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{{{MODEL}}} {waiting}
# TYPE vllm:kv_cache_usage_perc gauge
vllm:kv_cache_usage_perc{{{MODEL}}} {kv}
# TYPE vllm:num_preemptions_total counter
vllm:num_preemptions_total{{{MODEL}}} {preempt}
# TYPE vllm:request_success_total counter
vllm:request_success_total{{{MODEL},finished_reason="stop"}} {finished}
# TYPE vllm:prefix_cache_queries_total counter
vllm:prefix_cache_queries_total{{{MODEL}}} {queries}
# TYPE vllm:prefix_cache_hits_total counter
vllm:prefix_cache_hits_total{{{MODEL}}} {hits}
# TYPE vllm:request_queue_time_seconds histogram
vllm:request_queue_time_seconds_bucket{{{MODEL},le="1.0"}} {count}
vllm:request_queue_time_seconds_bucket{{{MODEL},le="+Inf"}} {count}
vllm:request_queue_time_seconds_sum{{{MODEL}}} {queue_sum}
vllm:request_queue_time_seconds_count{{{MODEL}}} {count}
# TYPE vllm:e2e_request_latency_seconds histogram
vllm:e2e_request_latency_seconds_bucket{{{MODEL},le="10.0"}} {count}
vllm:e2e_request_latency_seconds_bucket{{{MODEL},le="+Inf"}} {count}
vllm:e2e_request_latency_seconds_sum{{{MODEL}}} {e2e_sum}
vllm:e2e_request_latency_seconds_count{{{MODEL}}} {count}
"""


def findings(*paths: Path) -> dict[str, list]:
    out: dict[str, list] = {}
    for f in analyze(list(paths)).findings:
        out.setdefault(f.pattern, []).append(f)
    return out


def alarming(*paths: Path) -> list:
    return [f for fs in findings(*paths).values() for f in fs if f.severity != "info"]


@pytest.mark.parametrize("name", ["vllm_v1_metrics_idle.prom", "dcgm-exporter_t4.prom",
                                  "nvidia-smi_h100_capture.txt"])
def test_real_metric_files_say_nothing_alarming(name: str) -> None:
    path = DATA / name
    if not path.is_file():
        pytest.skip("../shared/data not present: real metric-capture tests need it")
    assert alarming(path) == []


def test_real_idle_vllm_scrape_is_a_capture_note() -> None:
    path = DATA / "vllm_v1_metrics_idle.prom"
    if not path.is_file():
        pytest.skip("../shared/data not present: real metric-capture tests need it")
    notes = findings(path)["capture-window"]
    assert [f.severity for f in notes] == ["info"]
    assert "idle when scraped" in notes[0].title


def test_queue_saturation_and_queued_latency(tmp_path: Path) -> None:
    # 4 scrapes 15 s apart: running pinned at 256 while 12–40 wait; 900 requests spent
    # 360 s of 1200 s of end-to-end time queued (30%)
    p = tmp_path / "queue.prom"
    p.write_text("".join(scrape(1000 + 15 * i, 256, w, finished=300 * i, queue_sum=120 * i,
                                e2e_sum=400 * i, count=300 * i)
                         for i, w in enumerate((12, 30, 25, 40))))
    (f,) = findings(p)["queue-saturation"]
    assert f.severity == "red"
    assert f.details["scrape_share_at_cap_waiting"] == 1.0
    assert f.details["queued_latency_share"] == pytest.approx(360 / 1200)
    assert "--max-num-seqs" in f.fix and "vllm:num_requests_waiting" in str(f.evidence[0])


def test_no_queue_when_nothing_waits(tmp_path: Path) -> None:
    p = tmp_path / "calm.prom"
    p.write_text("".join(scrape(1000 + 15 * i, 100 + i, 0) for i in range(4)))
    assert "queue-saturation" not in findings(p)


def test_kv_cache_pressure_with_preemptions(tmp_path: Path) -> None:
    p = tmp_path / "kv.prom"
    p.write_text(scrape(1000, 200, 0, kv=0.80, preempt=10, finished=100)
                 + scrape(1060, 220, 0, kv=0.97, preempt=60, finished=1100))
    (f,) = findings(p)["kv-cache-pressure"]
    # window: 50 preemptions for 1000 finished requests = 5% ≥ 1% → red
    assert f.severity == "red" and f.details["preemptions"] == 50
    assert f.details["preemptions_per_request"] == pytest.approx(0.05)
    assert f.details["kv_usage_max_pct"] == pytest.approx(97.0)
    assert "--gpu-memory-utilization" in f.fix and "--kv-cache-dtype fp8" in f.fix


def test_high_kv_without_preemption_is_yellow(tmp_path: Path) -> None:
    p = tmp_path / "kv.prom"
    p.write_text(scrape(1000, 200, 0, kv=0.95) + scrape(1060, 200, 0, kv=0.92))
    (f,) = findings(p)["kv-cache-pressure"]
    assert f.severity == "yellow"


def test_prefix_cache_miss(tmp_path: Path) -> None:
    p = tmp_path / "prefix.prom"
    p.write_text(scrape(1000, 50, 0, finished=0, queries=0, hits=0)
                 + scrape(1060, 50, 0, finished=500, queries=200000, hits=10000))
    (f,) = findings(p)["prefix-cache-miss"]
    assert f.severity == "yellow" and f.details["hit_rate_pct"] == pytest.approx(5.0)
    assert "--enable-prefix-caching" in f.fix


def test_prefix_cache_fine_when_hits_are_high(tmp_path: Path) -> None:
    p = tmp_path / "prefix.prom"
    p.write_text(scrape(1000, 50, 0) + scrape(1060, 50, 0, finished=500, queries=200000,
                                             hits=150000))
    assert "prefix-cache-miss" not in findings(p)


def bench(tmp_path: Path, **meta: object) -> Path:
    # the documented `vllm bench serve --save-result` keys, --metadata pairs in `meta`
    rec = {"date": "20260714-081253", "backend": "vllm", "model_id": "llama",
           "num_prompts": 200, "request_rate": "inf", "max_concurrency": 64, "completed": 200,
           "total_input_tokens": 819200, "total_output_tokens": 25600,
           "request_throughput": 4.8, "output_throughput": 616.9, "median_itl_ms": 21.0,
           "p99_itl_ms": 310.0, "median_ttft_ms": 640.0, "p99_ttft_ms": 2100.0, **meta}
    p = tmp_path / "result.json"
    p.write_text(json.dumps(rec))
    return p


def test_prefill_decode_interference_from_benchmark(tmp_path: Path) -> None:
    (f,) = findings(bench(tmp_path))["prefill-decode-interference"]
    # ITL p99 310 ms = 14.8× the 21 ms median, prompts 4096 tokens on average
    assert f.severity == "yellow" and f.details["isl"] == 4096.0
    assert f.details["itl_p99_over_p50"] == pytest.approx(310 / 21)
    assert "--max-num-batched-tokens" in f.fix
    (f,) = findings(bench(tmp_path, enable_chunked_prefill="false"))[
        "prefill-decode-interference"]
    assert f.severity == "red" and f.details["chunked_prefill"] == "off"


def test_short_prompts_are_not_interference(tmp_path: Path) -> None:
    p = bench(tmp_path, total_input_tokens=20000)  # 100 tokens per prompt
    assert "prefill-decode-interference" not in findings(p)


DMON = "#Entity   {tags}\nID\n{rows}"


def dmon(tmp_path: Path, tags: str, *rows: str) -> Path:
    p = tmp_path / "dmon.log"
    p.write_text(DMON.format(tags=tags, rows="".join(r + "\n" for r in rows)))
    return p


def test_busy_gpu_few_sms_is_below_roofline(tmp_path: Path) -> None:
    p = dmon(tmp_path, "GRACT  SMACT  DRAMA", "GPU 0  0.95  0.30  0.20", "GPU 0  0.97  0.32  0.22")
    (f,) = findings(p)["below-roofline"]
    assert f.severity == "yellow" and f.rigor == "L3"
    assert f.details["sm_active_pct"] == pytest.approx(31.0)


def test_dram_leads_is_memory_bound(tmp_path: Path) -> None:
    p = dmon(tmp_path, "GRACT  SMACT  TENSO  DRAMA", "GPU 0  0.98  0.90  0.10  0.85",
             "GPU 0  0.99  0.91  0.12  0.87")
    (f,) = findings(p)["memory-bandwidth-bound"]
    assert f.details["dram_active_pct"] == pytest.approx(86.0)
    assert "below-roofline" not in findings(p)


def test_low_util_with_running_requests_is_starved(tmp_path: Path) -> None:
    d = dmon(tmp_path, "GPUTL  SMACT", "GPU 0  30  0.25", "GPU 0  34  0.27")
    s = tmp_path / "engine.prom"
    s.write_text(scrape(1000, 32, 0) + scrape(1060, 32, 0))
    (f,) = findings(d, s)["gpu-idle"]
    assert f.severity == "red" and f.rigor == "L3"
    assert "32.0 requests running" in f.observation and "--async-scheduling" in f.fix

"""Metric readers on the three real metric files in ../shared/data/metrics, with every expected
number read from the file text by this test itself (plain string/regex parsing, no crossview
code); plus fixtures for formats with no public sample, written from the documented formats
(docs/formats.md, docs/input-formats.md) and marked SYNTHETIC where they are built."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from conftest import SHARED_DATA
from crossview.errors import InputError
from crossview.sources.counters import dcgmi, nvidia_smi, nvml_jsonl, prometheus
from crossview.sources.registry import pick_reader, read_all
from crossview.store.store import Store

DATA = SHARED_DATA / "metrics"
H100 = DATA / "nvidia-smi_h100_capture.txt"
VLLM = DATA / "vllm_v1_metrics_idle.prom"
T4 = DATA / "dcgm-exporter_t4.prom"
SKIP = "../shared/data not present: real metric-capture tests need it"


def real(path: Path) -> Path:
    if not path.is_file():
        pytest.skip(SKIP)
    return path


def rows(store: Store, sql: str, params: dict | None = None) -> list[tuple]:
    return store.sql(sql, params).fetchall()


# --------------------------------------------------------------------------- nvidia-smi H100


def _section_csv(text: str, banner: str) -> dict[str, str]:
    """The one data row of a capture section's query CSV, as {field: raw value}."""
    block = text.split(banner, 1)[1].split("\n\n", 1)[0].splitlines()
    header = next(line for line in block if line.startswith("timestamp,"))
    row = block[block.index(header) + 1]
    names = [re.sub(r"\s*\[.*\]$", "", f.strip()) for f in header.split(",")]
    return dict(zip(names, [v.strip() for v in row.split(",")], strict=True))


def _dmon_rows(text: str, banner: str) -> list[list[str]]:
    block = text.split(banner, 1)[1].split("\n\n", 1)[0].splitlines()
    return [line.split() for line in block if line.split() and line.split()[0].isdigit()]


def test_h100_capture_memory_used_under_load_and_sections() -> None:
    path = real(H100)
    text = path.read_text()
    load = _section_csv(text, "# load :: query-gpu")
    idle = _section_csv(text, "# idle :: query-gpu")
    assert load["memory.used"] == "19818 MiB" and load["utilization.gpu"] == "100 %"
    st = Store()
    rep = nvidia_smi.read(path, st)
    assert rep.status == "ok" and rep.problems == []
    got = dict(rows(st, "SELECT json_extract_string(labels, '$.section'), value FROM metrics"
                        " WHERE metric = 'mem_used' AND source = 'nvidia-smi'"))
    assert got == {"load": float(load["memory.used"].split()[0]),
                   "idle": float(idle["memory.used"].split()[0])}
    util = dict(rows(st, "SELECT json_extract_string(labels, '$.section'), value FROM metrics"
                         " WHERE metric = 'gpu_util' AND source = 'nvidia-smi'"))
    assert util == {"load": 100.0, "idle": float(idle["utilization.gpu"].split()[0])}
    # both dmon sections (idle, load): `pwr` column as printed, in order
    for section in ("idle", "load"):
        want = [float(r[1]) for r in _dmon_rows(text, f"# {section} :: dmon")]
        assert len(want) == 5
        have = [v for v, in rows(st, "SELECT value FROM metrics WHERE raw_name = 'pwr' AND"
                                     " json_extract_string(labels, '$.section') = $s ORDER BY seq",
                                 {"s": section})]
        assert have == want
    # per-process memory under load (--query-compute-apps), pid labels kept
    procs = re.findall(r"^\S+ \S+, NVIDIA H100[^,]*, [^,]*, [^,]*, [^,]*, (\d+), ([^,]+), "
                       r"(\d+) MiB$", text.split("# load :: query-compute-apps", 1)[1]
                       .split("\n\n", 1)[0], re.M)
    have = rows(st, "SELECT json_extract_string(labels, '$.pid'), value FROM metrics WHERE"
                    " metric = 'proc_mem_used' ORDER BY 1")
    assert have == sorted((pid, float(mib)) for pid, _, mib in procs) and len(procs) == 3
    name, mem = rows(st, "SELECT name, mem_bytes FROM devices")[0]
    assert name == load["name"] == "NVIDIA H100 80GB HBM3"
    assert mem == int(load["memory.total"].split()[0]) * 1048576


def test_h100_view_keeps_idle_and_load_apart() -> None:
    from crossview.analysis import analyze
    a = analyze([real(H100)])
    groups = {d.section: d for d in a.views.gpu_metrics.devices}
    assert set(groups) == {"idle", "load"}
    load = groups["load"]
    # pooled query row (631.95 W) + 5 dmon rows (631, 634, 633, 634, 636 W)
    assert load.get("power").mean == pytest.approx((631.95 + 631 + 634 + 633 + 634 + 636) / 6)
    assert load.get("mem_used").max == 19818.0 and load.get("gpu_util").mean == 100.0
    assert groups["idle"].get("gpu_util").mean == 0.0


# --------------------------------------------------------------------------- dcgm-exporter T4


def test_t4_scrape_model_name_gpu_count_and_hosts() -> None:
    path = real(T4)
    text = path.read_text()
    models = set(re.findall(r'modelName="([^"]+)"', text))
    uuids = set(re.findall(r'UUID="([^"]+)"', text))
    hosts = set(re.findall(r'Hostname="([^"]+)"', text))
    count = float(re.search(r"^DCGM_FI_DEV_COUNT\{[^}]*\} (\S+)$", text, re.M).group(1))
    assert models == {"Tesla T4"} and len(uuids) == 2 and len(hosts) == 2 and count == 1.0
    st = Store()
    prometheus.read(path, st)
    assert rows(st, "SELECT DISTINCT name FROM devices") == [("Tesla T4",)]
    assert rows(st, "SELECT value, unit FROM metrics WHERE metric = 'device_count'") == [
        (count, "GPUs")]
    assert {h for h, in rows(st, "SELECT DISTINCT json_extract_string(labels, '$.Hostname')"
                                 " FROM metrics")} == hosts
    fb = float(re.search(r"^DCGM_FI_DEV_FB_FREE\{[^}]*\} (\S+)$", text, re.M).group(1))
    assert rows(st, "SELECT value, unit, raw_name FROM metrics WHERE metric = 'mem_free'") == [
        (fb, "MiB", "DCGM_FI_DEV_FB_FREE")]
    n_samples = sum(1 for line in text.splitlines() if line and not line.startswith("#"))
    assert rows(st, "SELECT count(*) FROM metrics")[0][0] == n_samples


# --------------------------------------------------------------------------- vLLM scrape


def test_vllm_scrape_histograms_kept_as_buckets() -> None:
    path = real(VLLM)
    text = path.read_text()
    hist_families = re.findall(r"^# TYPE (\S+) histogram$", text, re.M)
    st = Store()
    prometheus.read(path, st)
    legacy = "vllm:time_per_output_token_seconds"  # V1's deprecated alias of ITL: dropped
    assert legacy in hist_families
    for fam in hist_families:
        if fam == legacy:
            continue
        want = re.findall(rf'^{re.escape(fam)}_bucket\{{.*?le="([^"]+)".*\}} (\S+)$', text, re.M)
        have = rows(st, "SELECT json_extract_string(labels, '$.le'), value FROM metrics WHERE"
                        " raw_name = $n AND mtype = 'bucket' ORDER BY seq, rowid",
                    {"n": fam + "_bucket"})
        assert [(le, float(v)) for le, v in want] == have, fam
    ttft = [le for le, in rows(st, "SELECT json_extract_string(labels, '$.le') FROM metrics"
                                   " WHERE metric = 'ttft' AND mtype = 'bucket'")]
    assert len(ttft) == 23 and ttft[-1] == "+Inf"  # 22 bounds + Inf, as in the file
    # `_created` twins are creation times, not samples, and the legacy alias duplicates ITL:
    # neither is stored; every other sample line is
    samples = [ln for ln in text.splitlines() if ln and not ln.startswith("#")]
    created = [ln for ln in samples if re.match(r"^\S+_created[{ ]", ln)]
    alias = [ln for ln in samples if ln.startswith(legacy + "_") and ln not in created]
    assert (len(samples), len(created), len(alias)) == (379, 24, 22)
    assert rows(st, "SELECT count(*) FROM metrics")[0][0] == len(samples) - 24 - 22
    info = json.loads(rows(st, "SELECT labels FROM metrics WHERE metric = 'cache_config'")[0][0])
    assert info["num_gpu_blocks"] == re.search(r'num_gpu_blocks="(\d+)"', text).group(1)
    # the deprecated V1 alias of ITL is dropped when the current name is present
    raw = {r for r, in rows(st, "SELECT DISTINCT raw_name FROM metrics WHERE metric = 'itl'")}
    assert raw == {"vllm:inter_token_latency_seconds" + p for p in ("_bucket", "_sum", "_count")}
    assert "vllm:time_per_output_token_seconds_bucket" in text


def test_malformed_scrape_lines_reported_good_lines_read(tmp_path: Path) -> None:
    # SYNTHETIC damage to the real scrape: three broken lines inserted after line 40
    lines = real(VLLM).read_text().splitlines()
    broken = ['vllm:num_requests_running{engine="0" 3.0', "this is not a metric line",
              'vllm:kv_cache_usage_perc{engine="0"} not_a_number']
    bad = tmp_path / "damaged.prom"
    bad.write_text("\n".join(lines[:40] + broken + lines[40:]) + "\n")
    st = Store()
    rep = prometheus.read(bad, st)
    # read in part: said in the status (issue 18), the good lines still read
    assert rep.status == "partial" and len(rep.problems) == 1
    assert rep.problems[0].startswith("partial: 3 malformed metrics line(s) skipped")
    for n in (41, 42, 43):
        assert f"line {n}:" in rep.problems[0]
    good = Store()
    prometheus.read(real(VLLM), good)
    assert rows(st, "SELECT count(*) FROM metrics") == rows(good, "SELECT count(*) FROM metrics")


# --------------------------------------------------------------------------- series of scrapes


def test_scrape_series_counters_become_rates(tmp_path: Path) -> None:
    # SYNTHETIC: two scrapes of the documented capture loop (`# scrape_time` before each);
    # the second is the real idle scrape with its generation counter and one ITL bucket raised
    text = real(VLLM).read_text()
    later = text.replace(
        'vllm:generation_tokens_total{engine="0",model_name="Qwen/Qwen1.5-0.5B-Chat"} 0.0',
        'vllm:generation_tokens_total{engine="0",model_name="Qwen/Qwen1.5-0.5B-Chat"} 1200.0')
    assert later != text
    path = tmp_path / "series.prom"
    path.write_text("# scrape_time 1762438500\n" + text + "# scrape_time 1762438560.5\n" + later)
    st = Store()
    rep = prometheus.read(path, st)
    assert rep.problems == []
    assert rows(st, "SELECT DISTINCT seq, ts_ns FROM metrics ORDER BY 1") == [
        (0, 1762438500 * 10**9), (1, 1762438560_500_000_000)]
    from crossview.scope.counters import resolve_metrics
    from crossview.scope.filter import Filter
    from crossview.scope.resolve import resolve
    from crossview.views.workload.serving import serving_summaries
    resolve_metrics(st, resolve(st, Filter()))
    s = next(x for x in serving_summaries(st) if x.model)
    c = s.counters["generation_tokens"]
    assert (c.increase, c.cumulative) == (1200.0, 1200.0)
    assert c.rate_per_s == pytest.approx(1200 / 60.5)
    assert s.over == "window" and s.scrapes == 2


# --------------------------------------------------------------------------- dcgmi dmon


DCGMI = """\
#Entity   GRACT        SMACT        TENSO        DRAMA        FBUSD        POWER
ID
GPU 1     N/A          N/A          N/A          N/A          N/A          N/A
GPU 0     N/A          N/A          N/A          N/A          N/A          N/A
GPU 1     0.984        0.930        0.000        0.252        70123        402.500
GPU 0     1.000        0.916        0.023        0.881        70200        650.000
GPU 1     0.990        0.940        0.010        0.260        70123        405.100
GPU 0     0.998        0.920        0.025        0.879        70201        652.000
"""


def test_dcgmi_dmon_documented_format(tmp_path: Path) -> None:
    # SYNTHETIC: written from the documented `dcgmi dmon -e 1001,1002,1004,1005,252,155`
    # layout (no public dcgmi log found; docs/formats.md): N/A on the first tick
    path = tmp_path / "dmon.log"
    path.write_text(DCGMI)
    assert pick_reader(path).kind == dcgmi.KIND
    st = Store()
    rep = dcgmi.read(path, st)
    assert rep.problems == []
    have = rows(st, "SELECT device, seq, value, unit FROM metrics WHERE metric = 'sm_active'"
                    " ORDER BY seq, device")
    assert have == [(0, 1, pytest.approx(91.6), "%"), (1, 1, pytest.approx(93.0), "%"),
                    (0, 2, pytest.approx(92.0), "%"), (1, 2, pytest.approx(94.0), "%")]
    assert rows(st, "SELECT value, unit FROM metrics WHERE metric = 'mem_used' AND device = 0"
                    " ORDER BY seq") == [(70200.0, "MiB"), (70201.0, "MiB")]
    assert rows(st, "SELECT count(*) FROM metrics WHERE ts_ns IS NOT NULL") == [(0,)]


def test_dcgmi_bad_row_reported(tmp_path: Path) -> None:
    # SYNTHETIC: a truncated row in the documented layout
    path = tmp_path / "dmon.txt"
    path.write_text(DCGMI + "GPU 0     0.5\n")
    rep = dcgmi.read(path, Store())
    assert rep.problems and "line 9" in rep.problems[0]


# --------------------------------------------------------------------------- nvidia-smi logs


def test_nvidia_smi_logging_loop_and_dmon_with_time(tmp_path: Path) -> None:
    # SYNTHETIC: `nvidia-smi --query-gpu=timestamp,index,name,utilization.gpu,memory.used,
    # power.draw --format=csv -l 1` (two GPUs, two ticks) and `nvidia-smi dmon -s pucm -o DT`
    csv = tmp_path / "smi.csv"
    csv.write_text(
        "timestamp, index, name, utilization.gpu [%], memory.used [MiB], power.draw [W]\n"
        "2026/07/14 08:00:00.000, 0, NVIDIA H200, 97 %, 120000 MiB, 650.10 W\n"
        "2026/07/14 08:00:00.000, 1, NVIDIA H200, 12 %, 3000 MiB, 120.00 W\n"
        "2026/07/14 08:00:01.000, 0, NVIDIA H200, 99 %, 120010 MiB, 655.30 W\n"
        "2026/07/14 08:00:01.000, 1, NVIDIA H200, [N/A], 3000 MiB, 121.00 W\n")
    st = Store()
    assert pick_reader(csv).kind == nvidia_smi.KIND
    nvidia_smi.read(csv, st)
    assert rows(st, "SELECT device, value FROM metrics WHERE metric = 'gpu_util' ORDER BY ts_ns,"
                    " device") == [(0, 97.0), (1, 12.0), (0, 99.0)]
    assert rows(st, "SELECT max(ts_ns) - min(ts_ns) FROM metrics") == [(1_000_000_000,)]
    dmon = tmp_path / "dmon.txt"
    dmon.write_text("\n".join([
        "#Date     Time     gpu  pwr gtemp mtemp  sm mem mclk pclk rxpci txpci",
        "#YYYYMMDD HH:MM:SS Idx    W     C     C   %   % MHz  MHz  MB/s  MB/s",
        " 20260714 08:00:00   0  640    60    70  98  45 3201 1980  1200   350",
        " 20260714 08:00:01   0  645    61    70  99  47 3201 1980     -   360"]) + "\n")
    st = Store()
    nvidia_smi.read(dmon, st)
    assert rows(st, "SELECT value, unit FROM metrics WHERE metric = 'pcie_rx'") == [
        (1.2e9, "B/s")]
    assert rows(st, "SELECT count(DISTINCT ts_ns) FROM metrics") == [(2,)]


# --------------------------------------------------------------------------- NVML JSONL


def test_nvml_jsonl_documented_format(tmp_path: Path) -> None:
    # SYNTHETIC: our own sampler's documented format (docs/input-formats.md)
    path = tmp_path / "nvml.jsonl"
    path.write_text(
        '{"format": "crossview-nvml", "version": 1, "hostname": "node7", "interval_ms": 100,'
        ' "devices": [{"index": 0, "name": "NVIDIA H200", "uuid": "GPU-1",'
        ' "mem_total_mib": 143771}]}\n'
        '{"ts_ns": 1000, "gpu": 0, "gpu_util_pct": 91, "mem_used_mib": 80000, "power_w": 600.5,'
        ' "pcie_tx_bytes_per_s": null}\n'
        'not json\n'
        '{"ts_ns": 2000, "gpu": 0, "gpu_util_pct": 95, "mem_used_mib": 80100, "power_w": 610.5}\n')
    st = Store()
    assert pick_reader(path).kind == nvml_jsonl.KIND
    rep = nvml_jsonl.read(path, st)
    assert rep.problems and "line 3" in rep.problems[0]
    assert rows(st, "SELECT ts_ns, value FROM metrics WHERE metric = 'gpu_util' ORDER BY 1") == [
        (1000, 91.0), (2000, 95.0)]
    assert rows(st, "SELECT name, mem_bytes FROM devices") == [("NVIDIA H200", 143771 * 1048576)]


# --------------------------------------------------------------------------- engines


SGLANG = """\
# TYPE sglang:num_running_reqs gauge
sglang:num_running_reqs{model_name="Qwen/Qwen3-8B"} 48.0
# TYPE sglang:num_queue_reqs gauge
sglang:num_queue_reqs{model_name="Qwen/Qwen3-8B"} 7.0
# TYPE sglang:token_usage gauge
sglang:token_usage{model_name="Qwen/Qwen3-8B"} 0.93
# TYPE sglang:cache_hit_rate gauge
sglang:cache_hit_rate{model_name="Qwen/Qwen3-8B"} 0.12
# TYPE sglang:time_to_first_token_seconds histogram
sglang:time_to_first_token_seconds_bucket{le="0.1",model_name="Qwen/Qwen3-8B"} 10.0
sglang:time_to_first_token_seconds_bucket{le="0.5",model_name="Qwen/Qwen3-8B"} 90.0
sglang:time_to_first_token_seconds_bucket{le="+Inf",model_name="Qwen/Qwen3-8B"} 100.0
sglang:time_to_first_token_seconds_sum{model_name="Qwen/Qwen3-8B"} 25.0
sglang:time_to_first_token_seconds_count{model_name="Qwen/Qwen3-8B"} 100.0
"""

TRITON = """\
# TYPE nv_inference_request_success counter
nv_inference_request_success{model="resnet",version="1"} 2000
# TYPE nv_inference_queue_duration_us counter
nv_inference_queue_duration_us{model="resnet",version="1"} 3000000
# TYPE nv_inference_request_duration_us counter
nv_inference_request_duration_us{model="resnet",version="1"} 9000000
# TYPE nv_inference_pending_request_count gauge
nv_inference_pending_request_count{model="resnet",version="1"} 4
# TYPE nv_gpu_utilization gauge
nv_gpu_utilization{gpu_uuid="GPU-abc"} 0.55
"""

DYNAMO = """\
# TYPE dynamo_frontend_queued_requests gauge
dynamo_frontend_queued_requests{model="llama"} 3
# TYPE dynamo_frontend_inflight_requests gauge
dynamo_frontend_inflight_requests{model="llama"} 64
# TYPE dynamo_frontend_inter_token_latency_seconds histogram
dynamo_frontend_inter_token_latency_seconds_bucket{model="llama",le="0.01"} 50
dynamo_frontend_inter_token_latency_seconds_bucket{model="llama",le="0.05"} 100
dynamo_frontend_inter_token_latency_seconds_bucket{model="llama",le="+Inf"} 100
dynamo_frontend_inter_token_latency_seconds_sum{model="llama"} 1.5
dynamo_frontend_inter_token_latency_seconds_count{model="llama"} 100
"""


@pytest.mark.parametrize("text,engine,checks", [
    (SGLANG, "sglang", {"requests_running": 48.0, "requests_waiting": 7.0,
                        "kv_cache_usage": 93.0, "prefix_cache_hit_rate": 12.0}),
    (TRITON, "triton", {"requests_finished": 2000.0, "queue_time_total": 3.0,
                        "request_time_total": 9.0, "requests_waiting": 4.0, "gpu_util": 55.0}),
    (DYNAMO, "dynamo", {"requests_waiting": 3.0, "requests_inflight": 64.0}),
], ids=["sglang", "triton", "dynamo"])
def test_engine_names_map_to_canonical(tmp_path: Path, text: str, engine: str,
                                       checks: dict[str, float]) -> None:
    # SYNTHETIC: scrapes written from the documented metric names (docs/formats.md)
    path = tmp_path / f"{engine}.prom"
    path.write_text(text)
    st = Store()
    rep = prometheus.read(path, st)
    assert rep.problems == [] and engine in rep.kind
    for metric, want in checks.items():
        (got,) = rows(st, "SELECT value FROM metrics WHERE metric = $m", {"m": metric})[0]
        assert got == pytest.approx(want), metric


def test_histogram_quantiles_from_buckets(tmp_path: Path) -> None:
    # SYNTHETIC sglang scrape above: 10 obs ≤ 0.1 s, 80 in (0.1, 0.5], 10 above 0.5 s
    from crossview.analysis import analyze
    path = tmp_path / "sglang.prom"
    path.write_text(SGLANG)
    s = analyze([path]).views.gpu_metrics.serving[0]
    h = s.hist("ttft")
    assert h.count == 100 and h.mean == pytest.approx(0.25)
    # bucket bounds, never interpolated (issue 17): rank 50 and 90 fall in (0.1, 0.5]; the
    # mean 0.25 s clips nothing there (0.25 ÷ 0.5 = 0.5, 0.25 ÷ 0.1 = 2.5)
    assert (h.p50.lo, h.p50.hi, h.p50.clipped) == (0.1, 0.5, False)
    assert (h.p90.lo, h.p90.hi) == (0.1, 0.5)
    # rank 99 is in the +Inf bucket: above 0.5 s, at most mean ÷ 0.01 = 25 s
    assert h.p99.lo == 0.5 and h.p99.hi == pytest.approx(25.0) and h.p99.clipped


# --------------------------------------------------------------------------- bad input


def test_unknown_text_format_one_clear_line(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("just some notes\nnothing to see here\n")
    with pytest.raises(InputError) as e:
        pick_reader(path)
    assert e.value.problem.startswith("unsupported format: not a ")
    assert "Prometheus /metrics scrape" in e.value.problem and "\n" not in e.value.problem


def test_empty_scrape_rejected(tmp_path: Path) -> None:
    path = tmp_path / "empty.prom"
    path.write_text("# HELP x nothing\n")
    reps = read_all([path], Store())
    assert reps[0].status == "empty" and "no metric samples" in reps[0].problems[0]


def test_folder_takes_metric_txt_but_not_other_text(tmp_path: Path) -> None:
    (tmp_path / "README.txt").write_text("how this bundle was captured\n")
    (tmp_path / "dmon.log").write_text(DCGMI)
    reps = read_all([tmp_path], Store())
    # the README is not read, but said (status skipped: a warning line, not an error)
    assert sorted((Path(r.path).name, r.status) for r in reps) == [
        ("README.txt", "skipped"), ("dmon.log", "ok")]


def test_non_finite_values_and_unknown_metrics(tmp_path: Path) -> None:
    # SYNTHETIC: NaN = no observation (skipped silently), +Inf is reported; names crossview has
    # no mapping for are stored under their own name and said to be uninterpreted
    from crossview.analysis import analyze
    path = tmp_path / "odd.prom"
    path.write_text('# TYPE vllm:num_requests_running gauge\n'
                    'vllm:num_requests_running{model_name="m"} NaN\n'
                    '# TYPE vllm:kv_cache_usage_perc gauge\n'
                    'vllm:kv_cache_usage_perc{model_name="m"} +Inf\n'
                    'my_app_queue_depth 3\n')
    a = analyze([path])
    assert a.artifacts[0].problems == ["1 sample(s) with an infinite value skipped"]
    gm = a.views.gpu_metrics
    assert gm.samples == 1 and gm.serving == [] and gm.unmapped == [
        "odd.prom: 1 samples (my_app_queue_depth)"]

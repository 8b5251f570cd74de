"""`crossview capture vllm` end to end against a TEST DOUBLE of the engine's endpoints
(tests/vllm_double.py — a small local HTTP server, not vLLM) and a test double of
`vllm bench serve` (writes a result JSON in vLLM's format). Checked: the calls and their order,
the files in the bundle, that crossview reads them back (numbers computed from what the double
served), an unreachable engine (one error line, exit 2, nothing written) and /stop_profile
failing midway (bundle still written, the problem under capture.problems)."""

from __future__ import annotations

import json
import shlex
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

import vllm_double
from conftest import run_cli
from crossview.sources.bench import vllm_bench
from crossview.sources.counters import prometheus
from crossview.store.store import Store


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return run_cli("capture", *args, timeout=120)


@pytest.fixture
def engine(tmp_path: Path):
    d = vllm_double.EngineDouble(tmp_path / "server-traces").start()
    yield d
    d.stop()


def _bench(tmp_path: Path) -> str:
    script = tmp_path / "fake_bench.py"
    script.write_text(vllm_double.FAKE_BENCH)
    return (f"{shlex.quote(sys.executable)} {script} --model {vllm_double.MODEL} "
            "--max-concurrency 4 --num-prompts 8 --metadata arm=baseline gpu_node=n7")


def _not_nvml(problems: list[str]) -> list[str]:
    # the double listens on 127.0.0.1, so the capture probes this (GPU-less) machine too
    return [p for p in problems if not p.startswith("NVML")]


def test_end_to_end(engine: vllm_double.EngineDouble, tmp_path: Path) -> None:
    out = tmp_path / "bundle"
    r = _cli("vllm", "--url", engine.url, "-o", str(out), "--interval", "0.2",
             "--trace-dir", str(engine.trace_dir), "--bench", _bench(tmp_path))
    assert r.returncode == 0, r.stderr
    calls = [c for c in engine.calls if c != "GET /metrics"]
    assert calls == ["GET /v1/models", "GET /version", "POST /start_profile",
                     "POST /stop_profile"]
    # /metrics scraped before /start_profile and after /stop_profile
    assert engine.calls.index("GET /metrics") < engine.calls.index("POST /start_profile")
    assert engine.calls[-1] == "GET /metrics"

    meta = yaml.safe_load((out / "bundle.yaml").read_text())
    ctx = meta["context"]
    assert ctx["model"] == vllm_double.MODEL and ctx["max_model_len"] == 4096
    assert ctx["engine"] == "vllm" and ctx["engine_version"] == vllm_double.VERSION
    assert ctx["concurrency"] == 4 and ctx["num_prompts"] == 8
    assert ctx["metadata"] == {"arm": "baseline", "gpu_node": "n7"}
    assert ctx["extra"]["regime"] == "serving"
    assert _not_nvml(meta["capture"]["problems"]) == []
    assert set(meta["artifacts"]) == {"metrics/vllm.prom", "bench/result.json",
                                      "traces/node0_1234.1700000000.pt.trace.json.gz"}

    # every scrape the double answered is in the file, each with its clock line
    prom = (out / "metrics" / "vllm.prom").read_text()
    assert prom.count("# scrape_time ") == engine.scrapes >= 2
    st = Store()
    assert prometheus.read(out / "metrics" / "vllm.prom", st).status == "ok"
    first, last = st.sql("SELECT min(value), max(value) FROM metrics WHERE raw_name ="
                         " 'vllm:prompt_tokens_total'").fetchall()[0]
    assert (first, last) == (1000.0, engine.scrapes * 1000.0)  # the double's counter
    assert vllm_bench.read(out / "bench" / "result.json", st).status == "ok"
    assert st.sql("SELECT value FROM trials WHERE metric = 'request_throughput'"
                  ).fetchall() == [(4.0,)]
    # the copied trace is byte-identical to what the server wrote
    assert (out / "traces" / "node0_1234.1700000000.pt.trace.json.gz").read_bytes() == \
        vllm_double.TRACE.read_bytes()

    a = run_cli("analyze", out, "--format", "json", timeout=120)
    assert a.returncode == 0, a.stderr
    assert "vllm.prom" in a.stdout and "result.json" in a.stdout


def test_engine_unreachable(tmp_path: Path) -> None:
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    out = tmp_path / "bundle"
    r = _cli("vllm", "--url", f"http://127.0.0.1:{port}", "-o", str(out), "--duration", "0")
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in r.stderr
    assert lines[0].startswith(f"crossview: error: http://127.0.0.1:{port}: engine unreachable")
    assert not out.exists()


def test_stop_profile_fails_midway(engine: vllm_double.EngineDouble, tmp_path: Path) -> None:
    engine.stop_status = 500
    out = tmp_path / "bundle"
    r = _cli("vllm", "--url", engine.url, "-o", str(out), "--interval", "0",
             "--trace-dir", str(engine.trace_dir), "--bench", _bench(tmp_path))
    assert r.returncode == 0, r.stderr  # the bench itself succeeded
    assert "problem(s) recorded" in r.stderr
    meta = yaml.safe_load((out / "bundle.yaml").read_text())
    problems = _not_nvml(meta["capture"]["problems"])
    assert problems[0].startswith("profiler stop failed: POST ") and "HTTP 500" in problems[0]
    assert any("no trace file appeared" in p for p in problems)
    # the rest of the capture is still there: scrapes before/after and the bench result
    assert (out / "bench" / "result.json").exists()
    assert (out / "metrics" / "vllm.prom").read_text().count("# scrape_time ") == 2
    assert json.loads((out / "bench" / "result.json").read_text())["arm"] == "baseline"

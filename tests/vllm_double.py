"""A TEST DOUBLE of a vLLM OpenAI server's capture endpoints (not vLLM): /v1/models, /version,
/metrics (counters that grow by a fixed amount per scrape), POST /start_profile and
/stop_profile. On /stop_profile it writes a trace file into its profiler folder the way vLLM
does (VLLM_TORCH_PROFILER_DIR) — a copy of the repo's real CPU Kineto trace
(examples/cpu_tiny_decode.pt.trace.json.gz). `stop_status` makes /stop_profile fail."""

from __future__ import annotations

import json
import shutil
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TRACE = REPO / "examples" / "cpu_tiny_decode.pt.trace.json.gz"
MODEL = "test-double/tiny-model"
VERSION = "0.11.0"
PROMPT_TOKENS_PER_SCRAPE = 1000  # vllm:prompt_tokens_total grows by this per scrape


@dataclass
class EngineDouble:
    trace_dir: Path
    stop_status: int = 200
    calls: list[str] = field(default_factory=list)
    scrapes: int = 0
    server: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        assert self.server is not None
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def metrics_text(self) -> str:
        self.scrapes += 1
        n = self.scrapes
        return (
            "# HELP vllm:prompt_tokens_total Number of prefill tokens processed.\n"
            "# TYPE vllm:prompt_tokens_total counter\n"
            f'vllm:prompt_tokens_total{{engine="0",model_name="{MODEL}"}} '
            f"{n * PROMPT_TOKENS_PER_SCRAPE}.0\n"
            "# HELP vllm:num_requests_running Number of requests in model execution batches.\n"
            "# TYPE vllm:num_requests_running gauge\n"
            f'vllm:num_requests_running{{engine="0",model_name="{MODEL}"}} 4.0\n')

    def start(self) -> EngineDouble:
        self.trace_dir.mkdir(parents=True, exist_ok=True)  # vLLM creates it at start-up
        double = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:  # quiet
                pass

            def _send(self, status: int, body: str, ctype: str = "application/json") -> None:
                data = body.encode()
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                double.calls.append(f"GET {self.path}")
                if self.path == "/v1/models":
                    self._send(200, json.dumps({"object": "list", "data": [
                        {"id": MODEL, "object": "model", "max_model_len": 4096}]}))
                elif self.path == "/version":
                    self._send(200, json.dumps({"version": VERSION}))
                elif self.path == "/metrics":
                    self._send(200, double.metrics_text(), "text/plain; version=0.0.4")
                else:
                    self._send(404, '{"detail": "Not Found"}')

            def do_POST(self) -> None:
                double.calls.append(f"POST {self.path}")
                if self.path == "/start_profile":
                    self._send(200, "")
                elif self.path == "/stop_profile":
                    if double.stop_status != 200:
                        self._send(double.stop_status, '{"detail": "profiler stop failed"}')
                        return
                    double.trace_dir.mkdir(parents=True, exist_ok=True)
                    shutil.copy(TRACE, double.trace_dir / "node0_1234.1700000000.pt.trace.json.gz")
                    self._send(200, "")
                else:
                    self._send(404, '{"detail": "Not Found"}')

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()


# A TEST DOUBLE of `vllm bench serve --save-result`: writes a result JSON in vLLM's format
# (the fields crossview's vllm-bench reader needs), --metadata pairs merged in as vLLM does.
FAKE_BENCH = r'''
import json, sys, pathlib
a = sys.argv[1:]
def opt(name, default=None):
    return a[a.index(name) + 1] if name in a else default
meta = {}
if "--metadata" in a:
    for kv in a[a.index("--metadata") + 1:]:
        if kv.startswith("--"):
            break
        k, _, v = kv.partition("=")
        meta[k] = v
res = {"date": "20261130-031500", "backend": "vllm", "model_id": opt("--model"),
       "tokenizer_id": opt("--model"), "num_prompts": int(opt("--num-prompts", "8")),
       "request_rate": "inf", "burstiness": 1.0,
       "max_concurrency": int(opt("--max-concurrency", "1")), "duration": 2.0,
       "completed": 8, "failed": 0, "total_input_tokens": 8192, "total_output_tokens": 1024,
       "request_throughput": 4.0, "output_throughput": 512.0, "total_token_throughput": 4608.0,
       "mean_ttft_ms": 50.0, "median_ttft_ms": 45.0, "std_ttft_ms": 5.0, "p99_ttft_ms": 80.0,
       "mean_tpot_ms": 10.0, "median_tpot_ms": 9.5, "std_tpot_ms": 1.0, "p99_tpot_ms": 15.0,
       "mean_itl_ms": 10.0, "median_itl_ms": 9.0, "std_itl_ms": 2.0, "p99_itl_ms": 20.0}
res.update(meta)
out = pathlib.Path(opt("--result-dir", ".")) / opt("--result-filename", "result.json")
out.parent.mkdir(parents=True, exist_ok=True)
out.write_text(json.dumps(res))

'''

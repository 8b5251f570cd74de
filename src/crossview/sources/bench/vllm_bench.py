"""`vllm bench serve --save-result` JSON (+ `--save-detailed` arrays) and `vllm bench sweep`
output (`SERVE-…-BENCH-…/run=N.json`, `summary.json` = the list of run records).

Each result is one trial. Its metrics (throughputs, mean/median/std/pNN of ttft/tpot/itl/e2el
in ms) go to `trials`; everything else that is a scalar — the `--metadata KEY=VALUE` pairs and
the sweep's serve/bench overrides — describes the trial and goes to its Context (known keys to
their field, all of them to `metadata`). Per-request arrays go to `bench_requests`.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import msgspec

from crossview.core.context import Context
from crossview.errors import InputError
from crossview.sources.artifact_report import ArtifactReport
from crossview.sources.bench.trials import TrialRows, apply, commit
from crossview.store.store import Store

KIND = "vllm-bench"
_UNITS = {
    "duration": "s", "completed": "requests", "failed": "requests",
    "total_input_tokens": "tokens", "total_output_tokens": "tokens",
    "request_throughput": "req/s", "request_goodput": "req/s",
    "output_throughput": "tok/s", "total_token_throughput": "tok/s",
    "max_output_tokens_per_s": "tok/s", "max_concurrent_requests": "requests",
}
_LATENCY = re.compile(r"^(mean|median|std|p\d+(?:\.\d+)?)_(ttft|tpot|itl|e2el)_ms$")
# result keys that are neither metrics nor context (arrays, free text)
_SKIP = {"input_lens", "output_lens", "ttfts", "itls", "generated_texts", "errors",
         "response_details", "run_number", "start_times", "percentiles_ttft_ms"}
_RUN_FILE = re.compile(r"^run=(-?\d+)\.json$")


def sniff(head: bytes, path: Path) -> bool:
    h = head.lstrip()
    return h[:1] in (b"{", b"[") and b'"request_throughput"' in head and (
        b'"model_id"' in head or b'"completed"' in head or b'"output_throughput"' in head)


def _records(obj: Any) -> list[dict[str, Any]]:
    if isinstance(obj, dict):
        return [obj]
    if isinstance(obj, list) and all(isinstance(r, dict) for r in obj):
        return obj
    return []


def _arm(path: Path, rec: dict[str, Any]) -> str:
    for key in ("arm", "label"):
        if isinstance(rec.get(key), str) and rec[key]:
            return rec[key]
    if _RUN_FILE.match(path.name) or path.name == "summary.json":
        return path.parent.name  # the sweep's SERVE-…-BENCH-… combination
    return "default"


def _requests(t: TrialRows, arm: str, trial: int, rec: dict[str, Any]) -> None:
    ins, outs = rec.get("input_lens"), rec.get("output_lens")
    ttfts, itls, errs = rec.get("ttfts"), rec.get("itls"), rec.get("errors")
    if not isinstance(ttfts, list) or not isinstance(itls, list):
        return
    n = len(ttfts)
    for i in range(n):
        t.requests.append({
            "arm": arm, "trial": trial, "request": i,
            "input_len": ins[i] if isinstance(ins, list) and i < len(ins) else None,
            "output_len": outs[i] if isinstance(outs, list) and i < len(outs) else None,
            "ttft_s": ttfts[i] if isinstance(ttfts[i], int | float) else None,
            "itl_s": [x for x in itls[i] if isinstance(x, int | float)]
            if i < len(itls) and isinstance(itls[i], list) else None,
            "error": errs[i] if isinstance(errs, list) and i < len(errs) and errs[i] else None,
        })


def read(path: Path, store: Store) -> ArtifactReport:
    path = Path(path)
    try:
        obj = msgspec.json.decode(path.read_bytes())
    except msgspec.DecodeError as e:
        raise InputError(path, f"invalid JSON: {str(e)[:120]}") from None
    except OSError as e:
        raise InputError(path, f"cannot read: {e.strerror or e}") from None
    recs = _records(obj)
    if not recs or not any("request_throughput" in r for r in recs):
        raise InputError(path, "not a `vllm bench serve` result: no request_throughput",
                         "unsupported")
    t = TrialRows()
    problems: list[str] = []
    m = _RUN_FILE.match(path.name)
    for i, rec in enumerate(recs):
        trial = rec.get("run_number", int(m.group(1)) if m else i)
        if not isinstance(trial, int):
            trial = i
        if trial < 0:
            problems.append(f"record {i}: warm-up run (run_number {trial}) skipped")
            continue
        arm = _arm(path, rec)
        ctx = Context(bench="vllm bench serve", engine="vllm")
        for key, value in rec.items():
            if key in _SKIP:
                continue
            unit = _UNITS.get(key)
            lat = _LATENCY.match(key)
            if (unit or lat) and isinstance(value, int | float) and not isinstance(value, bool):
                t.add(arm, trial, key, float(value), unit or "ms")
            elif not isinstance(value, list | dict):
                apply(ctx, key, value, metadata=key not in _UNITS)
        done = rec.get("completed")
        if isinstance(done, int) and done > 0:
            if isinstance(rec.get("total_input_tokens"), int | float):
                ctx.isl_measured_mean = round(rec["total_input_tokens"] / done, 1)
            if isinstance(rec.get("total_output_tokens"), int | float):
                ctx.osl_measured_mean = round(rec["total_output_tokens"] / done, 1)
        # the fixed keys vLLM writes are context, not user metadata
        for k in ("date", "backend", "endpoint_type", "label", "model_id", "tokenizer_id",
                  "num_prompts", "request_rate", "burstiness", "max_concurrency"):
            ctx.metadata.pop(k, None)
        t.contexts[(arm, trial)] = ctx
        _requests(t, arm, trial, rec)
    return commit(store, path, KIND, t, problems)

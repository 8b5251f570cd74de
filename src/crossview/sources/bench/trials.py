"""Collect benchmark trials, their Contexts and per-request detail; write them at once."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa

from crossview.core.context import Context
from crossview.errors import InputError
from crossview.sources.artifact_report import ArtifactReport
from crossview.store.store import Store

# recorded key → Context field, for --metadata pairs, sweep overrides and generic columns
CONTEXT_KEYS: dict[str, str] = {
    "model": "model", "model_id": "model", "model_name": "model", "tokenizer_id": "tokenizer",
    "tokenizer": "tokenizer", "hardware": "hardware", "hw": "hardware", "gpu": "gpu",
    "gpu_name": "gpu", "gpu_count": "gpu_count", "num_gpus": "gpu_count",
    "hostname": "hostname", "host_name": "hostname", "node": "hostname",
    "gpu_uuids": "gpu_uuids", "quantization": "quantization", "kv_cache_dtype": "kv_cache_dtype",
    "tp": "tp", "tensor_parallel_size": "tp", "dp": "dp", "data_parallel_size": "dp",
    "pp": "pp", "pipeline_parallel_size": "pp", "ep": "ep",
    "max_num_seqs": "max_num_seqs", "max_num_batched_tokens": "max_num_batched_tokens",
    "gpu_memory_utilization": "gpu_memory_utilization", "max_model_len": "max_model_len",
    "enable_chunked_prefill": "enable_chunked_prefill",
    "enable_prefix_caching": "enable_prefix_caching", "enforce_eager": "enforce_eager",
    "dataset": "dataset", "dataset_name": "dataset", "isl": "isl", "input_len": "isl",
    "random_input_len": "isl", "osl": "osl", "output_len": "osl",
    "random_output_len": "osl", "concurrency": "concurrency",
    "max_concurrency": "concurrency", "request_rate": "request_rate",
    "burstiness": "burstiness", "num_prompts": "num_prompts", "engine": "engine",
    "engine_version": "engine_version", "vllm_version": "engine_version",
    "backend": "backend", "endpoint_type": "backend", "date": "date",
}


def scalar(v: Any) -> str | int | float | bool | None:
    """A JSON scalar kept as is; "true"/"false"/numbers in text become typed values."""
    if isinstance(v, float) and not math.isfinite(v):
        return str(v)
    if isinstance(v, bool | int | float) or v is None:
        return v
    if isinstance(v, str):
        low = v.strip().lower()
        if low in ("true", "false"):
            return low == "true"
        try:
            f = float(v)
        except ValueError:
            return v
        if not math.isfinite(f):
            return v  # "inf" request rate stays text (JSON has no infinity)
        return int(f) if f.is_integer() and "." not in v and "e" not in low else f
    return None


def apply(ctx: Context, key: str, value: Any, metadata: bool) -> None:
    """Put one recorded pair into the Context (known field) or its metadata."""
    name = CONTEXT_KEYS.get(key)
    val = scalar(value)
    if name is not None and val is not None:
        setattr(ctx, name, val)
    if metadata and value is not None and not isinstance(value, list | dict):
        ctx.metadata[key] = str(value)


@dataclass
class TrialRows:
    arm: list[str] = field(default_factory=list)
    trial: list[int] = field(default_factory=list)
    metric: list[str] = field(default_factory=list)
    value: list[float] = field(default_factory=list)
    unit: list[str] = field(default_factory=list)
    contexts: dict[tuple[str, int], Context] = field(default_factory=dict)
    requests: list[dict[str, Any]] = field(default_factory=list)

    def add(self, arm: str, trial: int, metric: str, value: float, unit: str) -> None:
        if value is None or (isinstance(value, float) and math.isnan(value)):
            return
        self.arm.append(arm)
        self.trial.append(trial)
        self.metric.append(metric)
        self.value.append(float(value))
        self.unit.append(unit)

    def __len__(self) -> int:
        return len(self.metric)


def commit(store: Store, path: Path, kind: str, t: TrialRows, problems: list[str]
           ) -> ArtifactReport:
    if len(t) == 0:
        detail = f" ({problems[0]})" if problems else ""
        raise InputError(path, f"no benchmark trial results could be read{detail}", "empty")
    aid = store.new_artifact_id()
    n = len(t)
    store.append("trials", pa.table({
        "artifact_id": pa.array([aid] * n, pa.int32()), "arm": pa.array(t.arm, pa.string()),
        "trial": pa.array(t.trial, pa.int32()), "metric": pa.array(t.metric, pa.string()),
        "value": pa.array(t.value, pa.float64()), "unit": pa.array(t.unit, pa.string()),
    }))
    keys = list(t.contexts)
    store.append("context", pa.table({
        "artifact_id": pa.array([aid] * len(keys), pa.int32()),
        "arm": pa.array([a for a, _ in keys], pa.string()),
        "trial": pa.array([r for _, r in keys], pa.int32()),
        "context": pa.array([json.dumps(t.contexts[k].to_dict(), sort_keys=True)
                             for k in keys], pa.string()),
    }))
    if t.requests:
        cols = ("arm", "trial", "request", "input_len", "output_len", "ttft_s", "itl_s", "error")
        data = {c: [r.get(c) for r in t.requests] for c in cols}
        store.append("bench_requests", pa.table({
            "artifact_id": pa.array([aid] * len(t.requests), pa.int32()),
            "arm": pa.array(data["arm"], pa.string()),
            "trial": pa.array(data["trial"], pa.int32()),
            "request": pa.array(data["request"], pa.int32()),
            "input_len": pa.array(data["input_len"], pa.int32()),
            "output_len": pa.array(data["output_len"], pa.int32()),
            "ttft_s": pa.array(data["ttft_s"], pa.float64()),
            "itl_s": pa.array(data["itl_s"], pa.list_(pa.float64())),
            "error": pa.array(data["error"], pa.string()),
        }))
    store.add_artifact(artifact_id=aid, path=str(path), kind=kind, bytes=path.stat().st_size,
                       status="ok", problems=problems, rigor="bench", events=n)
    return ArtifactReport(path=str(path), kind=kind, status="ok", problems=problems,
                          artifact_id=aid)

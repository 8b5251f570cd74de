"""Context: the full-context descriptor of a measurement (design.md "Core types").

Two numbers are comparable only when their Contexts match on everything but the lever under
test. A field nobody recorded is explicitly "unknown" in every output, never dropped.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

UNKNOWN = "unknown"

Value = str | int | float | bool | None


@dataclass
class Context:
    # model and hardware
    model: Value = None
    tokenizer: Value = None
    hardware: Value = None  # hw key (→ sol_ceilings.yaml) when known
    gpu: Value = None  # GPU name as recorded
    gpu_count: Value = None
    hostname: Value = None
    gpu_uuids: Value = None
    quantization: Value = None
    kv_cache_dtype: Value = None
    # parallelism and serving config
    tp: Value = None
    dp: Value = None
    pp: Value = None
    ep: Value = None
    max_num_seqs: Value = None
    max_num_batched_tokens: Value = None
    gpu_memory_utilization: Value = None
    max_model_len: Value = None
    enable_chunked_prefill: Value = None
    enable_prefix_caching: Value = None
    enforce_eager: Value = None
    # workload
    dataset: Value = None
    isl: Value = None  # input (prompt) length, tokens; mean measured when not configured
    osl: Value = None  # output length, tokens
    isl_measured_mean: Value = None  # total input tokens ÷ completed requests
    osl_measured_mean: Value = None
    concurrency: Value = None
    request_rate: Value = None  # requests/s ("inf" = all at once)
    burstiness: Value = None
    num_prompts: Value = None
    # stack
    engine: Value = None
    engine_version: Value = None
    backend: Value = None  # bench backend / endpoint type
    bench: Value = None  # which load generator wrote the result
    date: Value = None
    metadata: dict[str, str] = field(default_factory=dict)  # --metadata KEY=VALUE pairs

    def to_dict(self) -> dict[str, Any]:
        """Every field present; None becomes the explicit "unknown"."""
        out: dict[str, Any] = {}
        for f in fields(self):
            v = getattr(self, f.name)
            out[f.name] = dict(v) if f.name == "metadata" else (UNKNOWN if v is None else v)
        return out

    def known(self) -> dict[str, Value]:
        return {f.name: getattr(self, f.name) for f in fields(self)
                if f.name != "metadata" and getattr(self, f.name) is not None}

    def describe(self, keys: tuple[str, ...] = ("model", "gpu", "concurrency", "isl", "osl",
                                                 "request_rate")) -> str:
        """One human line: the fields that identify the measurement (unknown ones named)."""
        d = self.to_dict()
        return ", ".join(f"{k} {d[k]}" for k in keys)

    @staticmethod
    def field_names() -> tuple[str, ...]:
        return tuple(f.name for f in fields(Context) if f.name != "metadata")

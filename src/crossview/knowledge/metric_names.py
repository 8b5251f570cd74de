"""Metric-name tables (gpu_metrics.yaml, serving_metrics.yaml): recorded name → canonical."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from crossview.knowledge.loader import load_yaml


@dataclass(frozen=True)
class Canon:
    metric: str  # canonical name
    unit: str  # unit the value is stored in
    scale: float = 1.0  # stored = recorded × scale
    legacy: bool = False  # an older name of a quantity that also has a current name
    alias: bool = False  # a second column for the same quantity (kept only if the first lacks)
    engine: str | None = None  # vllm | sglang | triton | dynamo for serving names
    kind: str = "gauge"  # gauge | counter | histogram | info (serving canonical kind)


def _canon(entry: dict, units: dict, engine: str | None = None) -> Canon:
    meta = units[entry["metric"]]
    return Canon(entry["metric"], meta.get("unit", ""), float(entry.get("scale", 1.0)),
                 bool(entry.get("legacy", False)), bool(entry.get("alias", False)), engine,
                 meta.get("kind", "gauge"))


@cache
def _gpu() -> dict[str, dict[str, Canon]]:
    d = load_yaml("gpu_metrics.yaml")
    units = d["canonical"]
    return {src: {name: _canon(e, units) for name, e in table.items()}
            for src, table in d.items() if src != "canonical"}


@cache
def _serving() -> dict[str, Canon]:
    d = load_yaml("serving_metrics.yaml")
    units = d["canonical"]
    gpu_units = load_yaml("gpu_metrics.yaml")["canonical"]
    out: dict[str, Canon] = {}
    for engine, table in d["engines"].items():
        for name, e in table.items():
            out[name] = _canon(e, units, engine)
    for name, e in d["gpu"].items():
        out[name] = _canon(e, gpu_units, None)
    return out


def gpu_name(source: str, name: str) -> Canon | None:
    """A hardware counter's canonical form for a source (dcgm-exporter, dcgmi, nvidia-smi,
    nvidia-smi-dmon, nvml); None when the name is not in the table."""
    return _gpu().get(source, {}).get(name)


def serving_name(family: str) -> Canon | None:
    """A serving-engine (or engine-exported GPU) family's canonical form. Counters match
    with or without their exported `_total` suffix."""
    table = _serving()
    hit = table.get(family)
    if hit is None and family.endswith("_total"):
        hit = table.get(family[: -len("_total")])
    return hit


@cache
def serving_canonical() -> dict[str, dict]:
    return dict(load_yaml("serving_metrics.yaml")["canonical"])


@cache
def gpu_canonical() -> dict[str, dict]:
    return dict(load_yaml("gpu_metrics.yaml")["canonical"])


def engine_of_family(family: str) -> str | None:
    """The engine a metric family belongs to by its documented prefix."""
    for prefix, engine in (("vllm:", "vllm"), ("sglang:", "sglang"), ("nv_inference_", "triton"),
                           ("dynamo_", "dynamo")):
        if family.startswith(prefix):
            return engine
    return None

"""Thresholds as data (thresholds.yaml), typed for detectors."""

from __future__ import annotations

from dataclasses import dataclass, fields
from functools import cache

from crossview.knowledge.loader import load_yaml


@dataclass(frozen=True)
class Thresholds:
    kernel_wait_max_ns: int
    red_share: float
    yellow_share: float
    gpu_idle_red_share: float
    gpu_idle_yellow_share: float
    short_kernel_ns: int
    launch_bound_short_share: float
    graphs_missing_min_kernels: int
    sync_red_share: float
    sync_yellow_share: float
    nccl_red_share: float
    nccl_yellow_share: float
    dataloader_red_share: float
    dataloader_yellow_share: float
    python_overhead_red_share: float
    python_overhead_yellow_share: float
    pageable_red_share: float
    pageable_yellow_share: float
    startup_yellow_share: float


@cache
def defaults() -> Thresholds:
    data = load_yaml("thresholds.yaml")
    names = {f.name for f in fields(Thresholds)}
    missing = names - set(data)
    if missing:
        raise RuntimeError(f"thresholds.yaml lacks {sorted(missing)}")
    return Thresholds(**{k: data[k] for k in names})

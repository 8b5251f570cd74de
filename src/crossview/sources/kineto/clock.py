"""The wall-clock base of a Kineto trace: `baseTimeNanoseconds` (recent PyTorch).

Convention (HTA `trace_event_timestamp_to_unixtime_ns`): UTC epoch ns of an event =
baseTimeNanoseconds + ts (µs) × 1000. The reader stores event times as ts × 1000 ns, so the
base is the epoch of stored time 0 (artifacts.clock_epoch_ns). Limits (knowledge/clocks.yaml):
ts far past 0 is an absolute monotonic clock the base does not map → unknown (NULL); no base
but ts that reads as epoch µs (older PyTorch, gettimeofday) → base 0.
"""

from __future__ import annotations

import json

from crossview.knowledge.loader import load_yaml
from crossview.sources.kineto.staging import TraceMeta


def _is_epoch(ns: float) -> bool:
    k = load_yaml("clocks.yaml")
    return float(k["epoch_min_s"]) * 1e9 <= ns <= float(k["epoch_max_s"]) * 1e9


def _base(meta: TraceMeta) -> int | None:
    raw = bytes(meta.baseTimeNanoseconds).strip()
    if not raw:
        return None
    try:
        value = json.loads(raw)
    except ValueError:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not _is_epoch(value):
        return None
    return int(value)


def driver_cuda(meta: TraceMeta) -> int | None:
    """The trace's `cuda_driver_version` (the CUDA version its driver supports, 12090 for
    12.9), or None when absent or not a plausible version number."""
    raw = bytes(meta.cuda_driver_version).strip()
    try:
        value = json.loads(raw) if raw else None
    except ValueError:
        return None
    ok = isinstance(value, int) and not isinstance(value, bool) and 1000 <= value < 1_000_000
    return value if ok else None


def epoch_base_ns(meta: TraceMeta, first_ts_ns: int) -> int | None:
    """Epoch ns of trace time 0, or None when the trace cannot be put on the wall clock."""
    if _is_epoch(first_ts_ns):
        return 0  # ts already is wall-clock epoch
    base = _base(meta)
    max_ns = float(load_yaml("clocks.yaml")["kineto_relative_ts_max_s"]) * 1e9
    if base is None or not 0 <= first_ts_ns <= max_ns:
        return None
    return base

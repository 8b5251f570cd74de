"""Detectors: one module per pattern, each with its Declaration (detectors/declare.py): typed
claims from the views, and the pattern's facts. The verdict (crossview.verdict) turns claims
into findings."""

from __future__ import annotations

import sys
from collections.abc import Callable

from crossview.core.claim import Claim
from crossview.detectors import (
    below_roofline,
    capture_window,
    carry_in,
    compute_bound,
    dataloader,
    ddp_host,
    first_calls,
    gpu_gap,
    gpu_idle,
    graph_unrecorded,
    host_cpu,
    host_op_cost,
    host_preprocess,
    host_python,
    kernel_inefficiency,
    kv_cache_pressure,
    late_ranks,
    launch_bound,
    launch_config,
    launch_lag,
    layout_conversions,
    low_gpu_util,
    memory_bound,
    metrics_capture,
    nccl,
    nccl_straggler,
    op_fp32_math,
    op_memory_bound,
    optimizer_per_param,
    pageable_memcpy,
    peer_wait,
    prefill_decode,
    prefix_cache_miss,
    queue_saturation,
    sync_bound,
    sync_memcpy,
    sync_memset,
    tensor_cores,
    unfused_elementwise,
    utilization_regime,
)
from crossview.detectors.declare import About, Declaration
from crossview.views.views import Views

# One line per detector; a new pattern is one new module plus one line here.
DETECTORS: tuple[Callable[[Views], list[Claim]], ...] = (
    gpu_idle.detect,
    graph_unrecorded.detect,
    launch_bound.detect,
    sync_bound.detect,
    dataloader.detect,
    host_preprocess.detect,
    ddp_host.detect,
    nccl.detect,
    nccl_straggler.detect,
    late_ranks.detect,
    peer_wait.detect,
    pageable_memcpy.detect,
    host_python.detect,
    host_op_cost.detect,
    optimizer_per_param.detect,
    first_calls.detect,
    capture_window.detect,
    carry_in.detect,
    launch_lag.detect,
    memory_bound.detect,
    compute_bound.detect,
    below_roofline.detect,
    tensor_cores.detect,
    queue_saturation.detect,
    kv_cache_pressure.detect,
    prefix_cache_miss.detect,
    prefill_decode.detect,
    utilization_regime.detect,
    metrics_capture.detect,
    sync_memcpy.detect,
    sync_memset.detect,
    gpu_gap.detect,
    low_gpu_util.detect,
    host_cpu.detect,
    kernel_inefficiency.detect,
    op_memory_bound.detect,
    op_fp32_math.detect,
    unfused_elementwise.detect,
    layout_conversions.detect,
    launch_config.detect,
)


def declarations() -> list[Declaration]:
    """Each detector's declaration (detectors/declare.py), in DETECTORS order."""
    return [sys.modules[d.__module__].DECLARATION for d in DETECTORS]


def levers_by_pattern() -> dict[str, tuple[str, ...]]:
    """Each pattern whose declaration names replay levers → those levers (About.levers)."""
    out: dict[str, tuple[str, ...]] = {}
    for d in declarations():
        for p in d.patterns:
            lv = d.about_of(p).levers
            if lv and p not in out:
                out[p] = lv
    return out


def about(pattern: str) -> About:
    """A pattern's facts (its first declaration's): side, levers, … (detectors/declare.py)."""
    return next((d.about_of(pattern) for d in declarations() if pattern in d.patterns),
                About())

"""The schema of thresholds.yaml: every cut-off crossview judges by, typed. Kept apart from
thresholds.py so the loader's schema registry (schemas.py) can name it without an import cycle.
msgspec decodes strictly: a key not listed here, a missing key or a string where a number goes
fails at load naming the file and the key."""

from __future__ import annotations

import msgspec


class Thresholds(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    kernel_wait_max_ns: int
    red_share: float
    yellow_share: float
    max_red: int
    max_yellow: int
    gpu_idle_red_share: float
    gpu_idle_yellow_share: float
    short_kernel_ns: int
    launch_bound_short_share: float
    graphs_missing_min_kernels: int
    sync_red_share: float
    sync_yellow_share: float
    nccl_red_share: float
    nccl_yellow_share: float
    grad_sync_per_grad_share: float
    grad_sync_min_grads: int
    grad_sync_one_per_grad_max: float
    nccl_big_bucket_bytes: int
    dataloader_red_share: float
    dataloader_yellow_share: float
    python_overhead_red_share: float
    python_overhead_yellow_share: float
    first_call_min_ratio: float
    first_call_min_excess_ns: int
    first_call_min_later: int
    first_call_yellow_share: float
    host_op_floor_quantile: float
    host_op_floor_min_ns: int
    host_op_floor_min_ops: int
    host_op_cpu_ratio: float
    host_op_red_share: float
    host_op_yellow_share: float
    carry_in_min_share: float
    launch_lag_min_ns: int
    ddp_red_share: float
    ddp_yellow_share: float
    pageable_red_share: float
    pageable_yellow_share: float
    pageable_whole_row_share: float
    startup_yellow_share: float
    startup_dominates_idle_share: float
    sync_gpu_busy_mostly_pct: float
    blocking_wait_calls: int
    blocking_wait_held_share: float
    blocking_wait_release_ns: int
    # nsys expert-rule equivalents: gpu-gap, low-gpu-utilization, sync-memcpy, sync-memset
    gpu_gap_min_ns: int
    gpu_util_chunks: int
    gpu_util_low_share: float
    nsys_rule_yellow_share: float
    # nsys reader: kernel table fetched beside the host phase (sources/nsys/prefetch.py)
    nsys_prefetch_max_mib: int
    # nsys reader: host events nested from numpy up to this many (sources/nsys/host_arrays.py)
    nsys_host_in_memory_rows: int
    # per-kernel speed of light (ncu, rigor L4): sol/roofline.py, detectors on kernels
    sol_latency_max_pct: float
    sol_bottleneck_gap_pct: float
    sol_high_pct: float
    roofline_high_pct: float
    compute_pipe_busy_pct: float
    fp64_slow_ratio: float
    occupancy_theoretical_low_pct: float
    cache_bound_occupancy_max_pct: float
    occupancy_achieved_gap_pct: float
    kernel_red_share: float
    kernel_yellow_share: float
    # workload counters (DCGM/NVML/nvidia-smi, rigor L3) and serving metrics
    counters_idle_util_pct: float
    counters_starved_util_pct: float
    counters_busy_util_pct: float
    sm_active_ok_pct: float
    sm_active_low_pct: float
    counters_tensor_precision: str  # sol_ceilings.yaml tflops key
    running_at_cap_ratio: float
    queue_min_firm_scrapes: int
    queue_waiting_red_share: float
    queue_waiting_yellow_share: float
    kv_usage_high_pct: float
    preemption_red_rate: float
    prefix_hit_low_pct: float
    prefix_min_query_tokens: float
    prefix_miss_share_weight: float
    itl_spike_ratio: float
    long_prompt_tokens: float
    serving_min_requests: int
    # A/B of benchmark trials (experiments/ab.py): decision rule documented in architecture.md
    ab_noise_pct: float
    ab_alpha: float
    ab_min_trials: int
    ab_ci_level: float
    ab_bootstrap_resamples: int
    # cross-rank analysis (views/distributed/crossrank.py): straggler rank per collective
    straggler_min_skew_ns: int
    straggler_min_late_share: float
    straggler_gpu_busy_share: float
    peer_wait_min_steps: int
    graph_unrecorded_red_share: float
    optimizer_red_share: float
    diff_min_net_share: float
    diff_swap_gross_ratio: float
    diff_swap_min_ns: int
    layout_red_share: float
    layout_yellow_share: float
    optimizer_yellow_share: float
    profiler_stack_frames_per_ms: float
    graph_unrecorded_yellow_share: float
    peer_wait_min_excess_ns: int
    peer_wait_step_min_share: float
    # Kineto host-event nesting batch (sources/kineto/host_nesting.py): bounds its memory
    kineto_nest_batch_rows: int
    # Kineto host events sorted in numpy up to this many (sources/kineto/host_table.py)
    kineto_host_sort_rows: int
    # integer columns bit-packed at a store's compaction only past this many op rows
    # (store/store.py Store.compact)
    store_bitpack_rows: int
    # a read holding checkpoints compacts at its end past this many new op rows
    # (store/store.py Store.held_checkpoints)
    store_compact_after_rows: int
    # host CPU samples (views/counters/host_cpu.py, detectors/host_cpu.py)
    host_core_pinned_pct: float
    host_cpu_oversub_pct: float
    host_iowait_high_pct: float
    # time-account findings (issue 15)
    graphs_mostly_share: float
    unexplained_dominates_share: float
    # launch configuration (detectors/launch_config.py)
    launch_grid_sm_share: float
    launch_block_min_threads: int
    launch_config_yellow_share: float
    launch_config_red_share: float
    # host-preprocessing (detectors/host_preprocess.py)
    preprocess_red_share: float
    preprocess_yellow_share: float
    one_off_min_share: float  # detectors/sync_bound.py

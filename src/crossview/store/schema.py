"""The normalized tables: the one contract between readers and everything downstream.

Timestamps are integer nanoseconds everywhere. Ids are unique within one Store.
"""

from __future__ import annotations

# The tables' (and the standard library of views over them, store/stdlib/) version: raise it
# when a table or a view changes what a column holds, so stores made before are rebuilt.
STORE_SCHEMA_VERSION = 1

TABLES: dict[str, str] = {
    # clock_epoch_ns: wall-clock (UTC epoch ns) of the trace's time 0, so trace ns + it = epoch
    # ns (Kineto baseTimeNanoseconds, nsys session start); NULL when the capture does not say.
    # driver_cuda: the CUDA version the GPU driver supports, 1000 × major + 10 × minor (Kineto
    # `cuda_driver_version`, nvidia-smi `CUDA Version`): one driver holds for a whole run
    "artifacts": """
        artifact_id INTEGER, path VARCHAR, kind VARCHAR, bytes BIGINT, status VARCHAR,
        problems VARCHAR[], rigor VARCHAR, events BIGINT,
        rank INTEGER, world_size INTEGER, backend VARCHAR, trace_base_ns BIGINT,
        notes VARCHAR[], clock_epoch_ns BIGINT, driver_cuda INTEGER
    """,
    "devices": """
        artifact_id INTEGER, device INTEGER, name VARCHAR, sm_count INTEGER,
        mem_bytes BIGINT, cc_major INTEGER, cc_minor INTEGER,
        mem_bw_bytes_s BIGINT, clock_hz BIGINT
    """,
    # kind: kernel | memcpy | memset | sync (CUPTI synchronization records, nsys)
    "gpu_ops": """
        artifact_id INTEGER, gpu_op_id BIGINT, device INTEGER, stream BIGINT, kind VARCHAR,
        name VARCHAR, family VARCHAR, start_ns BIGINT, dur_ns BIGINT, correlation BIGINT,
        launch_op_id BIGINT, via_graph BOOLEAN, bytes BIGINT, copy_kind VARCHAR,
        mem_kinds VARCHAR, grid VARCHAR, block VARCHAR, regs INTEGER, collective VARCHAR,
        process_group VARCHAR, coll_seq BIGINT
    """,
    # what the trace recorded about an event's inputs, as read (Kineto args): op_id is a
    # host_ops.op_id (on_gpu false: `Input Dims` / `Input type` / `Concrete Inputs` as JSON
    # text, from record_shapes=True; record_param_comms sizes) or a gpu_ops.gpu_op_id (on_gpu
    # true: a collective kernel's `In msg nelems` / `Out msg nelems` / `Group size` / `dtype`).
    # One row per event that carries any of them; the reader never interprets them.
    "op_args": """
        artifact_id INTEGER, op_id BIGINT, on_gpu BOOLEAN, input_dims VARCHAR,
        input_types VARCHAR, concrete_inputs VARCHAR, in_nelems BIGINT, out_nelems BIGINT,
        group_size INTEGER, dtype VARCHAR
    """,
    # kind: runtime | op | python | annotation | other; depth/parent from time containment
    "host_ops": """
        artifact_id INTEGER, op_id BIGINT, pid VARCHAR, tid VARCHAR, kind VARCHAR,
        name VARCHAR, start_ns BIGINT, dur_ns BIGINT, depth INTEGER, parent BIGINT,
        correlation BIGINT, node_id BIGINT, self_ns BIGINT
    """,
    # call-tree frames, interned: one row per distinct (parent_node, name) path step
    "frames": """
        node_id BIGINT, parent_node BIGINT, name VARCHAR, kind VARCHAR, depth INTEGER
    """,
    # sampled stacks (nsys CPU sampling, folded / speedscope / pprof files: rigor L1): one row
    # per sample (stack files: per distinct stack, count = its samples; ts_ns NULL); the stack
    # is the frames path ending at node_id (its leaf, innermost frame). view: cpu | gpu (stacks
    # whose leaves are kernels, sources/stacks/leaves.py). weight_ns: the
    # time one sample stands for (the capture's sampling period, estimated); state: thread
    # state label when recorded (Running, …)
    "samples": """
        artifact_id INTEGER, view VARCHAR, node_id BIGINT, weight_ns BIGINT, count INTEGER,
        pid VARCHAR, tid VARCHAR, ts_ns BIGINT, cpu INTEGER, state VARCHAR
    """,
    # summary-only evidence (`nsys stats` CSV reports: no timeline). report: cuda_gpu_kern_sum
    # | cuda_api_sum | cuda_gpu_mem_time_sum | cuda_gpu_mem_size_sum | nvtx_sum | osrt_sum |
    # cuda_gpu_sum | …; values in `unit` (ns, or MB for size reports) as nsys printed them
    "summary_stats": """
        artifact_id INTEGER, report VARCHAR, name VARCHAR, category VARCHAR,
        time_pct DOUBLE, total DOUBLE, count BIGINT, avg DOUBLE, med DOUBLE,
        min DOUBLE, max DOUBLE, stddev DOUBLE, unit VARCHAR
    """,
    # time-series samples (DCGM, NVML, nvidia-smi, serving-engine /metrics), units normalized
    # (knowledge/gpu_metrics.yaml, serving_metrics.yaml). source: dcgm-exporter | dcgmi |
    # nvidia-smi | nvml | vllm | sglang | triton | dynamo | prometheus. metric: canonical name
    # (raw_name: as recorded). mtype: gauge | counter | bucket | sum | count | info | untyped;
    # a histogram is its bucket rows (labels.le) + sum + count. ts_ns: epoch ns, NULL when the
    # file has no clock (seq orders samples then). labels: JSON object text.
    "metrics": """
        artifact_id INTEGER, source VARCHAR, device INTEGER, metric VARCHAR, ts_ns BIGINT,
        value DOUBLE, unit VARCHAR, labels VARCHAR, raw_name VARCHAR, mtype VARCHAR,
        seq INTEGER
    """,
    # benchmark trial results (vllm bench serve, sweeps, generic load generators)
    "trials": """
        artifact_id INTEGER, arm VARCHAR, trial INTEGER, metric VARCHAR, value DOUBLE,
        unit VARCHAR
    """,
    # the Context of each (artifact, arm, trial): core/context.py Context as JSON text
    "context": """
        artifact_id INTEGER, arm VARCHAR, trial INTEGER, context VARCHAR
    """,
    # per-request detail of a benchmark trial (`vllm bench serve --save-detailed`): lengths
    # in tokens, latencies in seconds as the load generator measured them
    "bench_requests": """
        artifact_id INTEGER, arm VARCHAR, trial INTEGER, request INTEGER,
        input_len INTEGER, output_len INTEGER, ttft_s DOUBLE, itl_s DOUBLE[], error VARCHAR
    """,
    # one row per kernel launch profiled by Nsight Compute (sources/ncu). launch_key names
    # the launch across exports of one session (details + metrics + section CSVs of the same
    # launch merge in sol/roofline.py). device_name_source: capture | --gpu.
    "profiled_kernels": """
        artifact_id INTEGER, kernel_id BIGINT, ncu_id VARCHAR, launch_key VARCHAR,
        name VARCHAR, family VARCHAR, process VARCHAR, pid VARCHAR, host VARCHAR,
        device INTEGER, device_name VARCHAR, device_name_source VARCHAR, cc VARCHAR,
        sm_count INTEGER, mem_bytes BIGINT, context VARCHAR, stream BIGINT, grid VARCHAR,
        block VARCHAR
    """,
    # per-kernel counters (ncu, rigor L4), long format. metric: the metric name or the
    # section's label as ncu printed it; value in SI base units (unit: ns, byte, byte/s, hz,
    # %, …; sources/ncu/units.py); raw_value/raw_unit as recorded (localized, auto-scaled).
    "kernel_metrics": """
        artifact_id INTEGER, kernel_id BIGINT, name VARCHAR, family VARCHAR, section VARCHAR,
        metric VARCHAR, value DOUBLE, unit VARCHAR, raw_value VARCHAR, raw_unit VARCHAR
    """,
    # ncu's own rule results (SOLBottleneck, TheoreticalOccupancy, …), kept as evidence
    # next to crossview's findings. type: OPT | WRN | INF | ERR; speedup_pct: ncu's estimate.
    "kernel_rules": """
        artifact_id INTEGER, kernel_id BIGINT, section VARCHAR, rule VARCHAR, type VARCHAR,
        title VARCHAR, message VARCHAR, speedup_type VARCHAR, speedup_pct DOUBLE
    """,
}

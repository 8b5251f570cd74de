"""The schema of every knowledge YAML file (msgspec, strict): SCHEMAS maps a file name to the
Struct its top level decodes as. `Rec` records forbid unknown keys; `dict[str, X]` is a table
whose keys are data (pattern ids, engine flags, GPU names). Optional keys carry a default.
knowledge/loader.py checks each file against its entry when it is first read
(docs/decisions/0361-strict-typed-knowledge.md); tests/test_knowledge_schemas.py loads them all.
"""

from __future__ import annotations

import msgspec

from crossview.knowledge.thresholds_schema import Thresholds


class Rec(msgspec.Struct, forbid_unknown_fields=True):
    """A record with fixed keys (inherited config: strict)."""


Num = float  # msgspec accepts an int where a float goes, never a string
Opt = Num | None


# --- ab_gates.yaml ------------------------------------------------------------------------
class LeverMetric(Rec):
    patterns: list[str]
    words: str
    plan_metric: str


class ContextGate(Rec):
    identity: list[str]
    when_known: list[str]


class AbGates(Rec):
    lever_metrics: dict[str, LeverMetric]
    target_by_phase: dict[str, str]
    context_gate: ContextGate
    node_fields: list[str]
    cold_mean_over_median: Num
    cold_first_trial_factor: Num


# --- account.yaml -------------------------------------------------------------------------
class CauseMatch(Rec):
    api_role: str | list[str] | None = None
    except_names_of: str | None = None
    frames_yaml: str | None = None
    kinds: list[str] | None = None
    names: list[str] | None = None
    regex: list[str] | None = None


class Cause(Rec):
    id: str
    label: str
    frames: str
    match: CauseMatch | None = None  # None: set by the gap-level rules, never by a host op


class CollectiveLoop(Rec):
    gap_max_ns: int
    min_calls: int


class Account(Rec):
    causes: list[Cause]
    collective_loop: CollectiveLoop
    startup_causes: list[str]
    top_gaps: int
    top_frames: int
    gap_calls: int
    queue_empty_launch_share: Num
    queued_latency_ns: int
    recap_min_share: Num
    startup_frame_min_ns: int
    gap_cause_min_share: Num


# --- capture_plan.yaml --------------------------------------------------------------------
class Sidecar(Rec):
    id: str
    title: str
    why: str
    command: str


class Phase(Rec):
    id: str
    title: str
    why: str
    server_env: dict[str, str]
    server_wrap: str
    client: str
    sidecars: list[Sidecar]
    post: list[str]


class EnginePlan(Rec):
    defaults: dict[str, str | int]
    server: str
    health: str
    bench: str
    bench_small: str
    phases: list[Phase]


# --- clocks.yaml, collectives.yaml, comm_bandwidth.yaml -----------------------------------
class Clocks(Rec):
    epoch_min_s: int
    epoch_max_s: int
    kineto_relative_ts_max_s: int


class Collective(Rec):
    pattern: str
    why: str
    type: str | None = None


class Collectives(Rec):
    launch_ops: list[Collective]
    kernels: list[Collective]
    runs_as: dict[str, str]


class BusFactor(Rec):
    num: int
    minus_one: bool


class Network(Rec):
    ib_ndr_gb_s: Num
    ib_hdr_gb_s: Num


class CommBandwidth(Rec):
    bus_factor: dict[str, BusFactor]
    dtype_bytes: dict[str, int]
    network: Network
    copy_ceiling: dict[str, str | None]
    first_input_types: list[str]


# --- context_files.yaml -------------------------------------------------------------------
class CommandFile(Rec):
    glob: str
    format: str
    key: str | None = None


class Profiler(Rec):
    subcommands: list[str]
    value_options: list[str]


class Arg(Rec):
    field: str
    how: str | None = None
    flag: bool | None = None


class Product(Rec):
    of: list[str]
    how: str


class ArmEdit(Rec):
    set: dict[str, str | int | bool] | None = None
    add: list[str] | None = None
    remove: list[str] | None = None


class ArmCommand(Rec):
    baseline: ArmEdit
    variant: ArmEdit


class TraceEngine(Rec):
    engine: str
    package: str


class ContextFiles(Rec):
    command_files: list[CommandFile]
    profilers: dict[str, Profiler]
    engines: dict[str, list[str]]
    args: dict[str, Arg]
    products: dict[str, Product]
    arm_commands: dict[str, dict[str, ArmCommand]]
    trace_engines: list[TraceEngine]


# --- engine_flags.yaml --------------------------------------------------------------------
class FlagSince(Rec):
    since: str
    until: str | None = None


class Marker(Rec):
    frame: str
    since: str


class EngineFlagTable(Rec):
    flags: dict[str, FlagSince]
    markers: list[Marker]


class EngineFlags(Rec):
    vllm: EngineFlagTable
    sglang: EngineFlagTable
    other_tools: list[str]
    enable_graphs_phrases: list[str]


# --- evidence_tables.yaml, fixes.yaml, frames.yaml ----------------------------------------
class EvidenceRule(Rec):
    match: str
    tables: list[str]


class ZeroGrad(Rec):
    call_prefix: str
    fill: str


class GradSyncOps(Rec):
    accumulate: str
    collective_prefix: str


class NamedFrames(Rec):
    contains: str
    pattern: str


class TrivialOps(Rec):
    prefix: str
    names: list[str]


class Frames(Rec):
    library: list[str]
    engines: dict[str, str]
    dataloader: list[str]
    preprocessing: list[str]
    startup: list[str]
    torch_compile: list[str]
    gc: list[str]
    error_exit: list[str]
    thread_wait: list[str]
    runtimes: dict[str, str]
    compiled: list[str]
    zero_grad: ZeroGrad
    optimizer: dict[str, NamedFrames]
    grad_sync: GradSyncOps
    trivial_ops: TrivialOps


# --- gpu_metrics.yaml, host_metrics.yaml, serving_metrics.yaml ----------------------------
class Canonical(Rec):
    unit: str
    what: str


class MetricName(Rec):
    metric: str
    scale: Num | None = None
    alias: bool | None = None
    legacy: bool | None = None


class GpuMetrics(Rec, rename={"dcgm_exporter": "dcgm-exporter", "nvidia_smi": "nvidia-smi",
                              "nvidia_smi_dmon": "nvidia-smi-dmon"}):
    canonical: dict[str, Canonical]
    dcgm_exporter: dict[str, MetricName]
    dcgmi: dict[str, MetricName]
    nvidia_smi: dict[str, MetricName]
    nvidia_smi_dmon: dict[str, MetricName]
    nvml: dict[str, MetricName]


class GpuProcesses(Rec):
    synthetic_loads: list[str]


class HostMetric(Rec):
    metric: str
    unit: str
    what: str
    per_core: bool = False


class HostMetrics(Rec):
    host: dict[str, HostMetric]


class ServingCanonical(Rec):
    unit: str
    kind: str
    agg: str | None = None  # histograms merge buckets, no agg


class ServingMetrics(Rec):
    canonical: dict[str, ServingCanonical]
    engines: dict[str, dict[str, MetricName]]
    gpu: dict[str, MetricName]


# --- hw_names.yaml, sol_ceilings.yaml -----------------------------------------------------
class HwName(Rec):
    pattern: str
    hw_key: str
    mem_gib_min: Num | None = None
    mem_gib_max: Num | None = None


class HwProperties(Rec):
    cc: str
    sm_count: int
    hw_key: str
    mem_gib_max: Num | None = None
    mem_gib_min: Num | None = None


class HwNames(Rec):
    names: list[HwName]
    properties: list[HwProperties]


class Ceilings(Rec):
    name: str
    vendor: str
    source: str
    sm_count: int | None
    hbm_gb: Num
    hbm_tb_s: Num
    tflops: dict[str, Opt]
    nvlink_gb_s: Opt = None
    nvlink_direction: str | None = None
    pcie_gb_s: Opt = None
    pcie_direction: str | None = None
    derived: str | None = None  # how a figure not on a datasheet was derived


# --- kernel_families.yaml, metric_direction.yaml ------------------------------------------
class KernelFamily(Rec):
    family: str
    patterns: list[str]
    why: str
    exclude: list[str] = msgspec.field(default_factory=list)


class Direction(Rec):
    names: list[str]
    patterns: list[str] = msgspec.field(default_factory=list)


class MetricDirection(Rec):
    higher: Direction
    lower: Direction


# --- ncu_metrics.yaml ---------------------------------------------------------------------
class NcuInput(Rec):
    metric: str | None = None  # a CSV row by label/section when the metric name is absent
    label: str | None = None
    section: str | None = None
    unit: str | None = None


class TensorHint(Rec):
    pattern: str
    ceilings: list[str]


class NcuMetrics(Rec):
    inputs: dict[str, list[NcuInput]]
    tensor_ops_metric: str
    tensor_ops: list[TensorHint]
    tensor_activity: str
    library_kernels: str
    gemm_tile_in_name: str
    waves_rule_text: str
    pipe_utilization: str
    tensor_pipe_pct: str
    tensor_name_hints: list[TensorHint]


# --- op_models.yaml, op_roofline.yaml -----------------------------------------------------
class OpPattern(Rec):
    match: str
    model: str


class Dtype(Rec):
    name: str
    bytes: int
    ceilings: dict[str, list[str]]
    tensor_cores: bool = False


class OpModels(Rec):
    ops: dict[str, str]
    patterns: list[OpPattern]
    elementwise_out_at: dict[str, int]
    dtypes: dict[str, Dtype]


class OpRoofline(Rec):
    recap_rows: int
    inefficient_min_share: Num
    inefficient_max_pct: Num
    inefficient_red_share: Num
    what_if_pct: Num
    small_gemm_dim: int
    gemm_align_elems: int
    unfused_families: list[str]
    unfused_min_share: Num
    unfused_red_share: Num
    kernel_bound_busy_pct: Num
    unfused_modules_shown: int
    memory_min_share: Num
    memory_near_pct: Num
    memory_red_share: Num
    norm_module_pattern: str
    training_op_markers: list[str]
    fp32_math_min_share: Num
    fp32_math_red_share: Num
    fp32_math_min_gain: Num
    tensor_kernel_markers: list[str]
    fp32_kernel_markers: list[str]
    layout_kernel_markers: list[str]
    ncu_agree_ratio_min: Num
    ncu_agree_ratio_max: Num
    attention_chain_min_share: Num


# --- diff.yaml ----------------------------------------------------------------------------
class DiffDrift(Rec):
    min_coverage: Num
    min_shift: Num
    max_spread_ratio: Num
    kernel_tolerance: Num
    counters: list[str]
    causes: dict[str, str]
    fix: str


class DiffNoise(Rec):
    min_steady_steps: int


class DiffComparable(Rec):
    min_shared_kernel_share: Num
    same_within_share: Num


class DiffRegression(Rec):
    metrics: list[str]


class DiffRules(Rec):
    drift: DiffDrift
    noise: DiffNoise
    comparable: DiffComparable
    regression: DiffRegression


# --- identity.yaml ------------------------------------------------------------------------
class IdentityRule(Rec):
    id: str
    match: str
    replace: str


class Identity(Rec):
    frame_rules: list[IdentityRule]
    display_rules: list[IdentityRule]


# --- replay.yaml --------------------------------------------------------------------------
class ReplayGraph(Rec):
    queued_gap_max_ns: int
    cross_stream_lag_min_ns: int
    lagged_queued_gap_max_ns: int
    pinned_lag_min_ns: int
    pinned_share_min: Num
    thread_wait_gap_min_ns: int
    wake_window_ns: int
    first_wake_window_ns: int
    sync_slack_ns: int
    max_rows: int
    recap_max_rows: int


class SelfCheck(Rec):
    max_step_error: Num


class Levers(Rec, rename="kebab"):
    dataloader_workers: dict[str, Num]
    cuda_graphs: dict[str, Num]
    remove_sync: dict[str, str]
    pinned_copies: dict[str, Num]
    kernel_speedup: dict[str, dict[str, Num]]
    exclude_startup: dict[str, bool]
    overlap_comm: dict[str, Num]
    bucket_grads: dict[str, Num]
    graph_region: dict[str, list[str]]


class ReplayDiff(Rec):
    cpu_frames: int


class Replay(Rec):
    graph: ReplayGraph
    selfcheck: SelfCheck
    levers: Levers
    lever_caveats: dict[str, str]
    diff: ReplayDiff


# --- stack_views.yaml, steps.yaml, trees.yaml ---------------------------------------------
class StackViews(Rec):
    gpu_leaf_share: Num
    kernel_marker: str
    host_library: list[str]
    device_name: list[str]


class VllmGraphSizes(Rec):
    default_max: int
    step_above_256: int


class Steps(Rec):
    profiler_step: str
    engine_steps: dict[str, list[str]]
    repeat_min: int
    repeat_min_cover_share: Num
    flag_min_steps: int
    warmup_ratio: Num
    outlier_ratio: Num
    jit_step_share: Num
    startup_step_share: Num
    step_rows: int
    engine_batch: dict[str, list[str]]
    vllm_graph_sizes: VllmGraphSizes


class RepeatRule(Rec):
    match: str
    replace: str


class Trees(Rec):
    repeat_rules: list[RepeatRule]
    min_share: Num
    max_children: int
    chain_keep: int
    summary_captures: int
    summary_sync_min_share: Num
    summary_syncs_kept: int
    summary_max_lines: int


# --- runs.yaml ----------------------------------------------------------------------------
class Runs(Rec):
    """When the timeline inputs of one folder are one run (scope/runs.py)."""
    clock_slack_s: Num


# --- synthesis.yaml -----------------------------------------------------------------------
class SourceKind(Rec):
    source: str
    tier: str
    counts: bool
    what: str


class Contradictions(Rec):
    hot_share_pct: Num
    duration_ratio_max: Num
    trace_idle_busy_pct: Num
    sm_busy_roofline_max_pct: Num
    share_gap_points: Num


class LedgerRules(Rec):
    fusion_families: dict[str, str]
    fusion_min_share_pct: Num
    copy_kernels: str
    copy_kernels_exclude: str
    kernel_min_share_pct: Num
    launch_min_share_pct: Num
    experiments_top: int


class PlanMetric(Rec):
    name: str
    why: str
    also: str | None = None


class Arm(Rec):
    baseline: str
    variant: str
    diff: str


class Experiments(Rec):
    trials: int
    metric: dict[str, PlanMetric]
    focus_by_regime: dict[str, str]
    default_focus: str
    commands: dict[str, dict[str, str]]
    ab: str
    arms: dict[str, dict[str, Arm]]


class Synthesis(Rec):
    sources: dict[str, SourceKind]
    sampled: SourceKind
    serving_metric_sources: list[str]
    serving: SourceKind
    capture_window_slack_s: Num
    trace_window_slack_s: Num
    capture_fixes: dict[str, dict[str, str]]
    contradictions: Contradictions
    ledger: LedgerRules
    costs: dict[str, int]
    experiments: Experiments


# --- input_limits.yaml --------------------------------------------------------------------
class InputLimits(Rec):
    max_stack_depth: int
    max_stack_frames_total: int
    max_gunzip_bytes: int
    gzip_memory_multiple: Num
    max_archive_members: int
    max_input_files: int
    archive_free_disk_share: Num
    max_bundle_yaml_bytes: int
    max_yaml_aliases: int
    max_csv_field_bytes: int
    mcp_max_concurrent_calls: int
    error_quote_chars: int
    mcp_max_message_bytes: int
    mcp_max_error_chars: int
    mcp_store_threads: int
    mcp_store_async_threads: int
    mcp_malloc_arenas: int
    mcp_store_memory_share: Num
    python_recursion_limit: int
    max_yaml_nodes: int
    max_compression_ratio: Num
    compression_ratio_floor_bytes: int
    clock_launch_lead_ns: int
    clock_launch_queue_ns: int
    stream_overlap_share: Num
    stream_overlap_min_ns: int
    default_memory_share: Num


# --- capture_cache.yaml -------------------------------------------------------------------
class CaptureCacheLimits(Rec):
    max_bytes: int
    max_entry_share: Num
    max_entry_rows: int
    max_age_days: Num


# --- ranks.yaml ---------------------------------------------------------------------------
class RankClock(Rec):
    shared_tolerance_ns: int
    min_shared_to_shift: int


class LateRanks(Rec):
    min_share: Num
    min_last: int
    red_share: Num
    yellow_share: Num
    cause_min_share: Num
    causes: int
    stall_min_ns: int
    stall_ratio: Num
    kinds: dict[str, list[str]]


class RankReplay(Rec):
    recap_max_rows: int
    top_ops: int


class ParallelismKind(Rec):
    frames: list[str]


class Ranks(Rec):
    """Many ranks, one step: clock alignment, late ranks, the joined replay, parallelism."""
    clock: RankClock
    late: LateRanks
    replay: RankReplay
    parallelism: dict[str, ParallelismKind]


# file name → the type its top level decodes as
# --- fix_where.yaml -----------------------------------------------------------------------
class FixWhere(Rec, rename="kebab"):
    """The {where} sentence of a fix text, by what the capture shows (Views.code_site)."""
    own_frame: str
    dataloader_frame: str
    library_only: str
    nsys_no_stacks: str
    no_stacks: str


# --- fixes.yaml ---------------------------------------------------------------------------
class FixRequires(Rec):
    """What a fix variant needs the capture to show (verdict/fixes.py): each key set must be
    known and match the capture context (views/capture_context.py); `flags` must all be among
    the flags the claim raised. Unknown is unmet: such a variant is never printed."""
    framework: str | None = None  # pytorch | jax | julia | triton (one of the frameworks seen)
    engine: str | None = None  # vllm | sglang | trtllm | hf | triton | dynamo
    phase: str | None = None  # training | inference
    model: str | None = None  # causal-decoder | encoder | conv-net | moe (one of those seen)
    vendor: str | None = None  # nvidia | amd
    dtype: str | None = None  # a tensor-core dtype the GPU states: fp16 | bf16 | tf32 | fp8
    source: str | None = None  # an artifact kind in scope: kineto | nsys | ncu | …
    code: str | None = None  # own: a frame of the user's own code is on the hot path;
    # library: every python frame on it is library / engine / cache code
    flags: list[str] = []


class FixVariant(Rec):
    name: str
    text: str
    requires: FixRequires = msgspec.field(default_factory=FixRequires)


# --- evidence.yaml ------------------------------------------------------------------------
class EvidenceText(Rec):
    """What a finding read, in words, by its claim's cite key ({fields}: the cite's fill)."""
    text: str
    tables: bool = True  # cite the source tables of the artifact's format (evidence_tables.yaml)


# --- verdict.yaml -------------------------------------------------------------------------
class Caveat(Rec):
    cap: str  # the highest severity a claim with this caveat keeps: red | yellow | info
    why: str


class Verdict(Rec):
    red_saving: Num
    yellow_saving: Num
    refute_realized: Num
    next_fix_min_share: Num
    path_gap_min: Num
    late_alone_barely: Num
    caveats: dict[str, Caveat]


SCHEMAS: dict[str, type] = {
    "ab_gates.yaml": AbGates,
    "account.yaml": Account,
    "api_roles.yaml": dict[str, list[str]],
    "capture_cache.yaml": CaptureCacheLimits,
    "capture_plan.yaml": dict[str, EnginePlan],
    "clocks.yaml": Clocks,
    "collectives.yaml": Collectives,
    "comm_bandwidth.yaml": CommBandwidth,
    "context_files.yaml": ContextFiles,
    "diff.yaml": DiffRules,
    "engine_flags.yaml": EngineFlags,
    "evidence_tables.yaml": dict[str, list[EvidenceRule]],
    "evidence.yaml": dict[str, EvidenceText],
    "fix_where.yaml": FixWhere,
    "fixes.yaml": dict[str, list[FixVariant]],
    "frames.yaml": Frames,
    "gpu_processes.yaml": GpuProcesses,
    "gpu_metrics.yaml": GpuMetrics,
    "host_metrics.yaml": HostMetrics,
    "identity.yaml": Identity,
    "hw_names.yaml": HwNames,
    "input_limits.yaml": InputLimits,
    "kernel_families.yaml": list[KernelFamily],
    "metric_direction.yaml": MetricDirection,
    "ncu_metrics.yaml": NcuMetrics,
    "op_models.yaml": OpModels,
    "op_roofline.yaml": OpRoofline,
    "ranks.yaml": Ranks,
    "replay.yaml": Replay,
    "runs.yaml": Runs,
    "serving_metrics.yaml": ServingMetrics,
    "sol_ceilings.yaml": dict[str, Ceilings],
    "stack_views.yaml": StackViews,
    "steps.yaml": Steps,
    "synthesis.yaml": Synthesis,
    "thresholds.yaml": Thresholds,
    "trees.yaml": Trees,
    "verdict.yaml": Verdict,
}


# --- capture_context.yaml -----------------------------------------------------------------
class FrameworkMarks(Rec):
    host: list[str]
    python: list[str]
    kernels: list[str]
    sources: list[str]


class ModelMarks(Rec):
    modules: list[str]
    python: list[str]
    kernels: list[str]


class Generations(Rec):
    cc: dict[str, str]
    hw_key: dict[str, str]


class CaptureContextRules(Rec):
    frameworks: dict[str, FrameworkMarks]
    engines: dict[str, str]
    generative_engines: list[str]
    models: dict[str, ModelMarks]
    conv_op_share: Num
    conv_ops: list[str]
    attention_ops: list[str]
    generations: Generations
    tensor_dtypes: dict[str, str]


SCHEMAS["capture_context.yaml"] = CaptureContextRules

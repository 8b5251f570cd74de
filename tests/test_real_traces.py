"""crossview's CLI on the six real Kineto captures, checked against the stdlib-only oracle.

Every expected number comes from ``oracle.py`` (gzip + json on the raw file), never from
crossview itself. The CLI runs once per trace per test session (``_run_cli`` is cached).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest

import oracle
from conftest import SHARED_DATA, SHARED_DATA_ABSENT, run_cli

DATA_DIR = SHARED_DATA
KINETO_DIR = DATA_DIR / "kineto"
SKIP_REASON = SHARED_DATA_ABSENT

A100_16RANK = "hta_a100_16rank_training_graphs.json.gz"
A100_DDP = "hta_a100_ddp_resnet_nccl.json.gz"
V100_DDP = "hta_v100_ddp_training.json.gz"
B200_EAGER = "tracelens_b200_vllm_eager_prefill_tp8.json.gz"
H100_QWEN = "tracelens_h100_hf_qwen1.5_0.5b_forward.json.gz"
MI300X_GRAPH = "tracelens_mi300x_vllm_decode_full_graph.json.gz"
TRACES = (A100_16RANK, A100_DDP, V100_DDP, B200_EAGER, H100_QWEN, MI300X_GRAPH)

TOP_LEVEL_KEYS = {
    "filter",
    "artifacts",
    "metrics",
    "kernel_families",
    "gpu_view",
    "cpu_view",
    "findings",
}
NODE_KINDS = {"python", "op", "annotation", "runtime", "kernel", "missing"}
SEVERITIES = {"red", "yellow", "info"}
GRAPH_LAUNCH_FRAMES = ("cudaGraphLaunch", "hipGraphLaunch")
# Family names accepted for the communication family ("comm" in ../shared/docs/formats.md).
COMM_FAMILY_NAMES = {"comm", "communication", "collective", "collectives", "nccl"}
CLI_TIMEOUT_S = 600


# --------------------------------------------------------------------------- helpers


@dataclass(frozen=True)
class CliRun:
    returncode: int
    stdout: str
    stderr: str


@cache
def _run_cli(path: str) -> CliRun:
    """Run ``crossview analyze PATH --format json`` once per trace per session."""
    proc = run_cli("analyze", path, "--format", "json", timeout=CLI_TIMEOUT_S)
    return CliRun(proc.returncode, proc.stdout, proc.stderr)


def trace_path(name: str) -> Path:
    if not KINETO_DIR.is_dir():
        pytest.skip(SKIP_REASON)
    path = KINETO_DIR / name
    if not path.is_file():
        pytest.skip(f"{path} missing: real-capture tests need it")
    return path


def expected(name: str) -> dict:
    return oracle.summarize(str(trace_path(name)))


def analysis(name: str) -> dict:
    """The parsed JSON result for one trace; fails (with stderr) when the run failed."""
    run = _run_cli(str(trace_path(name)))
    assert "Traceback" not in run.stderr, run.stderr[-4000:]
    assert run.returncode == 0, f"exit {run.returncode}; stderr:\n{run.stderr[-4000:]}"
    try:
        doc = json.loads(run.stdout)
    except json.JSONDecodeError as exc:  # pragma: no cover - failure path
        pytest.fail(f"stdout is not one JSON object ({exc}): {run.stdout[:500]!r}")
    assert isinstance(doc, dict), type(doc)
    return doc


def walk(nodes: list[dict]) -> Iterator[dict]:
    for node in nodes:
        yield node
        yield from walk(node.get("children") or [])


def kernel_leaves(node: dict) -> Iterator[dict]:
    """Kernel-kind nodes at or under ``node``."""
    if node.get("kind") == "kernel":
        yield node
    for child in node.get("children") or []:
        yield from kernel_leaves(child)


def kernels_under(node: dict) -> int:
    return sum(int(leaf["count"]) for leaf in kernel_leaves(node))


def is_graph_launch_node(node: dict, names: tuple[str, ...] = GRAPH_LAUNCH_FRAMES) -> bool:
    # Exact API name; a versioned spelling such as "cudaGraphLaunch_v10000" is also accepted.
    frame = str(node.get("frame", ""))
    return node.get("kind") == "runtime" and any(
        frame == n or frame.startswith(n + "_v") for n in names
    )


def graph_kernel_count(doc: dict, names: tuple[str, ...] = GRAPH_LAUNCH_FRAMES) -> tuple[int, int]:
    """(number of graph-launch nodes, kernels that are direct kernel children of them)."""
    nodes = [n for n in walk(doc["gpu_view"]["roots"]) if is_graph_launch_node(n, names)]
    kernels = sum(
        int(c["count"]) for n in nodes for c in n.get("children") or [] if c.get("kind") == "kernel"
    )
    return len(nodes), kernels


def missing_kernel_count(doc: dict) -> tuple[int, int]:
    """(number of "missing" nodes, kernels under them)."""
    nodes = [n for n in walk(doc["gpu_view"]["roots"]) if n.get("kind") == "missing"]
    return len(nodes), sum(kernels_under(n) for n in nodes)


def within_rel(actual: float, want: float, rel: float) -> bool:
    return abs(actual - want) <= rel * abs(want)


def non_empty(value: object) -> bool:
    if isinstance(value, str):
        return bool(value.strip())
    return bool(value)


traces = pytest.mark.parametrize("name", TRACES, ids=[t.split(".json")[0] for t in TRACES])


# --------------------------------------------------------------------------- shape


@traces
def test_exit_zero_and_one_json_object(name: str) -> None:
    doc = analysis(name)
    missing = TOP_LEVEL_KEYS - doc.keys()
    assert not missing, f"missing top-level keys: {sorted(missing)}"
    assert isinstance(doc["filter"], dict)
    assert isinstance(doc["findings"], list)
    assert isinstance(doc["kernel_families"], list)


@traces
def test_artifact_is_ok(name: str) -> None:
    doc = analysis(name)
    arts = doc["artifacts"]
    assert len(arts) == 1, arts
    assert arts[0]["status"] == "ok", arts[0]
    assert Path(arts[0]["path"]).name == name
    assert isinstance(arts[0]["problems"], list)
    assert doc["metrics"]["cpu_only"] is False


# --------------------------------------------------------------------------- metrics


@traces
def test_kernel_count(name: str) -> None:
    assert analysis(name)["metrics"]["kernel_count"] == expected(name)["kernel_count"]


@traces
def test_kernel_time(name: str) -> None:
    got = analysis(name)["metrics"]["kernel_time_ns"]
    assert isinstance(got, int)
    want = expected(name)["kernel_time_ns"]
    assert within_rel(got, want, 1e-3), f"kernel_time_ns {got} vs oracle {want}"


@traces
def test_kernel_span(name: str) -> None:
    got = analysis(name)["metrics"]["kernel_span_ns"]
    assert isinstance(got, int)
    want = expected(name)["kernel_span_ns"]
    assert abs(got - want) <= 1_000, f"kernel_span_ns {got} vs oracle {want}"


@traces
def test_kernel_busy_pct(name: str) -> None:
    got = analysis(name)["metrics"]["kernel_busy_pct"]
    want = expected(name)["kernel_busy_pct"]
    assert abs(got - want) <= 0.1, f"kernel_busy_pct {got} vs oracle {want:.4f}"


@traces
def test_idle_breakdown(name: str) -> None:
    idle = analysis(name)["metrics"]["idle"]
    parts = [idle["host_wait_ns"], idle["kernel_wait_ns"], idle["other_ns"]]
    for part in parts:
        assert isinstance(part, int) and not isinstance(part, bool), idle
        assert part >= 0, idle
    want = expected(name)
    if want["streams"] == 1:
        # On one stream the gaps tile the span: host + kernel + other wait == span - busy.
        gap = want["kernel_span_ns"] - want["kernel_busy_ns"]
        tolerance = 1_000 * want["kernel_count"]  # 1 µs of rounding per kernel
        assert abs(sum(parts) - gap) <= tolerance, f"idle {idle} sums to {sum(parts)}, not {gap}"


@traces
def test_kernel_families(name: str) -> None:
    doc = analysis(name)
    fams = doc["kernel_families"]
    assert fams, "no kernel families"
    for fam in fams:
        assert 0.0 <= fam["share"] <= 1.0, f"share must be a fraction 0..1: {fam}"
    want = expected(name)
    assert sum(f["count"] for f in fams) == want["kernel_count"]
    assert abs(sum(f["share"] for f in fams) - 1.0) <= 0.01
    assert within_rel(sum(f["time_ns"] for f in fams), want["kernel_time_ns"], 1e-3)


@traces
def test_comm_share(name: str) -> None:
    # Oracle: kernel names with a formats.md comm substring (== "nccl" share except on B200,
    # whose comm is mostly multimem_all_reduce_kernel; see oracle.py).
    fams = analysis(name)["kernel_families"]
    comm = [f for f in fams if str(f["family"]).lower() in COMM_FAMILY_NAMES]
    assert len(comm) <= 1, comm
    got = 100.0 * comm[0]["share"] if comm else 0.0
    want = 100.0 * expected(name)["comm_share"]
    assert abs(got - want) <= 1.0, f"comm share {got:.2f}% vs oracle {want:.2f}% ({fams})"


# --------------------------------------------------------------------------- GPU view


@traces
def test_gpu_view_totals(name: str) -> None:
    view = analysis(name)["gpu_view"]
    want = expected(name)
    assert within_rel(view["total_ns"], want["kernel_time_ns"], 1e-3), view["total_ns"]
    leaves = [leaf for root in view["roots"] for leaf in kernel_leaves(root)]
    assert sum(int(leaf["count"]) for leaf in leaves) == want["kernel_count"]
    assert within_rel(sum(leaf["time_ns"] for leaf in leaves), want["kernel_time_ns"], 1e-3)
    for node in walk(view["roots"]):
        assert node["kind"] in NODE_KINDS, node["kind"]
        assert isinstance(node["frame"], str) and node["frame"], node


def test_mi300x_graph_kernels_under_hip_graph_launch() -> None:
    want = expected(MI300X_GRAPH)
    assert want["graph_launches"] == 1 and want["graph_kernels"] == 421  # README facts
    nodes, kernels = graph_kernel_count(analysis(MI300X_GRAPH), ("hipGraphLaunch",))
    assert nodes >= 1, "no hipGraphLaunch runtime node in gpu_view"
    assert kernels == 421


def test_a100_16rank_graph_kernels_under_cuda_graph_launch() -> None:
    want = expected(A100_16RANK)
    assert want["graph_launches"] == 70 and want["graph_kernels"] == 135  # README facts
    nodes, kernels = graph_kernel_count(analysis(A100_16RANK), ("cudaGraphLaunch",))
    assert nodes >= 1, "no cudaGraphLaunch runtime node in gpu_view"
    assert kernels == want["graph_kernels"]


def test_a100_16rank_uncaptured_launches() -> None:
    want = expected(A100_16RANK)["missing_launch_kernels"]
    assert want == 705  # README fact
    nodes, kernels = missing_kernel_count(analysis(A100_16RANK))
    assert nodes >= 1, 'no "missing" node for kernels launched before the capture window'
    assert kernels == want


@traces
def test_missing_frame_matches_oracle(name: str) -> None:
    # Same contract on every trace: 705 on the 16-rank A100, 436 on the H100 (not in the
    # README; see oracle.py), none elsewhere.
    _, kernels = missing_kernel_count(analysis(name))
    assert kernels == expected(name)["missing_launch_kernels"]


# --------------------------------------------------------------------------- findings


def findings(name: str, severity: str | None = None) -> list[dict]:
    fs = analysis(name)["findings"]
    return [f for f in fs if severity is None or f["severity"] == severity]


@traces
def test_findings_are_complete_and_bounded(name: str) -> None:
    fs = findings(name)
    for f in fs:
        assert f["severity"] in SEVERITIES, f
        for field in ("pattern", "title", "observation", "fix", "evidence"):
            assert non_empty(f.get(field)), f"finding without {field}: {f}"
        for field in ("share", "rigor", "confidence"):
            assert field in f, f"finding without {field}: {f}"
    assert len([f for f in fs if f["severity"] == "red"]) <= 3
    assert len([f for f in fs if f["severity"] == "yellow"]) <= 2


def test_b200_eager_prefill_is_host_bound() -> None:
    # WHY: kernels cover only 12.9% of the 83.4 ms kernel span (oracle); 86.8% of the span is
    # gaps where the next kernel's launch call had not even started when the GPU went idle
    # (host wait). The step runs eagerly (no graph launch; 768 single launches through
    # cudaLaunchKernel / cudaLaunchKernelExC / cuLaunchKernelEx) under 15,230 python_function
    # events: the host, not the GPU, sets the pace, so the defining issue must be red.
    red = {f["pattern"] for f in findings(B200_EAGER, "red")}
    assert red & {"gpu-idle", "kernel-launch-bound", "host-python-overhead"}, red


def test_a100_16rank_is_nccl_bound() -> None:
    # WHY: ncclKernel_SendRecv kernels are 47.4% of kernel time (oracle, README ≈ 47%) and
    # 97.4% of that time (185 ms) overlaps no compute kernel on any stream, i.e. it is exposed
    # communication: 46.8% of the GPU's busy time and 15% of the 1.23 s kernel span.
    # Issue 15: findings rank by share of the steady-state step. Exposed communication is
    # 15.7% of the step (a 🟡 under the 20% red cut); the 🔴 is the ~70 ms per step the host
    # sits in `cudaMemcpyAsync` under `## sparse_data_dist ##` with the GPU idle (sync-bound
    # on device transfers). Decision 0791: 20.4% of the step is GPU idle between the recorded
    # ops of single CUDA-graph replays (tests/test_graph_unrecorded.py recomputes it): the trace
    # misses the graphs' kernels, so the re-capture is the 🔴 and the blocking copies, which may
    # wait on that work, a 🟡.
    red = {f["pattern"] for f in findings(A100_16RANK, "red")}
    yellow = {f["pattern"] for f in findings(A100_16RANK, "yellow")}
    assert "nccl-collective-bound" in yellow, yellow
    assert red == {"graph-unrecorded"}, red
    assert "sync-bound" in yellow, yellow


def test_mi300x_full_graph_decode_has_no_host_side_red() -> None:
    # WHY: the GPU is busy 99.76% of the kernel span (25 µs of gaps in 10.7 ms, all shorter
    # than 30 µs, none of them waiting on a launch call) and 421 of the 425 kernels replay from
    # one hipGraphLaunch: there is no idle time to blame on the host, launches, missing graphs,
    # syncs or input, so none of those may be red.
    host_side = {
        "gpu-idle",
        "kernel-launch-bound",
        "cuda-graphs-missing",
        "sync-bound",
        "host-python-overhead",
        "dataloader-starved",
    }
    red = {f["pattern"] for f in findings(MI300X_GRAPH, "red")}
    assert not red & host_side, red


# --------------------------------------------------------------------------- -o FILE


def test_output_file(tmp_path: Path) -> None:
    path = trace_path(MI300X_GRAPH)
    out = tmp_path / "result.json"
    proc = run_cli("analyze", path, "--format", "json", "-o", out, timeout=CLI_TIMEOUT_S)
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert "Traceback" not in proc.stderr
    doc = json.loads(out.read_text())
    assert doc["metrics"]["kernel_count"] == expected(MI300X_GRAPH)["kernel_count"]

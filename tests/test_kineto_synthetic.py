# Synthetic edge cases for Kineto formats with no public sample in ../shared/data: legacy (2021)
# schema, flow-only kernel links, HIP / driver / ExC launch APIs, multi-device, bare arrays,
# ns-precision float timestamps, gzip twins and a > 8 MiB trace. All built in tmp_path.
"""crossview on hand-built Kineto traces whose every expected number is computed by hand here.

Times in the events are µs (as Kineto writes them); crossview stores integer ns, so a kernel
at ts 1030 µs starts at 1_030_000 ns.
"""

from __future__ import annotations

import gzip
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from conftest import run_cli
from crossview.analysis import Analysis, analyze
from crossview.errors import UsageError
from crossview.scope.filter import Filter
from crossview.sources.kineto import staging
from crossview.store.store import Store
from crossview.views.host.calltree import MISSING_FRAME, TreeNode

CLI_TIMEOUT_S = 120
US = 1000  # ns per µs


# --------------------------------------------------------------------------- helpers


def X(cat: str, name: str, pid: Any, tid: Any, ts: float, dur: float, **args: Any
      ) -> dict[str, Any]:
    return {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": ts, "dur": dur,
            "args": args}


def kernel(name: str, ts: float, dur: float, corr: int | None, device: int = 0,
           stream: int = 7) -> dict[str, Any]:
    args: dict[str, Any] = {"device": device, "stream": stream}
    if corr is not None:
        args["correlation"] = corr
    return X("kernel", name, device, stream, ts, dur, **args)


def runtime(name: str, ts: float, dur: float, corr: int, pid: Any = 100, tid: Any = 100,
            cat: str = "cuda_runtime") -> dict[str, Any]:
    return X(cat, name, pid, tid, ts, dur, correlation=corr)


def op(name: str, ts: float, dur: float, pid: Any = 100, tid: Any = 100) -> dict[str, Any]:
    return X("cpu_op", name, pid, tid, ts, dur)


def flow(ph: str, cat: str, fid: int, pid: Any, tid: Any, ts: float) -> dict[str, Any]:
    ev = {"ph": ph, "cat": cat, "name": cat, "id": fid, "pid": pid, "tid": tid, "ts": ts}
    if ph == "f":
        ev["bp"] = "e"
    return ev


def write_trace(path: Path, events: list[dict[str, Any]], bare: bool = False,
                **top: Any) -> Path:
    doc: Any = events if bare else {"schemaVersion": 1, **top, "traceEvents": events}
    raw = json.dumps(doc).encode()
    if path.name.endswith(".gz"):
        path.write_bytes(gzip.compress(raw))
    else:
        path.write_bytes(raw)
    return path


def ok(a: Analysis) -> Analysis:
    assert [r.status for r in a.artifacts] == ["ok"] * len(a.artifacts), a.artifacts
    assert a.views is not None
    return a


def child(nodes: list[TreeNode], frame: str) -> TreeNode:
    hits = [n for n in nodes if n.frame == frame]
    assert len(hits) == 1, f"{frame!r} not exactly once among {[n.frame for n in nodes]}"
    return hits[0]


def at_path(roots: list[TreeNode], *frames: str) -> TreeNode:
    nodes, node = roots, None
    for f in frames:
        node = child(nodes, f)
        nodes = node.children
    assert node is not None
    return node


def kernel_parents(roots: list[TreeNode]) -> dict[str, tuple[str, ...]]:
    """kernel name → the frames above it (one path per kernel name expected)."""
    out: dict[str, tuple[str, ...]] = {}

    def walk(nodes: list[TreeNode], path: tuple[str, ...]) -> None:
        for n in nodes:
            if n.kind == "kernel":
                assert n.frame not in out, f"kernel {n.frame} under two paths"
                out[n.frame] = path
            walk(n.children, (*path, n.frame))

    walk(roots, ())
    return out


def idle(a: Analysis) -> tuple[int, int, int]:
    i = a.views.metrics.idle
    return i.host_wait_ns, i.kernel_wait_ns, i.other_ns


def analyze_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return run_cli("analyze", *args, timeout=CLI_TIMEOUT_S)


def assert_usage_error(proc: subprocess.CompletedProcess[str], *must_name: str) -> None:
    assert "Traceback" not in proc.stderr + proc.stdout, proc.stderr
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("crossview: error:"), lines[0]
    for word in must_name:
        assert word in lines[0], (word, lines[0])
    assert proc.stdout == ""


# --------------------------------------------------------------------------- legacy 2021


def legacy_events() -> list[dict[str, Any]]:
    """PyTorch 1.8-era schema: Operator/Runtime/Kernel/Memcpy, GPU rows with pid = device and
    tid = "stream 7" and no args.device/stream, python frames only in args["Call stack"].

    Device 0, stream 7 (µs):
      gemm_kernel [1030,1080)  ← cudaLaunchKernel 1005 (in aten::mm)
      Memcpy HtoD Pageable [1080,1100) ← cudaMemcpyAsync 1045 (in aten::add_)
      add_kernel  [1100,1110)  ← cudaLaunchKernel 1090: launched after gemm ended → host wait 20
      relu_kernel [1120,1150)  ← cudaLaunchKernel 1094: launched before → gap 10 < 30 kernel wait
    kernels 3, time 90, span 120, busy 90 (75%), idle 20 / 10 / 0.
    """
    stack_mm = "model.py(10): forward;train.py(50): step"
    stack_add = "model.py(20): forward;train.py(50): step"
    return [
        X("Operator", "aten::mm", 100, 100, 1000, 20,
          **{"Call stack": stack_mm, "External id": 1, "Input dims": [[8, 8], [8, 8]]}),
        X("Runtime", "cudaLaunchKernel", 100, 100, 1005, 5, correlation=1,
          **{"external id": 1}),
        X("Operator", "aten::add_", 100, 100, 1040, 60,
          **{"Call stack": stack_add, "External id": 2}),
        X("Runtime", "cudaMemcpyAsync", 100, 100, 1045, 5, correlation=2, **{"external id": 2}),
        X("Runtime", "cudaLaunchKernel", 100, 100, 1090, 3, correlation=3, **{"external id": 2}),
        X("Runtime", "cudaLaunchKernel", 100, 100, 1094, 3, correlation=4, **{"external id": 2}),
        X("Kernel", "gemm_kernel", 0, "stream 7", 1030, 50, correlation=1,
          **{"external id": 1, "queued": 0}),
        X("Memcpy", "Memcpy HtoD (Pageable -> Device)", 0, "stream 7", 1080, 20,
          correlation=2, bytes=1048576, **{"external id": 2}),
        X("Kernel", "add_kernel", 0, "stream 7", 1100, 10, correlation=3),
        X("Kernel", "relu_kernel", 0, "stream 7", 1120, 30, correlation=4),
        {"ph": "s", "cat": "async", "name": "launch", "id": 1, "pid": 100, "tid": 100,
         "ts": 1005},
        {"ph": "f", "cat": "async", "name": "launch", "id": 1, "pid": 0, "tid": "stream 7",
         "ts": 1030, "bp": "e"},
    ]


def test_legacy_2021_trace(tmp_path: Path) -> None:
    path = write_trace(tmp_path / "legacy.pt.trace.json", legacy_events())
    a = ok(analyze([path]))
    m = a.views.metrics
    assert m.kernel_count == 3
    assert m.kernel_time_ns == 90 * US
    assert m.kernel_span_ns == 120 * US
    assert m.kernel_busy_ns == 90 * US
    assert m.kernel_busy_pct == pytest.approx(75.0)
    assert idle(a) == (20 * US, 10 * US, 0)
    assert [(d.device, d.kernel_count) for d in m.devices] == [(0, 3)]

    # device from pid, stream from "stream 7"
    rows = a.views.store.sql("SELECT DISTINCT device, stream FROM gpu_ops").fetchall()
    assert rows == [(0, 7)]
    assert a.views.store.sql("SELECT DISTINCT pid, tid FROM host_ops").fetchall() == [
        ("100", "100")]

    # GPU view: the Call stack frames (outermost first) sit above the operator
    gemm = at_path(a.views.gpu.roots, "train.py(50): step", "model.py(10): forward",
                   "aten::mm", "cudaLaunchKernel", "gemm_kernel")
    assert (gemm.kind, gemm.time_ns, gemm.count) == ("kernel", 50 * US, 1)
    step = child(a.views.gpu.roots, "train.py(50): step")
    assert step.kind == "python" and step.time_ns == 90 * US and step.count == 3
    fwd2 = at_path(a.views.gpu.roots, "train.py(50): step", "model.py(20): forward")
    assert fwd2.kind == "python" and fwd2.time_ns == 40 * US
    launch = at_path(fwd2.children, "aten::add_", "cudaLaunchKernel")
    assert launch.kind == "runtime"
    assert {(k.frame, k.time_ns) for k in launch.children} == {
        ("add_kernel", 10 * US), ("relu_kernel", 30 * US)}
    assert a.views.gpu.total_ns == 90 * US

    # CPU view: same prefix, operator self time = dur − children
    add_ = at_path(a.views.cpu.roots, "train.py(50): step", "model.py(20): forward",
                   "aten::add_")
    assert add_.kind == "op" and add_.self_ns == (60 - 5 - 3 - 3) * US

    # the copy and the pageable-memcpy finding (20 µs of a 120 µs span)
    assert [(c.kind, c.copy_kind, c.mem_kinds, c.count, c.time_ns, c.bytes)
            for c in m.copies] == [("memcpy", "HtoD", "Pageable -> Device", 1, 20 * US,
                                     1048576)]
    pm = [f for f in a.findings if f.pattern == "pageable-memcpy"]
    assert len(pm) == 1
    # issue 15: the share is the copy's own slice of the step (the whole capture is one unit,
    # from the first host op at 1000 to the last kernel end at 1150: 150 µs); the GPU copies
    # [1080, 1100) with no kernel running → 20 µs of blocking copy
    assert pm[0].share == pytest.approx(20 / 150)
    assert m.launch is not None and m.launch.launch_calls == 3
    assert m.launch.kernels_launch_not_captured == 0


# --------------------------------------------------------------------------- flow-only links


def flow_events(cat: str, legacy: bool) -> list[dict[str, Any]]:
    """Kernels and a copy with NO args.correlation, linked only by s/f flow pairs; one kernel
    has no flow at all (→ "(launch not captured)")."""
    if legacy:
        dev, stream = 0, "stream 7"

        def gpu(kind: str, name: str, ts: float, dur: float) -> dict[str, Any]:
            return X(kind.capitalize(), name, dev, stream, ts, dur)
        host_cat, rt_cat = "Operator", "Runtime"
    else:
        dev, stream = 0, 7

        def gpu(kind: str, name: str, ts: float, dur: float) -> dict[str, Any]:
            cat_ = {"kernel": "kernel", "memcpy": "gpu_memcpy"}[kind]
            return X(cat_, name, dev, stream, ts, dur, device=0, stream=7)
        host_cat, rt_cat = "cpu_op", "cuda_runtime"
    return [
        X(host_cat, "aten::mm", 100, 100, 1000, 20),
        X(rt_cat, "cudaLaunchKernel", 100, 100, 1005, 5),
        X(host_cat, "aten::relu", 100, 100, 1030, 20),
        X(rt_cat, "cudaLaunchKernel", 100, 100, 1035, 5),
        X(host_cat, "aten::copy_", 100, 100, 1060, 20),
        X(rt_cat, "cudaMemcpyAsync", 100, 100, 1065, 5),
        gpu("kernel", "mm_kernel", 1100, 40),
        gpu("kernel", "relu_kernel", 1150, 10),
        gpu("memcpy", "Memcpy HtoD (Pinned -> Device)", 1170, 5),
        gpu("kernel", "orphan_kernel", 1200, 7),
        flow("s", cat, 11, 100, 100, 1005), flow("f", cat, 11, dev, stream, 1100),
        flow("s", cat, 12, 100, 100, 1035), flow("f", cat, 12, dev, stream, 1150),
        flow("s", cat, 13, 100, 100, 1065), flow("f", cat, 13, dev, stream, 1170),
    ]


@pytest.mark.parametrize(("cat", "legacy", "name", "bare"), [
    ("ac2g", False, "flows.json", False),
    ("async", True, "flows.json", False),
    ("async_cpu_to_gpu", False, "flows.json", False),
    ("ac2g", False, "flows.json.gz", False),  # flows are re-read from the gzip
    ("ac2g", False, "flows_bare.json", True),  # … and from a bare event array
])
def test_kernels_linked_by_flows_only(tmp_path: Path, cat: str, legacy: bool, name: str,
                                      bare: bool) -> None:
    path = write_trace(tmp_path / name, flow_events(cat, legacy), bare=bare)
    a = ok(analyze([path]))
    parents = kernel_parents(a.views.gpu.roots)
    assert parents["mm_kernel"] == ("aten::mm", "cudaLaunchKernel")
    assert parents["relu_kernel"] == ("aten::relu", "cudaLaunchKernel")
    assert parents["orphan_kernel"] == (MISSING_FRAME,)
    assert a.views.metrics.launch.kernels_launch_not_captured == 1
    assert a.views.metrics.launch.launch_calls == 2
    # the copy is linked to its cudaMemcpyAsync too
    rows = a.views.store.sql(
        "SELECT g.name, h.name, h.start_ns FROM gpu_ops g LEFT JOIN host_ops h"
        " ON h.op_id = g.launch_op_id ORDER BY g.start_ns").fetchall()
    assert rows == [
        ("mm_kernel", "cudaLaunchKernel", 1005 * US),
        ("relu_kernel", "cudaLaunchKernel", 1035 * US),
        ("Memcpy HtoD (Pinned -> Device)", "cudaMemcpyAsync", 1065 * US),
        ("orphan_kernel", None, None),
    ]


def test_flow_links_respect_the_stream(tmp_path: Path) -> None:
    events = [
        op("aten::mm", 1000, 20), X("cuda_runtime", "cudaLaunchKernel", 100, 100, 1005, 5),
        op("aten::add", 1030, 20), X("cuda_runtime", "cudaLaunchKernel", 100, 100, 1035, 5),
        kernel("k_stream7", 1100, 10, None, stream=7),
        kernel("k_stream8", 1100, 20, None, stream=8),
        flow("s", "ac2g", 1, 100, 100, 1005), flow("f", "ac2g", 1, 0, 7, 1100),
        flow("s", "ac2g", 2, 100, 100, 1035), flow("f", "ac2g", 2, 0, 8, 1100),
    ]
    a = ok(analyze([write_trace(tmp_path / "same_ts.json", events)]))
    parents = kernel_parents(a.views.gpu.roots)
    assert parents["k_stream7"] == ("aten::mm", "cudaLaunchKernel")
    assert parents["k_stream8"] == ("aten::add", "cudaLaunchKernel")


def metadata_after_events(events: list[dict[str, Any]]) -> str:
    """traceEvents first, then metadata holding arrays (json.dump of a dict built in that
    order): the last ']' of the file closes deviceProperties, not the events."""
    return json.dumps({"schemaVersion": 1, "traceEvents": events,
                       "deviceProperties": [{"id": 0, "name": "After"}],
                       "distributedInfo": {"rank": 3, "world_size": 4, "backend": "nccl"},
                       "traceName": "x[0]"}) + "\n"


def test_metadata_after_trace_events(tmp_path: Path) -> None:
    path = tmp_path / "meta_after.json"
    path.write_text(metadata_after_events(legacy_events()))
    a = ok(analyze([path]))
    assert a.views.metrics.kernel_count == 3
    assert a.views.metrics.devices[0].name == "After"
    assert a.views.store.sql("SELECT rank, world_size, backend FROM artifacts").fetchall() == [
        (3, 4, "nccl")]


def test_flow_links_with_metadata_after_trace_events(tmp_path: Path) -> None:
    path = tmp_path / "flows_meta_after.json"
    path.write_text(metadata_after_events(flow_events("ac2g", legacy=False)))
    a = ok(analyze([path]))
    parents = kernel_parents(a.views.gpu.roots)
    assert parents["mm_kernel"] == ("aten::mm", "cudaLaunchKernel")
    assert a.views.metrics.devices[0].name == "After"


# --------------------------------------------------------------------------- launch APIs


def test_hip_launch_apis_and_graph(tmp_path: Path) -> None:
    events = [
        op("op_launch", 1000, 10), runtime("hipLaunchKernel", 1002, 3, 11),
        op("op_ext", 1010, 10), runtime("hipExtModuleLaunchKernel", 1012, 3, 12),
        op("op_graph", 1020, 10), runtime("hipGraphLaunch", 1022, 5, 13),
        kernel("hip_k1", 1100, 10, 11, stream=0),
        kernel("hip_k2", 1120, 10, 12, stream=0),
        kernel("graph_k1", 1140, 10, 13, stream=0),
        kernel("graph_k2", 1150, 11, 13, stream=0),
        kernel("graph_k3", 1161, 12, 13, stream=0),
    ]
    a = ok(analyze([write_trace(tmp_path / "hip.json", events)]))
    parents = kernel_parents(a.views.gpu.roots)
    assert parents == {
        "hip_k1": ("op_launch", "hipLaunchKernel"),
        "hip_k2": ("op_ext", "hipExtModuleLaunchKernel"),
        "graph_k1": ("op_graph", "hipGraphLaunch"),
        "graph_k2": ("op_graph", "hipGraphLaunch"),
        "graph_k3": ("op_graph", "hipGraphLaunch"),
    }
    g = at_path(a.views.gpu.roots, "op_graph", "hipGraphLaunch")
    assert (g.kind, g.time_ns, g.count) == ("runtime", 33 * US, 3)
    ls = a.views.metrics.launch
    assert (ls.launch_calls, ls.graph_launches, ls.kernels_via_graph,
            ls.kernels_launch_not_captured) == (2, 1, 3, 0)
    via = dict(a.views.store.sql("SELECT name, via_graph FROM gpu_ops").fetchall())
    assert via == {"hip_k1": False, "hip_k2": False, "graph_k1": True, "graph_k2": True,
                   "graph_k3": True}


def test_cuda_runtime_driver_and_graph_launch_apis(tmp_path: Path) -> None:
    events = [
        op("op_exc", 1000, 10), runtime("cudaLaunchKernelExC", 1002, 3, 21),
        op("op_cu", 1010, 10), runtime("cuLaunchKernel", 1012, 3, 22, cat="cuda_driver"),
        op("op_cuex", 1020, 10), runtime("cuLaunchKernelEx", 1022, 3, 23, cat="cuda_driver"),
        op("op_graph", 1030, 10), runtime("cudaGraphLaunch", 1032, 5, 24),
        kernel("exc_kernel", 1100, 10, 21),
        kernel("cu_kernel", 1110, 10, 22),
        kernel("cuex_kernel", 1120, 10, 23),
        kernel("graph_a", 1130, 10, 24),
        kernel("graph_b", 1140, 10, 24),
        kernel("graph_c", 1150, 10, 24, stream=13),
    ]
    a = ok(analyze([write_trace(tmp_path / "cuda.json", events)]))
    parents = kernel_parents(a.views.gpu.roots)
    assert parents == {
        "exc_kernel": ("op_exc", "cudaLaunchKernelExC"),
        "cu_kernel": ("op_cu", "cuLaunchKernel"),
        "cuex_kernel": ("op_cuex", "cuLaunchKernelEx"),
        "graph_a": ("op_graph", "cudaGraphLaunch"),
        "graph_b": ("op_graph", "cudaGraphLaunch"),
        "graph_c": ("op_graph", "cudaGraphLaunch"),
    }
    kinds = {n.frame: n.children[0].kind for n in a.views.gpu.roots}
    assert set(kinds.values()) == {"runtime"}  # cuda_driver calls are runtime frames too
    ls = a.views.metrics.launch
    assert (ls.launch_calls, ls.graph_launches, ls.kernels_via_graph,
            ls.kernels_launch_not_captured) == (3, 1, 3, 0)
    assert a.views.metrics.kernel_count == 6


# --------------------------------------------------------------------------- devices / streams


def multi_device_events() -> list[dict[str, Any]]:
    """Device 0: a [1000,1010) s7, c [1005,1025) s8, b [1020,1030) s7 → union [1000,1030).
    Device 1: d [1000,1040) s7, e [1100,1110) s9 → gap 60 µs, launched early → other.
    All launched at 900-ish from one thread (before any kernel)."""
    ks = [("a", 1000, 10, 0, 7), ("c", 1005, 20, 0, 8), ("b", 1020, 10, 0, 7),
          ("d", 1000, 40, 1, 7), ("e", 1100, 10, 1, 9)]
    ev: list[dict[str, Any]] = []
    for i, (name, ts, dur, dev, stream) in enumerate(ks):
        ev.append(runtime("cudaLaunchKernel", 900 + 2 * i, 1, 100 + i))
        ev.append(kernel(f"kernel_{name}", ts, dur, 100 + i, device=dev, stream=stream))
    return ev


@pytest.fixture
def multi_device_trace(tmp_path: Path) -> Path:
    return write_trace(tmp_path / "multi.json", multi_device_events(),
                       deviceProperties=[{"id": 0, "name": "GPU Zero"},
                                         {"id": 1, "name": "GPU One"}])


def kernels_in_scope(a: Analysis) -> list[str]:
    return [r[0] for r in a.views.store.sql(
        "SELECT name FROM f_gpu WHERE kind = 'kernel' ORDER BY name").fetchall()]


def test_two_devices_per_device_metrics(multi_device_trace: Path) -> None:
    a = ok(analyze([multi_device_trace]))
    m = a.views.metrics
    d0, d1 = m.devices
    assert (d0.device, d0.name, d0.kernel_count, d0.kernel_time_ns, d0.kernel_span_ns,
            d0.kernel_busy_ns) == (0, "GPU Zero", 3, 40 * US, 30 * US, 30 * US)
    assert d0.kernel_busy_pct == pytest.approx(100.0)
    assert (d0.idle.host_wait_ns, d0.idle.kernel_wait_ns, d0.idle.other_ns) == (0, 0, 0)
    assert (d1.device, d1.name, d1.kernel_count, d1.kernel_time_ns, d1.kernel_span_ns,
            d1.kernel_busy_ns) == (1, "GPU One", 2, 50 * US, 110 * US, 50 * US)
    assert (d1.idle.host_wait_ns, d1.idle.kernel_wait_ns, d1.idle.other_ns) == (0, 0, 60 * US)
    assert (m.kernel_count, m.kernel_time_ns, m.kernel_span_ns, m.kernel_busy_ns) == (
        5, 90 * US, 140 * US, 80 * US)
    assert m.kernel_busy_pct == pytest.approx(round(100 * 80 / 140, 4))
    per_stream = {(s.device, s.stream): s.kernel_count for s in m.idle_by_stream}
    assert per_stream == {(0, 7): 2, (0, 8): 1, (1, 7): 1, (1, 9): 1}
    assert a.views.filter.streams == (7, 8, 9)


@pytest.mark.parametrize(("flt", "want"), [
    (Filter(device=0), ["kernel_a", "kernel_b", "kernel_c"]),
    (Filter(device=1), ["kernel_d", "kernel_e"]),
    (Filter(stream=7), ["kernel_a", "kernel_b", "kernel_d"]),
    (Filter(stream=8), ["kernel_c"]),
    (Filter(stream=9), ["kernel_e"]),
    (Filter(device=0, stream=7), ["kernel_a", "kernel_b"]),
])
def test_device_and_stream_filters(multi_device_trace: Path, flt: Filter,
                                   want: list[str]) -> None:
    a = ok(analyze([multi_device_trace], flt=flt))
    assert kernels_in_scope(a) == want
    assert a.views.metrics.kernel_count == len(want)
    assert sorted(k for k in kernel_parents(a.views.gpu.roots)) == want


def test_device_stream_filter_numbers(multi_device_trace: Path) -> None:
    # device 0 stream 7: a [1000,1010) and b [1020,1030): gap 10 µs launched early → kernel wait
    a = ok(analyze([multi_device_trace], flt=Filter(device=0, stream=7)))
    m = a.views.metrics
    assert (m.kernel_count, m.kernel_time_ns, m.kernel_span_ns, m.kernel_busy_ns) == (
        2, 20 * US, 30 * US, 20 * US)
    assert idle(a) == (0, 10 * US, 0)
    assert [d.device for d in m.devices] == [0]


def test_absent_device_or_stream_is_a_usage_error(multi_device_trace: Path) -> None:
    with pytest.raises(UsageError, match="--device 9"):
        analyze([multi_device_trace], flt=Filter(device=9))
    with pytest.raises(UsageError, match="--stream 42"):
        analyze([multi_device_trace], flt=Filter(stream=42))


def test_cli_absent_device_exits_2(multi_device_trace: Path) -> None:
    proc = analyze_cli(str(multi_device_trace), "--device", "9")
    assert_usage_error(proc, "--device 9")


def test_cli_device_filter_json(multi_device_trace: Path) -> None:
    proc = analyze_cli(str(multi_device_trace), "--device", "1", "--format", "json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["metrics"]["kernel_count"] == 2
    assert doc["metrics"]["kernel_time_ns"] == 50 * US
    assert doc["filter"]["requested"]["device"] == 1
    assert [d["device"] for d in doc["metrics"]["devices"]] == [1]


# --------------------------------------------------------------------------- window/pid/tid/ann


def scoped_events() -> list[dict[str, Any]]:
    """pid 100 tid 1: step_A [1000,1100) { opA → launch 1012 → k1 [1030,1040);
                                            opB → launch 1052 → k2 [1070,1090) }
                      step_B [1200,1300) { opC → launch 1212 → k3 [1230,1235) }
       pid 100 tid 2: opD [1020,1030) → launch 1022 → k4 [1100,1150)
       pid 200 tid 1: opE [1500,1510) → launch 1502 → k5 [1520,1530)
    One stream. Gaps: 1040→1070 host wait 30; 1090→1100 kernel wait 10 (k4 launched at 1022);
    1150→1230 host wait 80; 1235→1520 host wait 285."""
    ann = "user_annotation"
    return [
        X(ann, "step_A", 100, 1, 1000, 100),
        op("opA", 1010, 10, 100, 1), runtime("cudaLaunchKernel", 1012, 2, 1, 100, 1),
        op("opB", 1050, 10, 100, 1), runtime("cudaLaunchKernel", 1052, 2, 2, 100, 1),
        X(ann, "step_B", 100, 1, 1200, 100),
        op("opC", 1210, 10, 100, 1), runtime("cudaLaunchKernel", 1212, 2, 3, 100, 1),
        op("opD", 1020, 10, 100, 2), runtime("cudaLaunchKernel", 1022, 2, 4, 100, 2),
        op("opE", 1500, 10, 200, 1), runtime("cudaLaunchKernel", 1502, 2, 5, 200, 1),
        kernel("k1", 1030, 10, 1), kernel("k2", 1070, 20, 2), kernel("k3", 1230, 5, 3),
        kernel("k4", 1100, 50, 4), kernel("k5", 1520, 10, 5),
    ]


@pytest.fixture
def scoped_trace(tmp_path: Path) -> Path:
    return write_trace(tmp_path / "scoped.json", scoped_events())


def summary(a: Analysis) -> tuple[list[str], int, int, int, tuple[int, int, int]]:
    m = a.views.metrics
    return kernels_in_scope(a), m.kernel_time_ns, m.kernel_span_ns, m.kernel_busy_ns, idle(a)


def test_scoped_trace_unfiltered(scoped_trace: Path) -> None:
    a = ok(analyze([scoped_trace]))
    assert summary(a) == (["k1", "k2", "k3", "k4", "k5"], 95 * US, 500 * US, 95 * US,
                          (395 * US, 10 * US, 0))


@pytest.mark.parametrize(("flt", "want"), [
    # annotation step_A: host ops inside it on its thread → k1, k2
    pytest.param(Filter(annotation="step_A"),
                 (["k1", "k2"], 30 * US, 60 * US, 30 * US, (30 * US, 0, 0)), id="annotation-A"),
    pytest.param(Filter(annotation="step_B"), (["k3"], 5 * US, 5 * US, 5 * US, (0, 0, 0)),
                 id="annotation-B"),
    pytest.param(Filter(pid="100"), (["k1", "k2", "k3", "k4"], 85 * US, 205 * US, 85 * US,
                                     (110 * US, 10 * US, 0)), id="pid-100"),
    pytest.param(Filter(pid="200"), (["k5"], 10 * US, 10 * US, 10 * US, (0, 0, 0)), id="pid-200"),
    pytest.param(Filter(tid="2"), (["k4"], 50 * US, 50 * US, 50 * US, (0, 0, 0)), id="tid-2"),
    pytest.param(Filter(tid="1"), (["k1", "k2", "k3", "k5"], 45 * US, 500 * US, 45 * US,
                                   (30 * US + 140 * US + 285 * US, 0, 0)), id="tid-1"),
    pytest.param(Filter(pid="100", tid="1"), (["k1", "k2", "k3"], 35 * US, 205 * US, 35 * US,
                                              (30 * US + 140 * US, 0, 0)), id="pid-100-tid-1"),
    # window [1060, 1240) µs on the trace clock: kernels starting in it → k2, k4, k3
    (Filter(window_ns=(1_060_000, 1_240_000)), (["k2", "k3", "k4"], 75 * US, 165 * US,
                                                75 * US, (80 * US, 10 * US, 0))),
    # window end is exclusive: a kernel starting exactly at the end is out
    (Filter(window_ns=(1_030_000, 1_070_000)), (["k1"], 10 * US, 10 * US, 10 * US,
                                                (0, 0, 0))),
])
def test_host_and_window_filters(scoped_trace: Path, flt: Filter, want: tuple) -> None:
    a = ok(analyze([scoped_trace], flt=flt))
    assert summary(a) == want


def test_annotation_filter_views(scoped_trace: Path) -> None:
    a = ok(analyze([scoped_trace], flt=Filter(annotation="step_A")))
    root = child(a.views.gpu.roots, "step_A")
    assert root.kind == "annotation" and root.time_ns == 30 * US and root.count == 2
    assert at_path(root.children, "opB", "cudaLaunchKernel", "k2").time_ns == 20 * US
    # CPU view: step_A (100 − 20 = 80 self) + opA, opB (10 − 2 = 8 each) + 2 launches (2 each)
    assert a.views.cpu.total_ns == (80 + 8 + 8 + 2 + 2) * US
    assert [r.frame for r in a.views.cpu.roots] == ["step_A"]


def test_window_filter_cpu_view(scoped_trace: Path) -> None:
    # host ops starting in [1060, 1240): step_B (self 90), opC (self 8), its launch (2)
    a = ok(analyze([scoped_trace], flt=Filter(window_ns=(1_060_000, 1_240_000))))
    assert a.views.cpu.total_ns == (90 + 8 + 2) * US
    assert a.views.filter.window_ns == (1_070_000, 1_235_000)


def test_pid_and_tid_filters_must_exist(scoped_trace: Path) -> None:
    with pytest.raises(UsageError, match="--pid 999"):
        analyze([scoped_trace], flt=Filter(pid="999"))
    with pytest.raises(UsageError, match="--tid 77"):
        analyze([scoped_trace], flt=Filter(tid="77"))
    with pytest.raises(UsageError, match="--window"):
        analyze([scoped_trace], flt=Filter(window_ns=(2_000, 1_000)))


def test_cli_unknown_annotation_exits_2(scoped_trace: Path) -> None:
    proc = analyze_cli(str(scoped_trace), "--annotation", "no_such_range")
    assert_usage_error(proc, "--annotation", "no_such_range")


def test_cli_window_json(scoped_trace: Path) -> None:
    proc = analyze_cli(str(scoped_trace), "--format", "json", "--window", "1060000:1240000")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    m = doc["metrics"]
    assert (m["kernel_count"], m["kernel_time_ns"], m["kernel_span_ns"]) == (
        3, 75 * US, 165 * US)
    assert (m["idle"]["host_wait_ns"], m["idle"]["kernel_wait_ns"]) == (80 * US, 10 * US)
    assert doc["filter"]["requested"]["window_ns"] == [1_060_000, 1_240_000]

    proc = analyze_cli(str(scoped_trace), "--window", "5:nope")
    assert_usage_error(proc, "--window")


def test_cli_pid_tid_annotation_json(scoped_trace: Path) -> None:
    proc = analyze_cli(str(scoped_trace), "--format", "json", "--pid", "100", "--tid", "1",
                   "--annotation", "step_A")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["metrics"]["kernel_count"] == 2
    assert doc["metrics"]["kernel_time_ns"] == 30 * US
    assert doc["filter"]["requested"]["annotation"] == "step_A"
    assert doc["filter"]["requested"]["pid"] == "100"
    assert doc["filter"]["notes"] == [
        "GPU ops limited to those launched from the selected host slice"]


def test_two_artifacts_and_artifact_filter(tmp_path: Path) -> None:
    legacy = write_trace(tmp_path / "legacy.json", legacy_events())
    scoped = write_trace(tmp_path / "scoped.json", scoped_events())
    a = ok(analyze([legacy, scoped]))
    m = a.views.metrics
    assert [(Path(d.artifact).name, d.device, d.kernel_count) for d in m.devices] == [
        ("legacy.json", 0, 3), ("scoped.json", 0, 5)]
    assert m.kernel_count == 8 and m.kernel_time_ns == (90 + 95) * US
    assert m.kernel_span_ns == (120 + 500) * US  # spans add per device, never across files
    assert idle(a) == ((20 + 395) * US, (10 + 10) * US, 0)
    b = ok(analyze([legacy, scoped], flt=Filter(artifact="scoped.json")))
    assert summary(b) == (["k1", "k2", "k3", "k4", "k5"], 95 * US, 500 * US, 95 * US,
                          (395 * US, 10 * US, 0))
    assert b.views.cpu.total_ns == b.views.store.sql(
        "SELECT sum(self_ns) FROM host_ops h JOIN artifacts USING (artifact_id)"
        " WHERE path LIKE '%scoped.json'").fetchall()[0][0]
    with pytest.raises(UsageError, match="--artifact nope.json"):
        analyze([legacy, scoped], flt=Filter(artifact="nope.json"))


# --------------------------------------------------------------------------- bare array


@pytest.mark.parametrize("name", ["bare.json", "bare.json.gz"])
def test_bare_event_array(tmp_path: Path, name: str) -> None:
    path = write_trace(tmp_path / name, scoped_events(), bare=True)
    assert path.read_bytes()[:1] in (b"[", b"\x1f")
    a = ok(analyze([path]))
    assert summary(a) == (["k1", "k2", "k3", "k4", "k5"], 95 * US, 500 * US, 95 * US,
                          (395 * US, 10 * US, 0))
    assert a.views.metrics.devices[0].name == ""  # no deviceProperties in a bare array


# --------------------------------------------------------------------------- idle classes


def idle_events(gap2_us: float = 10, launch1_at: float = 1030) -> list[dict[str, Any]]:
    """One stream (µs):
      L0 1000 → K0 [1010,1020)
      L1 `launch1_at` (after K0 ended at 1020) → K1 [1040,1050): gap 1 = 20 host wait
      L2 1032 (before K1 ends) → K2 [1050+gap2, +10): gap 2 kernel wait (< 30 µs)
      L3 1034 (before K2 ends) → K3 100 µs after K2: gap 3 other (≥ 30 µs)."""
    k2 = 1050 + gap2_us
    k3 = k2 + 10 + 100
    return [
        runtime("cudaLaunchKernel", 1000, 1, 1), kernel("K0", 1010, 10, 1),
        runtime("cudaLaunchKernel", launch1_at, 1, 2), kernel("K1", 1040, 10, 2),
        runtime("cudaLaunchKernel", 1032, 1, 3), kernel("K2", k2, 10, 3),
        runtime("cudaLaunchKernel", 1034, 1, 4), kernel("K3", k3, 10, 4),
    ]


def test_idle_classification(tmp_path: Path) -> None:
    a = ok(analyze([write_trace(tmp_path / "idle.json", idle_events())]))
    assert idle(a) == (20 * US, 10 * US, 100 * US)
    m = a.views.metrics
    assert m.kernel_span_ns == 170 * US and m.kernel_busy_ns == 40 * US
    assert m.kernel_busy_pct == pytest.approx(round(100 * 40 / 170, 4))
    (s,) = m.idle_by_stream
    assert (s.idle.host_wait_ns, s.idle.kernel_wait_ns, s.idle.other_ns) == (
        20 * US, 10 * US, 100 * US)


def test_idle_classification_boundaries(tmp_path: Path) -> None:
    # a gap of exactly 30 µs is "other" (kernel wait is strictly shorter); a launch call that
    # starts exactly when the previous kernel ends is not host wait (HTA: "after")
    a = ok(analyze([write_trace(tmp_path / "b.json", idle_events(gap2_us=30, launch1_at=1020))]))
    assert idle(a) == (0, 20 * US, 130 * US)
    a = ok(analyze([write_trace(tmp_path / "c.json", idle_events(gap2_us=29.999))]))
    assert idle(a) == (20 * US, 29_999, 100 * US)


def test_idle_of_uncaptured_launch_is_not_host_wait(tmp_path: Path) -> None:
    # a kernel whose launch is not in the capture: its gap is kernel wait / other, never host
    events = [runtime("cudaLaunchKernel", 1000, 1, 1), kernel("K0", 1010, 10, 1),
              kernel("K1", 1040, 10, 99), kernel("K2", 1100, 10, 98)]
    a = ok(analyze([write_trace(tmp_path / "u.json", events)]))
    assert idle(a) == (0, 20 * US, 50 * US)
    assert a.views.metrics.launch.kernels_launch_not_captured == 2
    assert child(a.views.gpu.roots, MISSING_FRAME).count == 2


# --------------------------------------------------------------------------- gz == json


def comparable(a: Analysis) -> dict[str, Any]:
    m = a.views.metrics.to_dict()
    for d in m["devices"] + m["idle_by_stream"]:
        d.pop("artifact")
    return {"metrics": m, "gpu": a.views.gpu.to_dict(), "cpu": a.views.cpu.to_dict(True),
            "families": [f.to_dict() for f in a.views.families],
            "findings": [(f.pattern, f.severity, round(f.share, 12)) for f in a.findings]}


def test_gzip_and_plain_json_give_identical_results(tmp_path: Path) -> None:
    events = legacy_events() + [
        X("Kernel", "late_kernel", 1, "stream 3", 1300, 7, correlation=77)]
    plain = write_trace(tmp_path / "same.pt.trace.json", events,
                        deviceProperties=[{"id": 0, "name": "X"}])
    gz = write_trace(tmp_path / "same.pt.trace.json.gz", events,
                     deviceProperties=[{"id": 0, "name": "X"}])
    a, b = ok(analyze([plain])), ok(analyze([gz]))
    assert comparable(a) == comparable(b)
    assert a.views.metrics.kernel_count == 4


# --------------------------------------------------------------------------- ns precision


@pytest.mark.parametrize("offset_us", [0, 6_520_618_852_000], ids=["small", "epoch-us"])
def test_float_timestamps_keep_ns_precision(tmp_path: Path, offset_us: int) -> None:
    # offset 0: ts ≈ 1e3 µs; epoch-us: the realistic Kineto clock (≈ 6.5e12 µs, as in the
    # MI300X capture) where a double holds µs to ~0.001: ns must still come out exact
    o = offset_us
    events = [
        op("aten::add", o + 1000.123, 2.5),
        runtime("cudaLaunchKernel", o + 1000.124, 0.001, 1),
        kernel("half_us", o + 1001.001, 0.5, 1),
        op("aten::mul", o + 1487.683, 3.219),
        runtime("cudaLaunchKernel", o + 1487.999, 1.5, 2),
        kernel("late", o + 1490.501, 0.5, 2),
    ]
    a = ok(analyze([write_trace(tmp_path / "float.json", events)]))
    base = o * US
    gpu = a.views.store.sql("SELECT name, start_ns, dur_ns FROM gpu_ops ORDER BY 2").fetchall()
    assert gpu == [("half_us", base + 1_001_001, 500), ("late", base + 1_490_501, 500)]
    host = a.views.store.sql(
        "SELECT name, start_ns, dur_ns FROM host_ops ORDER BY start_ns").fetchall()
    assert host == [
        ("aten::add", base + 1_000_123, 2_500),
        ("cudaLaunchKernel", base + 1_000_124, 1),
        ("aten::mul", base + 1_487_683, 3_219),
        ("cudaLaunchKernel", base + 1_487_999, 1_500),
    ]
    m = a.views.metrics
    assert m.kernel_time_ns == 1000
    assert m.kernel_span_ns == 1_490_501 + 500 - 1_001_001
    # the launch calls nest inside their ops: self = dur − the launch's dur
    self_ns = dict(a.views.store.sql(
        "SELECT name, self_ns FROM host_ops WHERE kind = 'op'").fetchall())
    assert self_ns == {"aten::add": 2_499, "aten::mul": 3_219 - 1_500}


# --------------------------------------------------------------------------- > 8 MiB trace

N_BIG = 40_000  # kernels (and as many launch calls): ~ 11 MiB of JSON


def big_events() -> tuple[list[str], int]:
    """Pre-serialized events (one JSON text each) and the exact total kernel time in ns."""
    out: list[str] = []
    total = 0
    for i in range(N_BIG):
        ts = 1_000_000 + 5 * i
        dur_ns = 1000 + (i % 7) * 250  # 1.0 … 2.5 µs, exact in binary floats
        total += dur_ns
        out.append(json.dumps(runtime("cudaLaunchKernel", ts, 1.25, i)))
        out.append(json.dumps(kernel(f"k{i % 13}", ts + 3, dur_ns / 1000, i)))
    return out, total


def write_big(path: Path, events: list[str]) -> Path:
    path.write_text('{"schemaVersion": 1, "traceEvents": [' + ", ".join(events) + "]}")
    return path


class StageSpy:
    """Records how the reader stages: (exact, number of parts) per call."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.calls: list[tuple[bool, int]] = []
        real = staging.stage

        def spy(*args: Any, **kwargs: Any) -> staging.Staged:
            staged = real(*args, **kwargs)
            exact = kwargs["exact"] if "exact" in kwargs else args[3]
            self.calls.append((bool(exact), len(staged.files)))
            return staged

        monkeypatch.setattr(staging, "stage", spy)


@pytest.fixture(scope="module")
def big() -> tuple[list[str], int]:
    return big_events()


def test_large_trace_parallel_split(tmp_path: Path, big: tuple[list[str], int],
                                    monkeypatch: pytest.MonkeyPatch) -> None:
    events, total = big
    path = write_big(tmp_path / "big.json", events)
    assert path.stat().st_size > staging._SPLIT_MIN_BYTES
    spy = StageSpy(monkeypatch)
    a = ok(analyze([path], store=Store(threads=2)))
    assert spy.calls == [(False, 2)]  # split in two parts, parsed in one go
    m = a.views.metrics
    assert m.kernel_count == N_BIG
    assert m.kernel_time_ns == total
    assert m.launch.launch_calls == N_BIG
    assert m.launch.kernels_launch_not_captured == 0
    assert a.views.store.sql("SELECT count(*) FROM host_ops").fetchall()[0][0] == N_BIG


def test_large_trace_with_split_marker_inside_a_name(tmp_path: Path, big: tuple[list[str], int],
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    events, total = big
    tricky_name = "x" * 300 + "}, {" + "not an event"
    tricky = json.dumps({"name": tricky_name, "ph": "X", "cat": "cpu_op", "pid": 100,
                         "tid": 100, "ts": 500_000, "dur": 1, "args": {}})
    # put the tricky event where the split for 2 parts looks: the first `}, {` after the
    # middle of the events array must be the one inside its name (offsets by arithmetic)
    head = '{"schemaVersion": 1, "traceEvents": ['
    sizes = [len(e) + 2 for e in events]  # each event and its ", "
    a0 = len(head) - 1  # the '['
    b0 = len(head) + sum(sizes) + len(tricky) + 1  # just after the ']'
    mid = a0 + (b0 - a0) // 2  # staging.split's first cut guess
    start = len(head)
    for j, size in enumerate(sizes):  # noqa: B007 (j is used after the loop)
        if start <= mid < start + tricky.index("}, {"):
            break
        start += size
    else:
        pytest.fail("could not place the tricky event at the middle")
    text = head + ", ".join([*events[:j], tricky, *events[j:]]) + "]}"
    assert len(text) == b0 + 1
    inner = start + tricky.index("}, {")
    path = tmp_path / "big_tricky.json"
    path.write_text(text)
    assert path.read_bytes().find(b"}, {", mid) == inner  # the split guess will hit the name

    spy = StageSpy(monkeypatch)
    a = ok(analyze([path], store=Store(threads=2)))
    assert spy.calls == [(False, 2), (True, 1)]  # the split failed: re-read whole, exactly
    m = a.views.metrics
    assert m.kernel_count == N_BIG
    assert m.kernel_time_ns == total
    names = a.views.store.sql(
        "SELECT name FROM host_ops WHERE kind = 'op'").fetchall()
    assert names == [(tricky_name,)]
    assert a.artifacts[0].problems == []

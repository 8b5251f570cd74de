"""The kernel columns read once per analysis (store/kernel_rows.py) and the numpy
computations built on them (trace_metrics idle gaps, the steps' per-step facts), each checked
against an independent SQL computation of the same numbers on the real captures: a LEFT JOIN
to the launch call, the HTA idle-gap window query the metrics used before, and each kernel
clipped to each step in SQL.
"""

from __future__ import annotations

from functools import cache

import numpy as np
import pyarrow as pa
import pytest

from conftest import SHARED_DATA
from crossview.analysis import Analysis, analyze
from crossview.store.kernel_rows import NULL, KernelRows, key
from crossview.store.store import Store
from crossview.views.views import Views

CAPTURES = sorted([*SHARED_DATA.glob("kineto/*.json.gz"), *SHARED_DATA.glob("nsys/*.sqlite")])
pytestmark = pytest.mark.skipif(not CAPTURES, reason="../shared/data not present")
# small real captures: ProfilerStep steps (V100 ResNet-50), an nsys export (one unit)
NAMES = ["kineto_v100_resnet50_workers0.pt.trace.json.gz", "nvfuser_h200_nsys2025.1.sqlite",
         "tracelens_mi300x_vllm_decode_full_graph.json.gz"]


@cache
def _views(name: str) -> Views:
    a: Analysis = analyze([next(p for p in CAPTURES if p.name == name)])
    assert a.views is not None
    return a.views


@pytest.mark.parametrize("name", NAMES)
def test_rows_match_a_sql_join(name: str) -> None:
    v = _views(name)
    k = KernelRows(v.store)
    ref = v.store.sql(
        "SELECT g.artifact_id, g.device, g.stream, g.family, g.start_ns, g.start_ns + g.dur_ns,"
        " h.start_ns FROM f_gpu g LEFT JOIN host_ops h ON h.op_id = g.launch_op_id"
        " AND h.artifact_id = g.artifact_id WHERE g.kind = 'kernel'").fetchall()
    assert len(k) == len(ref) > 0
    got = sorted(zip(k.art.tolist(), [key(d) for d in k.dev], [key(s) for s in k.stream],
                     [k.families[f] for f in k.fam], k.s.tolist(), k.e.tolist(),
                     [int(x) if ok else None for x, ok in zip(k.ls, k.launched, strict=True)],
                     strict=True), key=repr)
    assert got == sorted((tuple(r) for r in ref), key=repr)
    assert k.families == sorted(k.families)


def _window_gaps(v: Views, part: str) -> list[tuple[object, ...]]:
    """The idle gaps as trace_metrics computed them in SQL before (HTA's rule)."""
    kw = int(v.limits.kernel_wait_max_ns)
    return [tuple(r) for r in v.store.sql(f"""
        WITH k AS (SELECT g.artifact_id, g.device, g.stream, g.start_ns AS s,
                          g.start_ns + g.dur_ns AS e, h.start_ns AS launch_ns
                   FROM f_gpu g LEFT JOIN host_ops h ON h.op_id = g.launch_op_id
                   WHERE g.kind = 'kernel'),
        w AS (SELECT *, max(e) OVER (PARTITION BY {part} ORDER BY s, e
                                     ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS pe
              FROM k)
        SELECT {part}, count(*), sum(e - s), min(s), max(e),
            sum(CASE WHEN s > pe AND launch_ns > pe THEN s - pe ELSE 0 END),
            sum(CASE WHEN s > pe AND NOT coalesce(launch_ns > pe, false) AND s - pe < {kw}
                THEN s - pe ELSE 0 END),
            sum(CASE WHEN s > pe AND NOT coalesce(launch_ns > pe, false) AND s - pe >= {kw}
                THEN s - pe ELSE 0 END)
        FROM w GROUP BY ALL ORDER BY ALL""").fetchall()]


@pytest.mark.parametrize("name", NAMES)
def test_idle_gaps_match_the_window_query(name: str) -> None:
    v = _views(name)
    m = v.metrics
    dev = [(1, d.device, d.kernel_count, d.kernel_time_ns, d.first_ns, d.last_ns,
            d.idle.host_wait_ns, d.idle.kernel_wait_ns, d.idle.other_ns) for d in m.devices]
    ref = _window_gaps(v, "artifact_id, device")
    assert [r[1:] for r in dev] == [r[1:] for r in ref]
    streams = [(x.device, x.stream, x.kernel_count, x.idle.host_wait_ns,
                x.idle.kernel_wait_ns, x.idle.other_ns) for x in m.idle_by_stream]
    ref_s = [(d, s, n, hw, kw, o) for _, d, s, n, _t, _f, _l, hw, kw, o
             in _window_gaps(v, "artifact_id, device, stream")]
    assert streams == ref_s
    assert sum(d.idle.total_ns for d in m.devices) > 0  # real gaps were classified


@pytest.mark.parametrize("name", NAMES)
def test_step_family_time_matches_sql_clipping(name: str) -> None:
    v = _views(name)
    steps = v.steps.steps
    assert steps
    for st in steps:
        ref = dict(v.store.sql(
            "SELECT coalesce(family, 'None'), sum(least(start_ns + dur_ns, $we)"
            " - greatest(start_ns, $ws)) FROM f_gpu WHERE kind = 'kernel'"
            " AND artifact_id = $a AND start_ns < $we AND start_ns + dur_ns > $ws"
            " GROUP BY ALL ORDER BY 1",
            {"a": st.artifact_id, "ws": st.start_ns, "we": st.end_ns}).fetchall())
        assert st.kernel_ns_by_family == {f: int(t) for f, t in ref.items() if t}
        assert list(st.kernel_ns_by_family) == sorted(st.kernel_ns_by_family)


def test_resnet_steps_hold_real_kernel_time() -> None:
    """ResNet-50 workers0: six ProfilerSteps (16–21, README), each with convolution (gemm /
    conv family) kernel time inside it."""
    s = _views(NAMES[0]).steps
    assert [x.number for x in s.steps] == [16, 17, 18, 19, 20, 21]
    assert all(sum(x.kernel_ns_by_family.values()) > 0 for x in s.steps)
    assert all(0 < x.gpu_busy_ns <= x.wall_ns for x in s.steps)


def _store(host_ids: list[int]) -> Store:
    """Two artifacts; kernels launched by host ops `host_ids` (artifact 1), one launched by
    an op of the other artifact, one by an op id no host op has, one with no launch."""
    s = Store()
    s.append("host_ops", pa.table({
        "artifact_id": pa.array([1] * len(host_ids) + [2], pa.int32()),
        "op_id": pa.array([*host_ids, 7], pa.int64()),
        "start_ns": pa.array([100 * (i + 1) for i in range(len(host_ids))] + [999],
                             pa.int64())}))
    launch = [*host_ids, 7, 123_456, None]
    s.append("gpu_ops", pa.table({
        "artifact_id": pa.array([1] * len(launch), pa.int32()),
        "device": pa.array([0] * (len(launch) - 1) + [None], pa.int32()),
        "stream": pa.array([7] * len(launch), pa.int64()),
        "kind": pa.array(["kernel"] * len(launch)),
        "family": pa.array(["gemm"] * (len(launch) - 1) + [None]),
        "start_ns": pa.array([1000 + i for i in range(len(launch))], pa.int64()),
        "dur_ns": pa.array([5] * len(launch), pa.int64()),
        "launch_op_id": pa.array(launch, pa.int64())}))
    return s


@pytest.mark.parametrize("host_ids", [[3, 4, 5], [3, 10**12, 2 * 10**12]],
                         ids=["dense ids", "sparse ids"])
def test_launch_lookup_dense_and_sparse(host_ids: list[int]) -> None:
    k = KernelRows(_store(host_ids), "gpu_ops")
    o = np.argsort(k.s)
    assert k.launched[o].tolist() == [True, True, True, False, False, False]
    assert k.ls[o].tolist() == [100, 200, 300, 0, 0, 0]
    assert k.families == ["None", "gemm"]  # a NULL family is named "None", as before
    assert [key(d) for d in k.dev[o]] == [0, 0, 0, 0, 0, None]
    assert k.dev[o][-1] == NULL


@pytest.mark.parametrize("name", NAMES)
def test_gpu_view_leaves_match_a_direct_group_by(name: str) -> None:
    """calltree.gpu_view groups kernels by (launching frame, name) through name ids: its
    kernel leaves hold what a plain GROUP BY over the join gives."""
    v = _views(name)
    ref = sorted((int(t), int(c), str(n)) for _, n, t, c in v.store.sql(
        "SELECT h.node_id, g.name, sum(g.dur_ns), count(*) FROM f_gpu g LEFT JOIN host_ops h"
        " ON h.op_id = g.launch_op_id WHERE g.kind = 'kernel' GROUP BY ALL").fetchall())
    leaves, todo = [], list(v.gpu.roots)
    while todo:
        n = todo.pop()
        if n.kind == "kernel":
            leaves.append((n.time_ns, n.count, n.frame))
        todo.extend(n.children)
    assert sorted(leaves) == ref
    assert v.gpu.total_ns == sum(t for t, _, _ in ref) > 0


@pytest.mark.parametrize("name", [p.name for p in CAPTURES if p.suffix == ".sqlite"] + NAMES[2:])
def test_first_launching_thread_probe_matches_the_join(name: str,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """steps' whole-capture start: the thread-by-thread EXISTS probe gives what one join over
    every thread gives (the nsys exports are one-unit captures), and so does the fallback
    after `_PROBES` probes."""
    from crossview.scope import step_detect as steps

    v = _views(name)
    ref = steps._launching_thread_starts(v.store, "f_host", "f_gpu")
    assert ref or not v.metrics.devices  # a capture with kernels has a launching thread
    assert steps._first_launching_thread_start(v.store, "f_host", "f_gpu") == ref
    monkeypatch.setattr(steps, "_PROBES", 0)
    assert steps._first_launching_thread_start(v.store, "f_host", "f_gpu") == ref
    if v.steps.source == "capture":  # the step starts at the first launching thread's op
        for st in v.steps.steps:
            assert st.start_ns <= ref.get(st.artifact_id, st.start_ns)

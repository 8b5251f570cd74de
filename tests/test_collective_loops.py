"""Per-tensor collective loops (views/distributed/collective_loops.py, decision 0807).

hta_v100_ddp_training issues its 404 all-reduces per step from the autograd thread one after
another; the runs are recomputed here from the raw JSON (gzip + json: `c10d::allreduce_`
events per thread, start-to-start spacing, the account.yaml limits), and the recap's NCCL
finding, time account and bucket-grads replay are checked against them. The hand-built
captures (synthetic: no public capture interleaves compute with per-tensor calls) check that
calls with compute between them form no loop."""

from __future__ import annotations

import gzip
import json
from functools import cache
from statistics import median

import pytest

from conftest import SHARED_DATA, shared_file
from crossview.analysis import Analysis, analyze
from crossview.knowledge.loader import load_yaml
from crossview.replay import whatif
from crossview.store.store import Store
from crossview.views.distributed.collective_loops import loops

V100 = SHARED_DATA / "kineto" / "hta_v100_ddp_training.json.gz"
A100 = SHARED_DATA / "kineto" / "hta_a100_ddp_resnet_nccl.json.gz"


def _raw_runs(path: object) -> list[tuple[str, int, int, int, int]]:
    """(tid, calls, first start µs, last end µs, median spacing µs) of every run of
    `c10d::allreduce_` events on one thread spaced ≤ gap_max_ns apart, ≥ min_calls long."""
    p = load_yaml("account.yaml")["collective_loop"]
    gap_us, min_calls = p["gap_max_ns"] / 1000, p["min_calls"]
    with gzip.open(shared_file(path), "rt") as f:
        ev = [e for e in json.load(f)["traceEvents"]
              if e.get("ph") == "X" and e.get("name") == "c10d::allreduce_"]
    by: dict[str, list[tuple[float, float]]] = {}
    for e in sorted(ev, key=lambda e: float(e["ts"])):
        by.setdefault(str(e["tid"]), []).append((float(e["ts"]), float(e["ts"]) + e["dur"]))
    out = []
    for tid, calls in by.items():
        run: list[tuple[float, float]] = []
        for c in calls + [(float("inf"), float("inf"))]:
            if run and c[0] - run[-1][0] <= gap_us:
                run.append(c)
                continue
            if len(run) >= min_calls:
                sp = median(b[0] - a[0] for a, b in zip(run, run[1:], strict=False))
                out.append((tid, len(run), int(run[0][0]), int(run[-1][1]), int(sp)))
            run = [c]
    return sorted(out, key=lambda r: r[2])


@cache
def _v100() -> Analysis:
    return analyze([shared_file(V100)])


def test_the_loops_are_the_raw_traces_runs() -> None:
    raw = _raw_runs(V100)
    # 5 steps × 404 calls, three steps split once by a pause over 1 ms (hand-checked: 7 runs)
    assert sum(r[1] for r in raw) == 2020 and len(raw) == 7
    a = _v100()
    assert a.views is not None
    found = loops(a.views.store, 1, scoped=False)
    assert [(x.lane.split("/")[1], x.calls, x.start_ns // 1000, x.end_ns // 1000,
             x.spacing_ns // 1000) for x in found] == raw
    assert raw[1][1:2] == (404,) and raw[1][4] == 320  # step 3: one call every 320 µs
    # every run sits inside a `CompiledFunctionBackward` event of its thread (raw JSON)
    with gzip.open(shared_file(V100), "rt") as fh:
        cfb = [(str(e["tid"]), float(e["ts"]), float(e["ts"]) + e["dur"])
               for e in json.load(fh)["traceEvents"]
               if e.get("ph") == "X" and e.get("name") == "CompiledFunctionBackward"]
    assert all(any(t == r[0] and s <= r[2] and r[3] <= e for t, s, e in cfb) for r in raw)
    assert {x.parent for x in found} == {"CompiledFunctionBackward"}
    assert loops(analyze([shared_file(A100)]).views.store, 1) == []  # DDP: 7 bucketed calls


def test_the_nccl_finding_claims_the_loop_and_its_replay_removes_it() -> None:
    a = _v100()
    assert a.views is not None and a.views.account is not None
    f = next(f for f in a.findings if f.pattern == "nccl-collective-bound")
    assert f.severity == "red" and a.findings[0] is f
    row = a.views.account.slice("collective_loop")
    assert row is not None
    g = a.views.grad_sync[0]
    span = g.loop_ns / g.steps
    # the GPU idle charged to the loop is part of the loop's span, not more
    assert 0 < row.ns < span
    # the mean spacing: the loops' span over their calls (the median of one loop, 320 µs in
    # step 3, read 404 × 320 µs = 129 ms against a 122.66 ms span)
    assert f"They run as a loop on one thread (`T 783658/785244`) under " \
           f"`CompiledFunctionBackward`: 404 calls per step spanning {span / 1e6:.2f} ms" \
           in f.observation
    assert f"one every {g.loop_ns / g.loop_calls / 1e3:.1f} µs on average" in f.observation
    assert f.fix.startswith("Reduce the gradients in buckets, not one tensor at a time: the 404 "
                            "all-reduces per step run inside the compiled backward "
                            "(`CompiledFunctionBackward`)")
    assert f"the GPU idles {row.ns / 1e6:.2f} ms per step inside it" in f.observation
    # the replay removes the loop's host time, not only the calls': more than the calls' host
    # time per step, less than the loop's span
    rp = f.details["replay"]
    assert isinstance(rp, dict) and rp["lever"] == "bucket-grads"
    saved = rp["measured_step_ns"] - rp["predicted_step_ns"]
    assert g.host_ns / g.steps < saved < span
    # the launch-bound finding no longer holds the loop's idle
    lb = next(f for f in a.findings if f.pattern == "kernel-launch-bound")
    assert "collective_loop" not in lb.details.get("claims", [])


class _Hand:
    """A store filled the way a reader would (synthetic)."""

    def __init__(self) -> None:
        self.store = Store()
        self.store.add_artifact(artifact_id=1, path="hand.json", kind="kineto", status="ok")
        self.n = 0

    def host(self, name: str, s_us: int, e_us: int, tid: str = "2") -> None:
        self.n += 1
        self.store.sql("INSERT INTO host_ops (artifact_id, op_id, pid, tid, kind, name, "
                       "start_ns, dur_ns, depth) VALUES (1, ?, '1', ?, 'op', ?, ?, ?, 1)",
                       [self.n, tid, name, s_us * 1000, (e_us - s_us) * 1000])

    def kernel(self, family: str, s_us: int, e_us: int) -> None:
        self.n += 1
        self.store.sql("INSERT INTO gpu_ops (artifact_id, gpu_op_id, device, stream, kind, "
                       "name, family, start_ns, dur_ns) VALUES (1, ?, 0, 7, 'kernel', 'k', ?,"
                       " ?, ?)", [self.n, family, s_us * 1000, (e_us - s_us) * 1000])


@pytest.mark.parametrize("compute_per_call,spacing_us,calls,expected", [
    (0, 300, 20, 1),  # a loop: 20 calls 300 µs apart, only their collective kernels
    (1, 300, 20, 1),  # one kernel per call (a scale or copy kernel): still the loop
    (3, 300, 20, 0),  # backward's compute between the calls: hooks, not a loop
    (0, 1500, 20, 0),  # calls 1.5 ms apart: over gap_max_ns
    (0, 300, 15, 0),  # fewer than min_calls
])
def test_what_makes_a_loop(compute_per_call: int, spacing_us: int, calls: int,
                           expected: int) -> None:
    h = _Hand()
    for i in range(calls):
        t = 1000 + i * spacing_us
        h.host("c10d::allreduce_", t, t + 90)
        h.kernel("comm", t + 100, t + 110)
        for j in range(compute_per_call):
            h.kernel("gemm", t + 120 + j * 10, t + 125 + j * 10)
    found = loops(h.store, 1, scoped=False)
    assert len(found) == expected
    if expected:
        assert found[0].calls == calls and found[0].spacing_ns == spacing_us * 1000
        assert (found[0].start_ns, found[0].end_ns) == (1000_000, (1000 + (calls - 1)
                                                                   * spacing_us + 90) * 1000)


def test_whatif_bucket_grads_says_what_it_removed() -> None:
    w = whatif.run([shared_file(V100)], ["bucket-grads"])
    assert w.selfcheck_ok
    assert "between the calls of per-tensor loops" in w.changes[0]

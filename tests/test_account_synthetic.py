"""The time account's rules on a hand-built Kineto trace, every number computed by hand.

Three `train_step` user annotations of 1000 µs (a repeating range: the step source). In step
k (T = 1000·k µs): DataLoader op [T, T+300); cudaLaunchKernel [T+300, T+310) → kernel K1
[T+320, T+520); cudaStreamSynchronize [T+400, T+525); aten::bar [T+525, T+700);
cudaLaunchKernel [T+700, T+710) → kernel K2 [T+715, T+815); nothing after.

Per step: busy 300 µs. Idle by rule:
- [T, T+300) data loading 300; [T+300, T+310) launch overhead 10; [T+310, T+320) no host op:
  unexplained 10 (step 1: before the first kernel the empty [T+310, T+320) is capture
  boundary, but the launch call keeps its cause — the kernel started 10 µs after its launch
  returned, so nothing uncaptured sat ahead of it: host work in a steady step is the workload);
- the gap [T+520, T+715) opens while the host is in the sync: sync 5 + the refill (aten::bar
  175, launch 10) → sync_drained 190; [T+710, T+715) no host op → unexplained 5;
- [T+815, T+1000) no host op → unexplained 185 (step 2: after the last kernel → capture
  boundary).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from crossview.analysis import analyze
from crossview.scope.filter import Filter

US = 1000


def _x(cat: str, name: str, ts: float, dur: float, pid: int = 1, tid: int = 1, **args: Any
       ) -> dict[str, Any]:
    return {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": ts, "dur": dur,
            "args": args}


def _trace(tmp: Path) -> Path:
    ev: list[dict[str, Any]] = []
    corr = 0
    for k in range(3):
        t = 1000 * k
        ev.append(_x("user_annotation", "train_step", t, 1000))
        ev.append(_x("cpu_op", "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__",
                     t, 300))
        for launch, start, dur, name in ((300, 320, 200, "k1"), (700, 715, 100, "k2")):
            corr += 1
            ev.append(_x("cuda_runtime", "cudaLaunchKernel", t + launch, 10, correlation=corr))
            ev.append(_x("kernel", name, t + start, dur, pid=0, tid=7, device=0, stream=7,
                         correlation=corr))
        ev.append(_x("cuda_runtime", "cudaStreamSynchronize", t + 400, 125))
        ev.append(_x("cpu_op", "aten::bar", t + 525, 175))
    p = tmp / "synthetic_steps.json"
    p.write_text(json.dumps({"traceEvents": ev}))
    return p


def test_account_rules_by_hand(tmp_path: Path) -> None:
    a = analyze([_trace(tmp_path)])
    v = a.views
    assert v is not None
    assert v.steps.source == "annotation:train_step"
    assert [x.wall_ns for x in v.steps.steps] == [1000 * US] * 3
    acc = v.account
    assert acc is not None
    (dev,) = acc.per_device
    rows = {s.step: s for s in dev.steps}
    assert {k: s.busy_ns for k, s in rows.items()} == {1: 300 * US, 2: 300 * US, 3: 300 * US}
    assert rows[2].idle_by_cause == {"data_loading": 300 * US, "launch_overhead": 10 * US,
                                     "sync_drained": 190 * US, "unexplained": 200 * US}
    # step 1: the first kernel was not behind uncaptured work (launched, then started within
    # the queue latency), so the launch call before it is launch overhead, not the capture's
    # edge; only the empty [T+310, T+320) is capture boundary. The DataLoader keeps its cause
    assert rows[1].idle_by_cause == {"data_loading": 300 * US, "launch_overhead": 10 * US,
                                     "sync_drained": 190 * US, "unexplained": 190 * US,
                                     "capture_boundary": 10 * US}
    assert rows[3].idle_by_cause == {"data_loading": 300 * US, "launch_overhead": 10 * US,
                                     "sync_drained": 190 * US, "unexplained": 15 * US,
                                     "capture_boundary": 185 * US}
    # both launches find the queue empty: the host never got ahead
    assert acc.launch_bound and acc.empty_queue_share == 1.0
    # the longest gap of step 2 is the data loading one, named with its frame
    g = rows[2].top_gaps[0]
    # the gap [T-185, T+320) clipped to the step: 320 µs
    assert g.cause == "data_loading" and g.dur_ns == 320 * US
    assert g.calls[0].frame.startswith("enumerate(DataLoader)")


def test_step_filter_selects_one_step(tmp_path: Path) -> None:
    a = analyze([_trace(tmp_path)], Filter(step="2"))
    v = a.views
    assert v is not None and [x.number for x in v.steps.steps] == [2]

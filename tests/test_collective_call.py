"""`nccl:<collective>` host ranges are the call that enqueues the collective, not a wait on
peers (real hta_v100_ddp_training trace: 2,020 `nccl:all_reduce` ranges over 5 steps, 404 per
step, median 59 µs — counted here from the raw JSON). The time account charged the GPU idle
inside them to "waiting on a collective's peers"; it became "collective calls (host enqueue)",
and since decision 0807 — every one of these calls lies inside the autograd thread's
per-tensor loop — "per-tensor collective loop (host)", claimed by the NCCL finding, which lists
its parts. Skips without ../shared/data."""

from __future__ import annotations

import gzip
import json
import statistics

from conftest import SHARED_DATA, shared_file
from crossview.analysis import analyze

V100 = SHARED_DATA / "kineto" / "hta_v100_ddp_training.json.gz"


def test_nccl_ranges_are_host_enqueue_not_peer_waits() -> None:
    with gzip.open(shared_file(V100)) as fh:
        ev = json.load(fh)["traceEvents"]
    calls = [e for e in ev if e.get("name") == "nccl:all_reduce" and e.get("ph") == "X"]
    assert (len(calls), statistics.median(e["dur"] for e in calls)) == (2020, 59.0)
    a = analyze([V100])
    assert a.views.account is not None
    rows = {c.cause: c for c in a.views.account.steady_state}
    assert "collective_call" not in rows and "collective_wait" not in rows
    loop = rows["collective_loop"]
    assert loop.label == "per-tensor collective loop (host)"
    assert "nccl:all_reduce" in [f.frame for f in loop.top_frames]
    f = next(f for f in a.findings if f.pattern == "nccl-collective-bound")
    assert {"collective_call", "collective_loop"} <= set(f.details["claims"])  # type: ignore
    assert f"per-tensor collective loop (host) {loop.ns / 1e6:.2f} ms" in f.observation

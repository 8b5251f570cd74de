"""graph-unrecorded on the real hta_a100_16rank_training_graphs trace: idle inside replays.

A graph replay runs its nodes back to back, yet this capture's 70 replays record 1–20 GPU ops
each and the GPU shows no op for up to 25.9 ms between one replay's first and last recorded op
(CUPTI before CUDA 12 misses kernels of graphs captured before the profiler started,
pytorch/pytorch#75504). The test recomputes from the raw JSON, independently of crossview: per
graph launch (its `cudaGraphLaunch` correlation), the window from its first to its last GPU op;
per step (start to the next step's start, the last to its own end, as crossview cuts steps),
the window time no kernel, memcpy or memset covers: 29.507, 46.696, 51.878 and 46.555 ms in steps
550–553 (mean over the 5 steady steps 45.31 ms, 21.1% of the step). The account row must
equal it per step; the finding leads the recap and the sync-bound finding, whose waits may wait
on that work, is no longer red. Skips without ../shared/data."""

from __future__ import annotations

import gzip
import json
from collections import defaultdict

import pytest

import oracle
from conftest import SHARED_DATA, shared_file
from crossview.analysis import analyze

A100_16 = SHARED_DATA / "kineto" / "hta_a100_16rank_training_graphs.json.gz"
GPU_CATS = ("kernel", "gpu_memcpy", "gpu_memset")


def _ns(us: float) -> int:
    return round(1000 * us)


def _independent() -> dict[int, int]:
    with gzip.open(shared_file(A100_16)) as fh:
        xs = [e for e in json.load(fh)["traceEvents"] if e.get("ph") == "X"]
    gpu = [e for e in xs if e.get("cat") in GPU_CATS]
    by_corr: dict[object, list[dict]] = defaultdict(list)
    for e in gpu:
        by_corr[(e.get("args") or {}).get("correlation")].append(e)
    wins = []
    for g in (e for e in xs if e.get("name") == "cudaGraphLaunch"):
        ops = by_corr.get(g["args"]["correlation"], [])
        if len(ops) > 1:
            wins.append((_ns(min(o["ts"] for o in ops)),
                         _ns(max(o["ts"] + o["dur"] for o in ops))))
    wins = oracle.union_intervals(wins)
    busy = oracle.union_intervals((_ns(e["ts"]), _ns(e["ts"] + e["dur"])) for e in gpu)
    steps = sorted((e for e in xs if str(e.get("name", "")).startswith("ProfilerStep#")
                    and e.get("cat") != "gpu_user_annotation"), key=lambda e: e["ts"])
    out = {}
    ends = [_ns(n["ts"]) for n in steps[1:]] + [_ns(steps[-1]["ts"] + steps[-1]["dur"])]
    for s, hi in zip(steps, ends, strict=True):
        lo = _ns(s["ts"])
        w = [(max(a, lo), min(b, hi)) for a, b in wins if b > lo and a < hi]
        covered = oracle.union_length(
            [(max(a, x), min(b, y)) for a, b in busy for x, y in w if b > x and a < y])
        out[int(s["name"].split("#")[1])] = sum(b - a for a, b in w) - covered
    return out


@pytest.fixture(scope="module")
def run():
    return analyze([shared_file(A100_16)])


def test_account_row_is_the_idle_inside_replays(run) -> None:
    want = _independent()
    acc = run.views.account
    got = {s.step: s.idle_by_cause.get("graph_unrecorded", 0)
           for d in acc.per_device for s in d.steps}
    for n in (550, 551, 552, 553, 554):
        assert got[n] == want[n], n
    assert [round(want[n] / 1e6, 2) for n in (550, 551, 552, 553)] == [29.51, 46.7, 51.88,
                                                                       46.55]
    row = acc.slice("graph_unrecorded")
    assert row is not None and row.ns == sum(want.values()) // 5  # 5 steady steps
    assert round(100 * row.share_of_step, 1) == 21.1


def test_finding_leads_and_sync_bound_is_not_red(run) -> None:
    top = run.findings[0]
    assert top.pattern == "graph-unrecorded" and top.severity == "red"
    assert "_init_for_cuda_graphs" in top.fix and "--cuda-graph-trace=node" in top.fix
    assert "162.83 ms" in top.observation  # the median launch → start lag of eager ops
    sync = next(f for f in run.findings if f.pattern == "sync-bound")
    assert sync.severity == "yellow" and "re-capture before acting" in sync.observation


def test_captures_without_graph_gaps_are_unchanged() -> None:
    a = analyze([shared_file(SHARED_DATA / "kineto" / "hta_a100_ddp_resnet_nccl.json.gz")])
    assert a.views.account.slice("graph_unrecorded") is None
    assert not [f for f in a.findings if f.pattern == "graph-unrecorded"]

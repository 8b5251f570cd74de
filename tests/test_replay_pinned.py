"""Replays pinned by launch → GPU start delays the graph cannot attribute (replay/measure.py
`pinned`, replay/whatif.py `Pinned`, replay/findings.py).

A GPU op whose start nothing the graph models explains keeps its measured launch → start
delay; no lever moves that time. When such delays hold ≥ `pinned_share_min` of the median
step's critical path, a replayed effect is a lower bound and cannot refute a finding.

- Synthetic graphs (built by hand here) check what `pinned` counts.
- hta_a100_16rank_training_graphs: the NCCL finding used to read "The replay does not bear
  this out today: 0.0%" — an artifact of 150.68 ms of such delays in the median step.
- kineto_v100_resnet50_workers0 (the lever pair whose prediction is checked against the
  workers4 capture) has none: its prediction and text stay as they were.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

import pytest

from conftest import SHARED_DATA, shared_file
from crossview.analysis import Analysis, analyze
from crossview.replay import graph as graph_mod
from crossview.replay.graph import CALL, KERNEL, Cons, Graph
from crossview.replay.measure import pinned
from crossview.replay.replay import replay
from crossview.replay.steps import Step

A100_16 = SHARED_DATA / "kineto" / "hta_a100_16rank_training_graphs.json.gz"
WORKERS0 = SHARED_DATA / "kineto" / "kineto_v100_resnet50_workers0.pt.trace.json.gz"
MS = 1_000_000


def _graph(lag: int, graph_kernel: bool = False) -> Graph:
    """One host thread: a launch call at 0–10 µs and a 1 ms host op after it; one kernel that
    starts `lag` after its launch (binding: the launch, offset = the measured lag)."""
    g = Graph()
    call = g.add(CALL, "T 1/1", "cudaLaunchKernel", 10_000, 0)
    cpu = g.add("cpu", "T 1/1", "aten::mm", MS, 10_000)
    g.cons[cpu].append(Cons(call, True, 0, "chain"))
    k = g.add(KERNEL, "S 0/7", "gemm", MS, lag)
    g.cons[k].append(Cons(call, False, lag, "launch"))
    if graph_kernel:
        g.tags[k].add("graph")
    return g


def _whole(g: Graph) -> Step:
    return Step("capture", "", 0, max(g.mstart[i] + g.dur[i] for i in range(len(g))))


def test_a_long_measured_launch_delay_is_pinned() -> None:
    g = _graph(5 * MS)
    t = replay(g)
    # the step ends with the kernel: its path runs kernel (1 ms) ← launch delay (5 ms) ← call
    assert pinned(g, t, [_whole(g)], 0, MS) == 5 * MS
    # a launch-latency-sized delay is not; nor is a graph-replayed kernel's
    g2 = _graph(20_000)
    assert pinned(g2, replay(g2), [_whole(g2)], 0, MS) == 0
    g3 = _graph(5 * MS, graph_kernel=True)
    assert pinned(g3, replay(g3), [_whole(g3)], 0, MS) == 0


@cache
def _analysis(path: Path) -> Analysis:
    return analyze([shared_file(path)])


def test_a_pinned_replay_refutes_nothing_and_says_it_is_a_lower_bound() -> None:
    a = _analysis(A100_16)
    nccl = next(f for f in a.findings if f.pattern == "nccl-collective-bound")
    assert "does not bear this out" not in nccl.observation
    rep = nccl.details["replay"]
    assert isinstance(rep, dict) and rep["lever"] == "overlap-comm"
    pin = rep["pinned_ns"]
    assert isinstance(pin, int)
    # the median steady step is ~216 ms (ProfilerStep#552); the pinned part is most of it
    assert 0.25 * rep["measured_step_ns"] <= pin < rep["measured_step_ns"]
    assert "a lower bound" in nccl.expected_effect
    sync = next(f for f in a.findings if f.pattern == "sync-bound")
    assert f"{pin / 1e6:.2f} ms of ProfilerStep#552" in sync.expected_effect
    assert "cannot attribute" in sync.expected_effect


def test_below_the_share_the_refutation_comes_back(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(graph_mod.params()["graph"], "pinned_share_min", 0.99)
    a = analyze([shared_file(A100_16)])
    nccl = next(f for f in a.findings if f.pattern == "nccl-collective-bound")
    assert "does not bear this out" in nccl.observation
    assert "pinned_ns" not in nccl.details["replay"]  # type: ignore[operator]


def test_the_lever_pair_capture_is_not_pinned() -> None:
    a = _analysis(WORKERS0)
    f = next(f for f in a.findings if f.pattern == "dataloader-starved")
    assert "152.54 → 120.60 ms" in f.expected_effect
    assert "cannot attribute" not in f.expected_effect
    assert "pinned_ns" not in f.details["replay"]  # type: ignore[operator]


def test_a_pinned_replay_makes_a_bound_row_in_the_ledger(tmp_path: Path) -> None:
    """Synthesis of the 16-rank trace with an ncu report (two sources): the sync-bound
    lever is the finding's share of the span (≤ …), not the pinned replay's 0.20 ms saving
    ranked as a prediction."""
    import shutil

    from crossview.synthesis import synthesize

    ncu = shared_file(SHARED_DATA / "ncu" / "esmm_a10g_sgemm_variants.ncu-rep")
    b = tmp_path / "bundle"
    b.mkdir()
    for f in (shared_file(A100_16), ncu):
        shutil.copy(f, b / f.name)
    (b / "bundle.yaml").write_text("context: {model: dlrm, hardware: A100, engine: torchrec}\n")
    syn = synthesize.run(b)
    row = next(lv for lv in syn.levers if lv.id == "finding:sync-bound")
    assert row.effect is None or row.effect == "bound"
    assert row.expected_effect().startswith("≤ ")

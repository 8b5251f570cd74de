"""Many ranks, one step (issue 42) on the REAL 8-rank Megatron-LM TP8 forward in
../shared/data/kineto/megatron_tp8_a100 (all ranks of one job, one clock).

Every expected number is computed here from the raw traces (gzip + json, not crossview): the
84 NCCL all-reduce kernels of each rank in start order are the same collectives on every rank
(README), so per collective the last rank is the one with the latest start (ties: the lower
rank, as crossview breaks them), the group waited its start spread for it, and each rank's
wait is min(last start − its start, its kernel's duration), its transfer the rest. README
facts checked beside them: rank 0 last at 32, rank 6 at 28, rank 3 at 15, ranks 1 and 2 at 4,
rank 5 at 1; summed start spread 446.7 ms; end spread ≤ 49 µs.
"""

from __future__ import annotations

import gzip
import json
from collections import defaultdict
from functools import cache
from pathlib import Path

import pytest

from conftest import SHARED_DATA, SHARED_DATA_ABSENT, run_cli

JOB = SHARED_DATA / "kineto" / "megatron_tp8_a100"
RANKS = range(8)


def need() -> Path:
    if not (JOB / "rank-0.json.gz").is_file():
        pytest.skip(SHARED_DATA_ABSENT)
    return JOB


@cache
def raw_events(r: int) -> list[dict]:
    return json.loads(gzip.decompress((need() / f"rank-{r}.json.gz").read_bytes()))[
        "traceEvents"]


def raw_collectives() -> dict[int, list[tuple[float, float, str]]]:
    """rank → its NCCL kernels' (start, end) in µs and name, in start order."""
    return {r: sorted((e["ts"], e["ts"] + e["dur"], e["name"]) for e in raw_events(r)
                      if e.get("cat") == "kernel" and "nccl" in e["name"].lower())
            for r in RANKS}


def raw_late() -> tuple[dict[int, int], dict[int, int], int]:
    """(last-at counts, group wait ns per last rank, summed start spread ns)."""
    calls = raw_collectives()
    last: dict[int, int] = defaultdict(int)
    wait: dict[int, int] = defaultdict(int)
    total = 0
    for i in range(84):
        starts = {r: calls[r][i][0] for r in RANKS}
        spread = round((max(starts.values()) - min(starts.values())) * 1000)
        total += spread
        if spread:
            lr = max(RANKS, key=lambda r: (starts[r], -r))
            last[lr] += 1
            wait[lr] += spread
    return dict(last), dict(wait), total


def raw_step_ns(r: int) -> int:
    """The rank's ProfilerStep: its range, or to the end of the last kernel launched inside
    it when that ends later (the steps table's rule, decision 0806)."""
    ev = raw_events(r)
    st = next(e for e in ev if e.get("name", "").startswith("ProfilerStep#"))
    s, e = st["ts"], st["ts"] + st["dur"]
    launched = {x["args"]["correlation"] for x in ev if x.get("cat") == "cuda_runtime"
                and s <= x["ts"] < e and "correlation" in x.get("args", {})}
    tail = max((k["ts"] + k["dur"] for k in ev if k.get("cat") == "kernel"
                and k["args"].get("correlation") in launched), default=e)
    return round((max(e, tail) - s) * 1000)


@pytest.fixture(scope="module")
def analysis():  # type: ignore[no-untyped-def]
    from crossview.analysis import analyze

    return analyze([need()])


@pytest.fixture(scope="module")
def doc(analysis) -> dict:  # type: ignore[no-untyped-def]
    from crossview.render.json import as_dict

    return json.loads(json.dumps(as_dict(analysis)))


def test_raw_facts_match_the_readme() -> None:
    last, _, total = raw_late()
    assert last == {0: 32, 6: 28, 3: 15, 1: 4, 2: 4, 5: 1}
    assert abs(total - 446_708_000) <= 1000
    calls = raw_collectives()
    ends = max(max(calls[r][i][1] for r in RANKS) - min(calls[r][i][1] for r in RANKS)
               for i in range(84))
    assert ends <= 49


def test_late_ranks_by_share_match_the_start_order(doc: dict) -> None:
    last, wait, total = raw_late()
    late = doc["rank_analysis"]["late_ranks"]
    assert late["collectives"] == 84 and late["summed_start_spread_ns"] == total
    got = {r["rank"]: r for r in late["ranks"]}
    assert {r: x["last_at"] for r, x in got.items()} == last
    for r, ns in wait.items():
        assert got[r]["group_wait_ns"] == ns
        assert got[r]["share"] == pytest.approx(ns / total)
    # two alternating late ranks named, with shares (53.1% and 40.7%); the vote names none
    assert [r["rank"] for r in late["ranks"] if r["named"]] == [0, 6]
    assert round(got[0]["share"], 3) == 0.531 and round(got[6]["share"], 3) == 0.407
    assert doc["stragglers"] == []
    for r in (0, 6):  # why, from their own accounts: their GPUs waited for their hosts
        cause = got[r]["cause"]
        assert cause["kind"] == "host" and cause["excess"][0]["cause"] == "cpu_dispatch"
        assert cause["stalls"] and cause["stalls"][0]["self_ns"] >= 1_000_000


def test_wait_and_transfer_per_rank(doc: dict) -> None:
    calls = raw_collectives()
    want = {r: [0, 0] for r in RANKS}
    for i in range(84):
        last = max(calls[r][i][0] for r in RANKS)
        for r in RANKS:
            s, e, _ = calls[r][i]
            w = min(last - s, e - s)
            want[r][0] += round(w * 1000)
            want[r][1] += round((e - s - w) * 1000)
    got = {x["rank"]: x for x in doc["ranks"]}
    for r in RANKS:
        assert (got[r]["wait_ns"], got[r]["transfer_ns"]) == tuple(want[r]), r
    # the comm time is mostly waiting: transfer ~50 ms on every rank, wait 191–445 ms
    assert all(49_000_000 < got[r]["transfer_ns"] < 51_000_000 for r in RANKS)
    # busbw from the transfer part only: the 81 fp16 all-reduces (67.1 MB each) × 8 ranks
    (row,) = [c for c in doc["transfers"]["collectives"] if c["dtype"] == "fp16"]
    xfer = 0
    for i in range(84):
        last = max(calls[r][i][0] for r in RANKS)
        xfer += sum(round(max(0.0, calls[r][i][1] - max(last, calls[r][i][0])) * 1000)
                    for r in RANKS if "_f16_" in calls[r][i][2])
    assert row["count"] == 648 and row["transfer_ns"] == xfer
    busbw = row["message_bytes"] * 648 / (xfer * 1e-9) * 1.75  # nccl-tests: 2(n−1)/n
    assert row["busbw_transfer_bytes_per_s"] == pytest.approx(busbw)
    assert 150e9 < busbw < 300e9 and row["busbw_bytes_per_s"] < 30e9


def test_the_red_is_the_late_ranks_not_ddp_advice(analysis, doc: dict) -> None:  # type: ignore[no-untyped-def]
    reds = [f for f in doc["findings"] if f["severity"] == "red"]
    assert reds and reds[0]["pattern"] == "late-ranks"
    f = reds[0]
    assert f["title"].startswith("Ranks 0 and 6 arrive late")
    assert "53.1%" in f["title"] and "40.7%" in f["title"]
    assert "its GPU waited for its host" in f["observation"]
    for text in (f["fix"], *(x["fix"] for x in doc["findings"]
                             if x["pattern"].startswith("nccl"))):
        assert "bucket_cap_mb" not in text and "FSDP" not in text and "forward_prefetch" \
            not in text
    nccl = [x for x in doc["findings"] if x["pattern"] == "nccl-collective-bound"]
    assert all("--sequence-parallel" in x["fix"] and "--tp-comm-overlap" in x["fix"]
               for x in nccl)
    # the replay across ranks sets the expected effect: lateness alone barely moves the step
    rp = f["details"]["replay"]
    assert rp["measured_step_ns"] == max(raw_step_ns(r) for r in RANKS)
    assert rp["all_ranks_on_time_ns"] < rp["measured_step_ns"]
    assert rp["host_stalls_ns"] < 0.9 * rp["measured_step_ns"]
    from crossview.render.markdown import render

    md = render(analysis)
    assert "**late-ranks**" in md and "**Cross-rank critical path**" in md
    assert "| waiting for a peer | transfer |" in md


def test_critical_path_runs_through_the_ranks(doc: dict) -> None:
    cp = doc["rank_analysis"]["critical_path"]
    steps = {r: raw_step_ns(r) for r in RANKS}
    slow = max(RANKS, key=lambda r: (steps[r], -r))
    assert cp["slowest_rank"] == slow and cp["step_ns"] == steps[slow]
    assert cp["path_ns"] == cp["step_ns"]  # the path covers the step, start to end
    assert sum(x["ns"] for x in cp["by_rank"]) == cp["path_ns"]
    # rank 0's host sets the step: it starts 30.48 ms after rank 6 and never waits on its GPU
    top = cp["by_rank"][0]
    assert top["rank"] == 0 and top["share"] > 0.99


def test_whatif_all_ranks_on_time_prints_the_predicted_step() -> None:
    p = run_cli("whatif", str(need()), "--lever", "all-ranks-on-time", timeout=600)
    assert p.returncode == 0, p.stderr
    assert "8 ranks of one job" in p.stdout and "self-check" in p.stdout
    assert "job step (ProfilerStep#3" in p.stdout and "→ predicted" in p.stdout
    d = json.loads(run_cli("whatif", str(need()), "--lever", "all-ranks-on-time",
                           "--format", "json", timeout=600).stdout)
    assert d["selfcheck"]["ok"] and all(e <= 0.02 for e in d["selfcheck"]["per_rank"].values())
    assert len(d["selfcheck"]["per_rank"]) == 8 and d["selfcheck"]["nodes_moved"] == 0
    (js,) = d["job_steps"]
    assert js["measured_ns"] == js["replayed_ns"] == max(raw_step_ns(r) for r in RANKS)
    assert js["predicted_ns"] < js["measured_ns"]
    for r in d["per_rank"]:  # every rank's measured step reproduced by the unchanged replay
        (s,) = r["steps"]
        assert s["measured_ns"] == raw_step_ns(r["rank"]) == s["replayed_ns"]


def test_lever_on_one_rank_and_bad_rank() -> None:
    from crossview.errors import UsageError
    from crossview.replay.whatif import run

    w = run([need()], ["host-stalls@0"])
    assert w.to_dict()["changes"] == [c for c in w.changes if c.startswith("rank 0: ")]
    with pytest.raises(UsageError, match="no rank 9"):
        run([need()], ["rank-on-time=9"])


def test_segment_frames_only_where_a_named_rank_arrived_last(analysis) -> None:  # type: ignore[no-untyped-def]
    """rank_segments names gap frames only for a named late rank's segments it arrived last
    at (the only ones `combine` reads): the same frames as walking every segment's gaps and
    keeping those; no frames for a rank not named; the same account rows either way."""
    from crossview.views.device import account
    from crossview.views.distributed import late_cause, rank_job

    v = analysis.views
    job = v.ranks
    store = v.store
    ids = rank_job.artifact_ids(store)
    waits = rank_job.peer_waits(store, job)
    named = {r.rank for r in job.late.named}
    assert named and len(named) < 8
    full = account.compute  # every segment's gaps walked, as before the restriction

    def every_gap(store, steps, unions, kernels, waits, gaps_for=None, reads=None):  # type: ignore[no-untyped-def]
        return full(store, steps, unions, kernels, waits, reads=reads)

    for r in job.ranks:
        aid = ids[r.path]
        segs = job.late.segments.get(r.rank, [])
        mine = [w for w in waits if w.artifact_id == aid]
        got = late_cause.rank_segments(store, aid, r.rank, r.path, segs, mine, r.rank in named)
        account.compute = every_gap
        try:
            ref = late_cause.rank_segments(store, aid, r.rank, r.path, segs, mine, False)
        finally:
            account.compute = full
        assert got.rows == ref.rows
        if r.rank not in named:
            assert not any(got.frames.values())
            continue
        last = {s.collective for s in segs if s.last}
        want = {c: fr for c, fr in ref.frames.items() if c in last and fr}
        assert {c: fr for c, fr in got.frames.items() if fr} == want
        assert want  # the late rank's arrivals do name frames (rank 0: aten::empty, …)


@pytest.mark.parametrize("levers", [["host-stalls"], ["host-stalls@0"]])
def test_duration_levers_without_a_rebuild(monkeypatch: pytest.MonkeyPatch,
                                           levers: list[str]) -> None:
    """host-stalls on every rank (or one) applied to a copy of the unchanged join
    (rank_graph.relevered) predicts exactly what the rebuild of the join does."""
    from crossview.replay import rank_graph
    from crossview.replay.whatif import run

    taken: list[bool] = []
    fast = rank_graph.relevered

    def spy(*a, **k):  # type: ignore[no-untyped-def]
        got = fast(*a, **k)
        taken.append(got is not None)
        return got

    monkeypatch.setattr(rank_graph, "relevered", spy)
    got = run([need()], levers).to_dict()
    assert taken == [True]
    monkeypatch.setattr(rank_graph, "relevered", lambda *a, **k: None)
    want = run([need()], levers).to_dict()
    assert got == want
    assert got["median"]["predicted_step_ns"] < got["median"]["measured_step_ns"]


def test_the_two_accounts_share_their_reads(analysis) -> None:  # type: ignore[no-untyped-def]
    """Decision 0913: the steady steps' account and the late-ranks segments' account read
    each rank's host ops and loop spans once (one entry per rank's device), and read alone
    (no shared reads) they come out the same."""
    from crossview.views.device import account
    from crossview.views.distributed import late_cause, rank_job

    v = analysis.views
    job = v.ranks
    acc = v.account
    reads = v.shared_reads
    assert reads is not None
    assert sorted(a for a, _d, _k in reads.host_ops) == list(range(1, 9))  # 8 ranks, 1 GPU each
    assert sorted(reads.loops) == list(range(1, 9))
    alone = account.compute(v.store, v.steps, v.device_union, None, v.peer_wait)
    assert alone is not None
    assert [(d.artifact, d.device, [vars(s) for s in d.steps]) for d in alone.per_device] == \
        [(d.artifact, d.device, [vars(s) for s in d.steps]) for d in acc.per_device]
    store = v.store
    ids = rank_job.artifact_ids(store)
    waits = rank_job.peer_waits(store, job)
    named = {r.rank for r in job.late.named}
    for r in job.ranks:
        aid = ids[r.path]
        segs = job.late.segments.get(r.rank, [])
        mine = [w for w in waits if w.artifact_id == aid]
        shared = late_cause.rank_segments(store, aid, r.rank, r.path, segs, mine,
                                          r.rank in named, reads=reads)
        own = late_cause.rank_segments(store, aid, r.rank, r.path, segs, mine, r.rank in named)
        assert (shared.rows, shared.frames, shared.stalls) == (own.rows, own.frames, own.stalls)


def test_one_rank_keeps_no_shared_reads() -> None:
    """A single capture's one account frees its host ops once painted: nothing is kept."""
    from crossview.analysis import analyze

    one = need() / "rank-3.json.gz"
    v = analyze([one]).views
    assert v is not None and v.shared_reads is None
    assert v.account is not None

"""Many ranks, one step on SYNTHETIC jobs, where the truth is planted:

- a 4-rank job built from the REAL A100 DDP trace (tests/multirank_job.build_late): rank 2's
  host stalls 3 ms before 3 of the 21 collectives while the others spin in them (every
  collective still ends together), and ranks 1 and 3 run on clocks 7 ms ahead and 2.5 ms
  behind — the ranks' kernel spans overlap, so only the collectives' ends can tell;
- per-rank summaries made by hand (clock rules, two alternating late ranks) — no public
  trace has ranks on different clocks or takes turns like this;
- a hand-made joined graph for the rank-on-time lever's shortening.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import multirank_job
from crossview.views.distributed.collectives import CollectiveCall
from crossview.views.distributed.crossrank import merge_ranks
from crossview.views.distributed.ranks import RankSummary
from test_multirank import A100_DDP, cli_json, need

MS = 1_000_000
DELAY_US = 3000.0
LATE = 2
KS = [4, 9, 15]
SHIFTS_US = {1: 7000.0, 3: -2500.0}


@pytest.fixture(scope="module")
def job4(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("job4")
    multirank_job.build_late(need(A100_DDP), out, 4, LATE, DELAY_US, KS, SHIFTS_US)
    return out


@pytest.fixture(scope="module")
def job4_doc(job4: Path) -> dict:
    return cli_json(str(job4))


def test_shifted_clocks_are_aligned_from_the_collectives_ends(job4_doc: dict) -> None:
    ra = job4_doc["rank_analysis"]
    assert ra["clock"] == "collective-ends"
    for r, shift in SHIFTS_US.items():  # rank r's clock runs `shift` ahead: subtract it
        assert abs(ra["offsets_ns"][str(r)] + shift * 1000) <= 1000
        assert ra["clock_errors_ns"][str(r)] <= 1000
    assert ra["offsets_ns"]["2"] == 0 and "rank 1 −7.00 ms" in ra["clock_note"]
    assert ra["max_end_spread_ns"] <= 1000  # once aligned, every collective ends together


def test_the_planted_late_rank_is_named_with_its_wait(job4_doc: dict) -> None:
    late = job4_doc["rank_analysis"]["late_ranks"]
    (r,) = [x for x in late["ranks"] if x["named"]]
    assert r["rank"] == LATE and r["last_at"] == len(KS) and r["share"] == pytest.approx(1.0)
    assert abs(r["group_wait_ns"] - len(KS) * DELAY_US * 1000) <= 3000
    assert late["summed_start_spread_ns"] == r["group_wait_ns"]
    # the others waited the delay at each planted collective; the late rank never waited
    waits = {x["rank"]: x["wait_ns"] for x in job4_doc["ranks"]}
    assert waits[LATE] <= 3000
    assert all(abs(waits[q] - len(KS) * DELAY_US * 1000) <= 3000 for q in (0, 1, 3))
    # its why reads its host: the planted stall sits before each of its late arrivals
    assert r["cause"]["kind"] == "host"
    assert r["cause"]["excess"][0]["excess_ns"] >= 0.9 * len(KS) * DELAY_US * 1000
    f = next(f for f in job4_doc["findings"] if f["pattern"] == "late-ranks")
    assert f["title"].startswith("Rank 2 arrives late") and "host" in f["fix"]


def test_joined_replay_reproduces_every_rank(job4: Path) -> None:
    from crossview.replay.whatif import run

    w = run([job4], ["rank-on-time=2"])
    d = w.to_dict()
    assert d["selfcheck"]["ok"] and max(d["selfcheck"]["per_rank"].values()) <= 0.02
    assert d["selfcheck"]["nodes_moved"] == 0 and len(d["job_steps"]) == 3
    assert d["changes"][0].startswith("rank 2: 3 pre-collective segments")
    assert all(s["predicted_ns"] <= s["measured_ns"] for s in d["job_steps"])


# -- per-rank summaries by hand ------------------------------------------------------------
def _rank(r: int, calls: list[tuple[int, int]], first: int = 0, last: int = 100 * MS
          ) -> RankSummary:
    cs = [CollectiveCall("allreduce", "pg 0", i, None, s, e, "ncclKernel_AllReduce")
          for i, (s, e) in enumerate(calls)]
    return RankSummary(r, f"r{r}.json", r, "distributedInfo", 3, 10 * MS, 100 * MS, 3 * MS,
                       1 * MS, first, last, cs)


def test_two_alternating_late_ranks_named_by_share_not_by_vote() -> None:
    # rank 1 is last at collectives 0, 2 (4 ms, 4 ms), rank 2 at 1, 3 (3 ms, 1 ms): neither
    # is last at more than half, so the vote names no straggler; by share both are named
    ends = [10, 20, 30, 40]
    starts = {0: [5, 15, 25, 35], 1: [9, 16, 29, 36], 2: [6, 18, 26, 36.5]}
    ranks = [_rank(r, [(int(s * MS), e * MS) for s, e in zip(starts[r], ends, strict=True)])
             for r in range(3)]
    job = merge_ranks(ranks, [], 50_000, 0.5)
    assert job is not None and job.stragglers == [] and job.late is not None
    got = {r.rank: r for r in job.late.ranks}
    assert (got[1].last, got[1].group_wait_ns) == (2, 8 * MS)
    assert (got[2].last, got[2].group_wait_ns) == (2, int(4.5 * MS))
    assert job.late.spread_ns == int(12.5 * MS)
    assert [r.rank for r in job.late.named] == [1, 2]
    assert got[1].share == pytest.approx(8 / 12.5)
    # what only the last rank held: its start − the second-last start
    assert got[1].exclusive_ns == 6 * MS and got[2].exclusive_ns == int(2.5 * MS)
    # wait and transfer: rank 0 waits 4 + 3 + 4 + 1.5 ms, transfers the rest
    c0 = job.comm[0]
    assert c0.wait_ns == int(12.5 * MS) and c0.transfer_ns == 20 * MS - int(12.5 * MS)


def test_clock_rules() -> None:
    calls = [(10 * MS, 11 * MS), (20 * MS, 21 * MS), (30 * MS, 31 * MS), (40 * MS, 41 * MS)]
    shifted = [(s + 5 * MS, e + 5 * MS) for s, e in calls]
    # overlapping spans, every end 5 ms off: a clock offset
    job = merge_ranks([_rank(0, calls), _rank(1, shifted)], [], 50_000, 0.5)
    assert job is not None and job.clock == "collective-ends"
    assert job.offsets_ns[1] == -5 * MS and job.clock_errors_ns[1] == 0
    # the same ends: one clock, the disagreement stated
    job = merge_ranks([_rank(0, calls), _rank(1, calls)], [], 50_000, 0.5)
    assert job is not None and job.clock == "global" and job.offsets_ns[1] == 0
    # ends that agree on no offset, spans overlapping: kept as recorded, said so
    odd = calls[:2] + shifted[2:]
    job = merge_ranks([_rank(0, calls), _rank(1, odd)], [], 50_000, 0.5)
    assert job is not None and job.clock == "global" and "disagree by up to 5.00 ms" \
        in job.clock_note
    # no overlap (another node, an hour ahead): aligned at the first shared collective's end
    hour = 3_600_000 * MS
    far = [(s + hour, e + hour) for s, e in odd]
    job = merge_ranks([_rank(0, calls), _rank(1, far, hour, hour + 100 * MS)], [], 50_000,
                      0.5)
    assert job is not None and job.clock == "first-collective-end"
    assert job.offsets_ns[1] == -hour and job.clock_errors_ns[1] == 5 * MS


def test_shorten_takes_the_longest_pieces_of_the_rank_s_own_path() -> None:
    """rank-on-time's cut on a hand-made graph: a host chain (1, 8, 1 ms) launching a
    kernel; 5 ms off the segment come out of the 8 ms node first."""
    from crossview.replay.graph import CALL, CPU, KERNEL, Cons, Graph
    from crossview.replay.rank_graph import RankPart
    from crossview.replay.rank_levers import _shorten
    from crossview.replay.replay import replay

    g = Graph()
    a = g.add(CPU, "T 1/1", "host", 1 * MS, 0)
    b = g.add(CPU, "T 1/1", "host", 8 * MS, 1 * MS)
    c = g.add(CALL, "T 1/1", "cudaLaunchKernel", 1 * MS, 9 * MS)
    k = g.add(KERNEL, "S 0/7", "ncclKernel", 0, 10 * MS)
    g.cons[b].append(Cons(a, True, 0, "chain"))
    g.cons[c].append(Cons(b, True, 0, "chain"))
    g.cons[k].append(Cons(c, True, 0, "launch"))
    t = replay(g)
    part = RankPart(0, 1, "r0.json", 0, len(g), 0, [], "", {}, "R0 ")
    assert _shorten(g, t, part, k, 0, 5 * MS) == 5 * MS
    assert (g.dur[a], g.dur[b], g.dur[c]) == (1 * MS, 3 * MS, 1 * MS)
    assert replay(g).start[k] == 5 * MS


def test_json_rank_keys_only_for_jobs(job4_doc: dict) -> None:
    """A job's JSON carries the new keys inside rank_analysis and ranks; a single capture's
    top level is unchanged (bench/same_answers.py compares it byte for byte)."""
    ra = job4_doc["rank_analysis"]
    assert {"late_ranks", "critical_path", "clock_errors_ns", "critical_path_note"} <= set(ra)
    assert {"wait_ns", "transfer_ns"} <= set(job4_doc["ranks"][0])
    one = cli_json(str(need(A100_DDP)))
    assert one["rank_analysis"] is None and "late_ranks" not in json.dumps(one["findings"])


def test_html_draws_one_lane_per_rank_with_the_critical_path(job4: Path) -> None:
    from crossview.analysis import analyze
    from crossview.render.html import render
    from crossview.render.html.ranks_panel import PATH_STROKE, WAIT_FILL, XFER_FILL

    a = analyze(sorted(job4.iterdir()))
    page = render(a)
    assert '<section id="ranks"' in page and 'href="#ranks"' in page
    svg = page[page.index('<svg class="ranks-lanes"'):]
    svg = svg[:svg.index("</svg>")]
    assert all(f">rank {r}</text>" in svg for r in range(4))
    # the lanes span the job step of the critical path: each planted collective inside it is
    # waited for by the three other ranks; every drawn collective has its transfer
    waits = svg.count(f'fill="{WAIT_FILL}"')
    assert waits >= 3 and waits % 3 == 0
    assert svg.count(f'fill="{XFER_FILL}"') >= 4 * 5
    assert f'stroke="{PATH_STROKE}"' in svg and "critical path on rank" in svg

"""views/distributed/crossrank.py on SYNTHETIC per-rank summaries (no public trace records
`Seq`, and order mismatches need hand-made call lists): sequence-number matching, count mismatches,
duplicate ranks, a missing rank, rank from a file name."""

from __future__ import annotations

from crossview.views.distributed.collectives import CollectiveCall
from crossview.views.distributed.crossrank import MissingRank, merge_ranks
from crossview.views.distributed.ranks import RankSummary, rank_from_name

MS = 1_000_000


def rank(r: int, calls: list[tuple[int | None, int, int]], world: int | None = 2,
         path: str | None = None) -> RankSummary:
    cs = [CollectiveCall("allreduce", "pg 0", i, seq, s, e, "ncclKernel_AllReduce")
          for i, (seq, s, e) in enumerate(calls)]
    return RankSummary(r, path or f"r{r}.json", r, "distributedInfo", world, 10 * MS,
                       100 * MS, 3 * MS, 1 * MS, 0, 100 * MS, cs)


def test_seq_numbers_match_calls_recorded_in_a_different_order() -> None:
    # rank 1's capture starts one collective later: by order it would pair seq 5 with 6
    r0 = rank(0, [(5, 10 * MS, 11 * MS), (6, 20 * MS, 21 * MS)])
    r1 = rank(1, [(6, 23 * MS, 24 * MS), (7, 30 * MS, 31 * MS)])
    job = merge_ranks([r0, r1], [], 50_000, 0.5)
    assert job is not None
    (c,) = job.collectives  # only seq 6 is on both ranks
    assert c.seq == 6 and c.start_spread_ns == 3 * MS and c.last_rank == 1
    (s,) = job.stragglers
    assert s.rank == 1 and s.skew_ns == 3 * MS and s.collective == "allreduce seq 6 (pg 0)"
    assert s.windows == [(20 * MS, 23 * MS)]


def test_order_matching_notes_count_mismatch_and_skips_small_skew() -> None:
    r0 = rank(0, [(None, 10 * MS, 11 * MS), (None, 20 * MS, 21 * MS)])
    r1 = rank(1, [(None, 10 * MS + 10_000, 11 * MS)])  # 10 µs: launch jitter, not skew
    job = merge_ranks([r0, r1], [], 50_000, 0.5)
    assert job is not None and len(job.collectives) == 1 and not job.stragglers
    assert any("different numbers of calls" in n for n in job.notes)


def test_duplicate_rank_and_missing_rank_make_it_partial() -> None:
    r0 = rank(0, [(None, 10 * MS, 11 * MS)], world=3)
    dup = rank(0, [(None, 10 * MS, 11 * MS)], world=3, path="copy.json")
    r2 = rank(2, [(None, 12 * MS, 13 * MS)], world=3)
    job = merge_ranks([r0, dup, r2], [MissingRank("rank-1.json", 1, "truncated")], 50_000,
                      0.5)
    assert job is not None and [r.rank for r in job.ranks] == [0, 2]
    assert job.partial and "2 of 3 ranks" in job.partial_note()
    assert any("copy.json is rank 0 again" in n for n in job.notes)
    assert job.stragglers[0].rank == 2


def test_rank_from_file_name() -> None:
    assert rank_from_name("/x/vllm-trace-rank-3-of-8.json.gz") == 3
    assert rank_from_name("worker_rank_12.pt.trace.json") == 12
    assert rank_from_name("rank0.json") == 0
    assert rank_from_name("/x/frankly.json") is None and rank_from_name("tp8.json") is None

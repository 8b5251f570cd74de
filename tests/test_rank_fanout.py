"""Multi-rank analysis fanned out per rank file (`analyze --workers N | --dask local`,
rank_fanout.py) and multi-rank analysis over the perf-lake (`analyze --lake --run`).

Jobs are built from the REAL A100 DDP trace in ../shared/data (tests/multirank_job.py: three
copies, rank 2 shifted 5 ms late from the 6th collective on — 15 late collectives, as
test_multirank.py checks against the raw JSON). The reference for every fanned-out or lake
result is crossview's in-process analysis of the same files, whose rank numbers
test_multirank.py pins against the raw trace; the planted straggler and skew are checked
here again against the plant itself. The corrupt rank is a truncated copy (built here).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import multirank_job
from crossview.analysis import analyze
from crossview.lake.fanout import Engine, fan_out
from crossview.rank_task import ExplainResult, ExplainTask, RankTask, explain_file
from crossview.scope.filter import Filter
from test_lake import cli
from test_multirank import A100_DDP, DELAY_US, FROM, STRAGGLER, need

RANK_KEYS = ("ranks", "stragglers", "rank_analysis")
# the joined replay of all ranks runs in process only (it needs every rank's graph in one
# process): under --workers/--dask rank_analysis says so instead
REPLAY_KEYS = ("critical_path", "critical_path_note")


def same_ranks(got: dict, ref: dict) -> None:
    """The rank keys of a fanned-out analysis equal the in-process ones, the replay aside."""
    for k in RANK_KEYS:
        a, b = got[k], ref[k]
        if k == "rank_analysis" and a is not None and b is not None:
            assert a["critical_path"] is None and "--workers/--dask" in a["critical_path_note"]
            a = {x: y for x, y in a.items() if x not in REPLAY_KEYS}
            b = {x: y for x, y in b.items() if x not in REPLAY_KEYS}
        assert a == b, k
H100 = A100_DDP.parent / "tracelens_h100_hf_qwen1.5_0.5b_forward.json.gz"


@pytest.fixture(scope="module")
def job(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("fanjob")
    multirank_job.build(need(A100_DDP), out, 3, STRAGGLER, DELAY_US, FROM)
    return out


def doc(*args: str | Path, rc: int = 0) -> dict:
    p = cli("analyze", *args, "--format", "json")
    assert p.returncode == rc, p.stderr[-3000:]
    return json.loads(p.stdout)


@pytest.fixture(scope="module")
def in_process(job: Path) -> dict:
    return doc(job)


def _check_planted(d: dict) -> None:
    (s,) = d["stragglers"]
    assert s["rank"] == STRAGGLER and s["late_collectives"] == 15
    assert abs(s["skew_ns"] - DELAY_US * 1000) <= 0.05 * DELAY_US * 1000
    assert [r["rank"] for r in d["ranks"]] == [0, 1, 2]


def test_workers_equal_in_process(job: Path, in_process: dict) -> None:
    got = doc(job, "--workers", "2")
    _check_planted(in_process)
    same_ranks(got, in_process)
    # the late rank's why is read in workers too (round 2: every rank's segment accounts)
    (late,) = [r for r in got["rank_analysis"]["late_ranks"]["ranks"] if r["named"]]
    assert late["rank"] == STRAGGLER and late["cause"] is not None
    assert in_process["fanout"] is None
    f = got["fanout"]
    assert f["rank_files"] == 3 and f["detail_rank"] == STRAGGLER
    assert f["detail_path"].endswith("job-rank-2.json.gz") and "worst straggler" in f["detail_why"]
    assert 1 <= len(f["worker_peak_rss_kib"]) <= 2  # two pool workers (one may take all)
    assert all(kib > 10_000 for kib in f["worker_peak_rss_kib"].values())
    # the rest of the recap is rank 2's own analysis: one capture, 2,700 kernels (README)
    assert [a["path"] for a in got["artifacts"]] == [a["path"] for a in in_process["artifacts"]]
    assert got["metrics"]["kernel_count"] == 2700
    straggler = [x for x in got["findings"] if x["details"].get("rank") == STRAGGLER]
    assert [x["title"] for x in straggler] == [
        x["title"] for x in in_process["findings"] if x["details"].get("rank") == STRAGGLER]
    md = cli("analyze", job, "--workers", "2", "--detail", "full").stdout  # issue 40
    assert "Fan-out: 3 input files summarized one per task on a local pool of 2 worker" in md
    assert "describe rank 2" in md and "- **rank 2**: 100.0% of the waiting" in md


def test_dask_local_equals_in_process(job: Path, in_process: dict) -> None:
    pytest.importorskip("distributed", reason="Dask is in the test extra: pip install -e .[test]")
    got = doc(job, "--dask", "local")
    same_ranks(got, in_process)
    assert got["fanout"]["engine"].startswith("a Dask LocalCluster")


def test_corrupt_rank_with_workers_is_missing_and_partial(job: Path, tmp_path: Path) -> None:
    for f in job.iterdir():
        data = f.read_bytes()
        (tmp_path / f.name).write_bytes(data[: len(data) // 3] if "rank-1" in f.name else data)
    p = cli("analyze", tmp_path, "--workers", "2", "--format", "json")
    assert p.returncode == 2
    (line,) = p.stderr.strip().splitlines()
    assert line.startswith("crossview: error:") and "job-rank-1.json.gz" in line
    got = json.loads(p.stdout)
    ref = doc(tmp_path, rc=2)
    same_ranks(got, ref)
    ra = got["rank_analysis"]
    assert ra["partial"] is True and ra["ranks_present"] == [0, 2]
    assert [m["rank"] for m in ra["missing"]] == [1]
    assert got["stragglers"][0]["rank"] == STRAGGLER


def test_explain_in_a_worker_equals_in_process(job: Path) -> None:
    """Round 2 (stragglers after the worst) runs straggler_cause in a worker: same cause."""
    ref = analyze(sorted(job.iterdir()))
    assert ref.views is not None and ref.views.ranks is not None
    (s,) = ref.views.ranks.stragglers
    path = next(r.path for r in ref.views.ranks.ranks if r.rank == s.rank)
    share = ref.views.limits.straggler_gpu_busy_share
    task = ExplainTask(RankTask(path, Filter()), tuple(s.windows), share)
    bad = ExplainTask(RankTask(str(job / "nope.json.gz"), Filter()), ((0, 1),), share)
    got, missing = fan_out(explain_file, [task, bad], Engine(2),
                           lambda t, why: ExplainResult(None, why))
    assert got.cause is not None and (got.cause.kind, got.cause.text) == (s.cause_kind, s.cause)
    assert got.cause.kind == "host" and got.pid > 0
    assert missing.cause is None and "no such file" in (missing.problem or "")


def test_not_a_job_falls_back_to_in_process() -> None:
    """Unrelated captures (no ranks) with --workers: the ordinary analysis, unchanged (issue
    40: it analyzes the larger run and sets the other apart, exit 2)."""
    files = [need(A100_DDP), need(H100)]
    ref = doc(*files, rc=2)
    got = doc(*files, "--workers", "2", rc=2)
    assert got == ref and got["fanout"] is None and got["ranks"] == []
    assert doc(files[0], "--workers", "2") == doc(files[0])  # one file: nothing to fan out


def test_fanout_usage_errors(job: Path, tmp_path: Path) -> None:
    p = cli("analyze", job, "--workers", "2", "--artifact", "job-rank-0.json.gz")
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and "--artifact" in p.stderr
    p = cli("analyze", "--lake", tmp_path, "--workers", "2")
    assert p.returncode == 2 and p.stderr.startswith("crossview: error: --workers/--dask")


def test_window_filter_applies_per_rank(job: Path, in_process: dict) -> None:
    """A --window is resolved in each worker's store: the same per-rank numbers as the
    in-process analysis under that window (here: the second half of the job)."""
    a = analyze(sorted(job.iterdir()))
    assert a.views is not None and a.views.ranks is not None
    start = min(r.first_ns for r in a.views.ranks.ranks)
    end = max(r.last_ns for r in a.views.ranks.ranks)
    w = f"{(start + end) // 2}:{end + 1}"
    ref = doc(job, "--window", w)
    got = doc(job, "--window", w, "--workers", "2")
    same_ranks(got, ref)
    assert all(r["span_ns"] < x["span_ns"] for r, x in zip(got["ranks"], in_process["ranks"],
                                                           strict=True))


def test_lake_run_of_rank_traces(job: Path, tmp_path: Path, in_process: dict) -> None:
    lake = tmp_path / "lake"
    p = cli("ingest", job, "--lake", lake, "--run", "r1", "--workers", "2")
    assert p.returncode == 0, p.stderr
    got = doc("--lake", lake, "--run", "r1")
    for k in RANK_KEYS:
        assert got[k] == in_process[k], k
    _check_planted(got)
    # a corrupt rank is rejected at ingest; the lake run then holds 2 of the 3 ranks its
    # traces declare (world_size 3): partial, the straggler still found
    bad = tmp_path / "bad"
    bad.mkdir()
    for f in job.iterdir():
        data = f.read_bytes()
        (bad / f.name).write_bytes(data[:1000] if "rank-0" in f.name else data)
    p = cli("ingest", bad, "--lake", tmp_path / "lake2", "--run", "r2", "--workers", "2")
    assert p.returncode == 2 and "job-rank-0.json.gz" in p.stderr
    part = doc("--lake", tmp_path / "lake2", "--run", "r2")
    ra = part["rank_analysis"]
    assert ra["partial"] is True and ra["ranks_present"] == [1, 2] and ra["expected_ranks"] == 3
    assert part["stragglers"][0]["rank"] == STRAGGLER


def test_archive_with_workers(job: Path, tmp_path: Path, in_process: dict) -> None:
    """A .tar.gz bundle is extracted in the parent; workers read the extracted rank files."""
    import tarfile

    arc = tmp_path / "job.tar.gz"
    with tarfile.open(arc, "w:gz") as t:
        t.add(job, arcname="job")
    got = doc(arc, "--workers", "2")
    strip = [{k: v for k, v in r.items() if k != "path"} for r in got["ranks"]]
    assert strip == [{k: v for k, v in r.items() if k != "path"} for r in in_process["ranks"]]
    assert got["stragglers"] == in_process["stragglers"]
    assert "/job/job-rank-2.json.gz" in got["fanout"]["detail_path"]


def test_dead_worker_is_a_missing_rank() -> None:
    """A worker killed mid-task (lake/fanout.py on_error) → a rejected report → a missing
    rank named from the file name, as for a corrupt file."""
    from crossview.rank_fanout import _died
    from crossview.views.distributed.rank_job import Rejected, missing_ranks

    r = _died(RankTask("/x/job-rank-7.json.gz", Filter()), "its worker process died")
    assert r.summary is None and r.report.status == "error"
    (m,) = missing_ranks([Rejected(r.report.path, r.report.kind, r.report.problems[0])])
    assert (m.rank, m.problem) == (7, "its worker process died")

"""`crossview analyze --workers N | --dask ADDR|local`: a multi-rank job analyzed rank by rank.

Each rank file is read and summarized in a worker (rank_task.py); only the small
`RankSummary`s come back and `crossrank.merge_ranks` aligns them here, so no process ever
holds more than one rank's trace. The straggler causes need the straggler's own timeline:
the worst straggler is the rank this process then analyzes in full (the recap's metrics,
GPU/CPU views and findings describe that rank, plus any non-rank inputs of the bundle);
further stragglers are explained in workers (a second round). Input that turns out not to
be a multi-rank job is analyzed in process as usual.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from crossview.analysis import Analysis, analyze
from crossview.errors import UsageError
from crossview.knowledge.thresholds import Thresholds, defaults
from crossview.lake.fanout import Engine, Mapper, mapper
from crossview.lake.fanout_info import FanoutInfo
from crossview.rank_task import (
    ExplainResult,
    ExplainTask,
    RankResult,
    RankTask,
    SegmentResult,
    SegmentTask,
    explain_file,
    segments_file,
    summarize_file,
)
from crossview.scope.filter import Filter
from crossview.scope.resolve import resolve
from crossview.sources import archive
from crossview.sources.artifact_report import ArtifactReport
from crossview.sources.ncu.ingest import name_devices
from crossview.sources.registry import discover, read_all
from crossview.store.store import Store
from crossview.verdict import decide
from crossview.views import captures
from crossview.views.distributed import late_cause, straggler_cause
from crossview.views.distributed.crossrank import RankAnalysis, Straggler, merge_ranks
from crossview.views.distributed.rank_job import Rejected, missing_ranks
from crossview.views.views import Views


def engine_name(engine: Engine, n: int) -> str:
    if engine.dask == "local":
        return f"a Dask LocalCluster ({engine.size(n)} worker processes)"
    if engine.dask:
        return f"the Dask cluster at {engine.dask}"
    return f"a local pool of {engine.size(n)} worker processes"


def _died(task: RankTask, why: str) -> RankResult:
    return RankResult(ArtifactReport(task.path, "unknown", "error", [why]), None)


def _died2(task: ExplainTask, why: str) -> ExplainResult:
    return ExplainResult(None, why)


def _died3(task: SegmentTask, why: str) -> SegmentResult:
    return SegmentResult(None, why)


def analyze_fanout(paths: list[Path], flt: Filter | None, engine: Engine,
                   limits: Thresholds | None = None, gpu: str | None = None) -> Analysis:
    flt, limits = flt or Filter(), limits or defaults()
    if flt.artifact is not None:
        raise UsageError("--artifact selects one file: analyze it without --workers/--dask")
    dirs, bad = archive.expand(paths)
    arch = [ArtifactReport(e.path, "archive", e.status, [e.problem]) for e in bad]
    files = discover(dirs)
    if len(files) < 2:  # one file is one rank: nothing to fan out
        return _in_process(files, arch, flt, limits, gpu)
    n = len(files)
    tasks = [RankTask(str(f), flt, engine.threads_per_worker(n), engine.memory_per_worker(n))
             for f in files]
    with mapper(engine, n) as run:
        results = run(summarize_file, tasks, _died)
        usage = next((r for r in results if r.usage_error), None)
        if usage is not None:
            raise UsageError(f"{usage.report.path}: {usage.usage_error}")
        reports = arch + [r.report for r in results]
        rejected = [Rejected(r.path, r.kind, "; ".join(r.problems))
                    for r in reports if r.status != "ok"]
        summaries = [replace(r.summary, artifact_id=i) for i, r in enumerate(results)
                     if r.summary is not None]
        job = merge_ranks(summaries, missing_ranks(rejected), limits.straggler_min_skew_ns,
                          limits.straggler_min_late_share)
        if job is None:
            return _in_process(files, arch, flt, limits, gpu)
        rss = {str(r.pid): r.peak_rss_kib for r in results if r.pid}
        # the worst straggler is analyzed here in full; the others' causes in workers
        more = job.stragglers[1:]
        for s, e in zip(more, run(explain_file, [ExplainTask(
                tasks[_index(job, s.rank)], tuple(s.windows),
                limits.straggler_gpu_busy_share) for s in more], _died2), strict=True):
            _set_cause(s, e.cause, e.problem)
            if e.pid:
                rss[str(e.pid)] = max(rss.get(str(e.pid), 0), e.peak_rss_kib)
        _late_causes(job, tasks, run, rss)
    detail = job.stragglers[0].rank if job.stragglers else job.ranks[0].rank
    why = "the worst straggler" if job.stragglers else "no straggler: the lowest rank"
    detail_path = next(r.path for r in job.ranks if r.rank == detail)
    others = [r.report.path for r in results if r.summary is None and r.report.status == "ok"]
    info = FanoutInfo(engine_name(engine, n), n, detail, detail_path, why, rss)
    return _detail(detail_path, others, reports, job, info, flt, limits, gpu)


def _late_causes(job: RankAnalysis, tasks: list[RankTask], run: Mapper,
                 rss: dict[str, int]) -> None:
    """Why each named late rank was late: every rank's account over its segments, read in
    workers (views/distributed/late_cause.py), combined here; the job's critical path needs
    every rank's graph in one process and is left to an in-process run."""
    job.critical_path_note = ("not replayed under --workers/--dask: the joined graph of all "
                              "ranks needs them in one process (analyze without --workers, "
                              "or `crossview whatif` on the folder)")
    if job.late is None or not job.late.named:
        return
    named = {r.rank for r in job.late.named}
    todo = [SegmentTask(tasks[_index(job, r.rank)], r.rank,
                        tuple(job.late.segments.get(r.rank, [])), job.comm[r.rank],
                        r.rank in named) for r in job.ranks if r.rank in job.comm]
    got = {}
    for t, res in zip(todo, run(segments_file, todo, _died3), strict=True):
        if res.segments is not None:
            got[t.rank] = res.segments
        if res.pid:
            rss[str(res.pid)] = max(rss.get(str(res.pid), 0), res.peak_rss_kib)
    for lr in job.late.ranks:
        lr.cause = late_cause.combine(job.late, job.collectives, got).get(lr.rank, lr.cause)


def _index(job: RankAnalysis, rank: int) -> int:
    return next(r.artifact_id for r in job.ranks if r.rank == rank)


def _set_cause(s: Straggler, cause: straggler_cause.Cause | None, problem: str | None) -> None:
    if cause is not None:
        s.cause_kind, s.cause = cause.kind, cause.text
    else:
        s.cause_kind, s.cause = "uncaptured", f"not explained: {problem}"


def _in_process(files: list[Path], arch: list[ArtifactReport], flt: Filter,
                limits: Thresholds, gpu: str | None) -> Analysis:
    a = analyze(files, flt, limits, gpu=gpu)
    a.artifacts = arch + a.artifacts
    return a


def _detail(path: str, others: list[str], reports: list[ArtifactReport], job: RankAnalysis,
            info: FanoutInfo, flt: Filter, limits: Thresholds, gpu: str | None) -> Analysis:
    """The full single-process analysis of one rank (+ non-rank inputs), with the job's
    cross-rank analysis in place of the one this store alone would give."""
    store = Store()
    read_all([Path(path)] + [Path(p) for p in others], store)
    if gpu:
        name_devices(store, gpu)
    views = Views(store, resolve(store, flt), limits)
    views.rejected = [Rejected(r.path, r.kind, "; ".join(r.problems))
                      for r in reports if r.status != "ok"]
    if job.stragglers:
        s = job.stragglers[0]
        c = straggler_cause.explain(store, captures.artifact_id(store, path), s.windows,
                                    limits.straggler_gpu_busy_share)
        _set_cause(s, c, None)
    views.__dict__["ranks"] = job  # Views.ranks is a cached_property: the job's, not this store's
    return Analysis(reports, views, lambda: decide(views, replay=False), fanout=info)

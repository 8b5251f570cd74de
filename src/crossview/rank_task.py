"""The per-rank tasks `analyze --workers/--dask` fans out (rank_fanout.py).

Round 1, `summarize_file`: read one rank file into the worker's own Store, resolve the
filter there, return its `ArtifactReport` and `RankSummary` (small: busy/comm numbers and
the ordered collective calls), never the store. Round 2, `explain_file`: re-read one
straggler rank and say what it did in the wait windows (`straggler_cause.explain`). Both
are top-level functions over picklable dataclasses, so a process pool and Dask run them
alike (lake/fanout.py); bad input comes back in the result, it never raises.
"""

from __future__ import annotations

import os
import resource
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from crossview.errors import UsageError
from crossview.scope.filter import Filter
from crossview.scope.resolve import resolve
from crossview.sources.artifact_report import ArtifactReport
from crossview.sources.registry import read_all
from crossview.store.store import Store
from crossview.views import captures
from crossview.views.distributed import late_cause, rank_comm, ranks, straggler_cause
from crossview.views.distributed.late_ranks import Segment

# readers whose files carry one rank's timeline (as views/distributed/rank_job.py)
TRACE_KINDS = ("kineto", "nsys")


@dataclass(frozen=True)
class RankTask:
    path: str
    flt: Filter
    threads: int = 1  # DuckDB threads in this worker
    memory_limit: str | None = None  # DuckDB memory_limit in this worker; spills past it


@dataclass
class RankResult:
    report: ArtifactReport
    summary: ranks.RankSummary | None  # None: not a rank trace, rejected, or no kernels
    usage_error: str | None = None  # the filter does not apply to this rank (UsageError)
    peak_rss_kib: int = 0  # the worker process's peak so far (ru_maxrss)
    pid: int = 0


@dataclass(frozen=True)
class ExplainTask:
    rank_task: RankTask
    windows: tuple[tuple[int, int], ...]  # on the rank's own clock (crossrank.Straggler)
    busy_share: float


@dataclass
class ExplainResult:
    cause: straggler_cause.Cause | None
    problem: str | None = None
    peak_rss_kib: int = 0
    pid: int = 0


@dataclass(frozen=True)
class SegmentTask:
    """Round 2 for late ranks: one rank's time account over its segments (every rank, so a
    late rank's can be set against the others')."""

    rank_task: RankTask
    rank: int
    segments: tuple[Segment, ...]
    comm: rank_comm.RankComm  # its collectives' waits (the account's peer-wait row)
    with_stalls: bool  # a named late rank: its stalled host ops too


@dataclass
class SegmentResult:
    segments: late_cause.RankSegments | None
    problem: str | None = None
    peak_rss_kib: int = 0
    pid: int = 0


def _open(task: RankTask) -> tuple[Store, ArtifactReport, int | None]:
    """The worker's store with this one file read and the filter resolved (f_gpu/f_host);
    the artifact id when the file is an ok trace. Past the memory limit the store spills to
    its temp folder instead of failing (bounded memory)."""
    store = Store(threads=task.threads, memory_limit=task.memory_limit)
    reps = read_all([Path(task.path)], store)
    rep = reps[0] if reps else ArtifactReport(task.path, "unknown", "invalid", ["no input"])
    if rep.status != "ok" or rep.kind not in TRACE_KINDS:
        return store, rep, None
    resolve(store, task.flt)
    return store, rep, captures.first_ok(store)


def summarize_file(task: RankTask) -> RankResult:
    res = RankResult(ArtifactReport(task.path, "unknown", "error", []), None, pid=os.getpid())
    store: Store | None = None
    try:
        store, res.report, aid = _open(task)
        if aid is not None:
            res.summary = ranks.summarize(store, int(aid))
    except UsageError as e:
        res.usage_error = str(e)
    except Exception as e:  # noqa: BLE001 — one rank's reader bug must not sink the job
        res.report = ArtifactReport(task.path, res.report.kind, "error",
                                    [f"internal error: {type(e).__name__}: {e}"])
    finally:
        if store is not None:
            store.close()
        res.peak_rss_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return res


def _second_read(task: RankTask, res: ExplainResult | SegmentResult,
                 body: Callable[[Store, int], None]) -> None:
    """Round 2: re-read one rank file and run `body(store, artifact id)` on it; a file that
    no longer reads, or an error inside, becomes `res.problem` (the job still renders)."""
    store: Store | None = None
    try:
        store, rep, aid = _open(task)
        if aid is None:
            res.problem = "; ".join(rep.problems) or "not readable on the second read"
        else:
            body(store, int(aid))
    except Exception as e:  # noqa: BLE001 — reported as the cause, the job still renders
        res.problem = f"internal error: {type(e).__name__}: {e}"
    finally:
        if store is not None:
            store.close()
        res.peak_rss_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def explain_file(task: ExplainTask) -> ExplainResult:
    res = ExplainResult(None, pid=os.getpid())

    def body(store: Store, aid: int) -> None:
        res.cause = straggler_cause.explain(store, aid, list(task.windows), task.busy_share)

    _second_read(task.rank_task, res, body)
    return res


def segments_file(task: SegmentTask) -> SegmentResult:
    res = SegmentResult(None, pid=os.getpid())

    def body(store: Store, aid: int) -> None:
        res.segments = late_cause.rank_segments(
            store, aid, task.rank, task.comm.path, list(task.segments),
            rank_comm.rank_peer_waits(task.comm, aid), task.with_stalls, scoped=True)

    _second_read(task.rank_task, res, body)
    return res

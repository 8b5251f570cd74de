"""The importable API: read inputs, resolve the filter, build views, run detectors.

CLI and (later) MCP are thin shells over `analyze`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import InitVar, dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from crossview.cache.read import read_inputs
from crossview.core.finding import Finding
from crossview.errors import InputError
from crossview.knowledge.thresholds import Thresholds, defaults
from crossview.preload import Preload
from crossview.scope.filter import Filter
from crossview.scope.resolve import resolve
from crossview.scope.runs import OTHER_RUN, paths_of_runs, set_apart
from crossview.sources.artifact_report import NOT_REJECTED, USABLE, ArtifactReport
from crossview.sources.registry import read_all
from crossview.store.store import Store
from crossview.views.distributed.rank_job import Rejected

if TYPE_CHECKING:
    from crossview.cache.settings import CacheSettings
    from crossview.core.bench_arm import BenchArm
    from crossview.lake.fanout_info import FanoutInfo
    from crossview.views.distributed.crossrank import RankAnalysis
    from crossview.views.views import Views


# what `analyze_store` and the findings import after the read (preload.py, decision 0907)
ANALYSIS_MODULES = ("crossview.views.views", "crossview.detectors", "crossview.verdict",
                    "crossview.verdict.replayed", "crossview.replay.whatif",
                    "crossview.replay.rank_whatif", "crossview.replay.rank_findings")


@dataclass
class Analysis:
    artifacts: list[ArtifactReport]
    views: Views | None  # None when no input could be read
    # the findings, or how to find them: detectors and replays run when a caller first reads
    # `findings` (an MCP tool that shows a call tree never pays for them; decision 0844)
    found: InitVar[list[Finding] | Callable[[], list[Finding]]]
    # `analyze --workers/--dask` on a multi-rank job (rank_fanout.py): how it ran and
    # which rank the single-rank parts of the recap describe
    fanout: FanoutInfo | None = None

    def __post_init__(self, found: list[Finding] | Callable[[], list[Finding]]) -> None:
        self._found = found

    @property
    def findings(self) -> list[Finding]:
        if callable(self._found):
            self._found = self._found()
        return self._found

    @property
    def rejected(self) -> list[ArtifactReport]:
        return [a for a in self.artifacts if a.status not in NOT_REJECTED]

    @property
    def warned(self) -> list[ArtifactReport]:
        """Read in part (partial), skipped by a folder walk, or read with a problem the
        reader doubts: a warning line each, on stderr and in the recap (never only in JSON)."""
        return [a for a in self.artifacts if a.status in ("partial", "skipped")
                or (a.status == "ok" and a.problems)]


def analyze(
    paths: Iterable[Path | str],
    flt: Filter | None = None,
    limits: Thresholds | None = None,
    store: Store | None = None,
    gpu: str | None = None,
    cache: CacheSettings | None = None,
    ahead: tuple[str, ...] = (),
) -> Analysis:
    """`gpu` names the GPU of ncu captures that do not (details CSV): its ceilings apply.
    `cache`: the persistent capture cache (crossview.cache; the CLI's and MCP's), else none.
    `ahead`: more modules to import while the read runs (the caller's renderer)."""
    store = store or Store()
    loading = Preload(ANALYSIS_MODULES + ahead)  # while the read holds DuckDB (0907)
    try:
        if cache is None:
            reports = read_all([Path(p) for p in paths], store)
            store.compact()  # a compressed store compresses what the readers wrote
        else:
            reports = read_inputs([Path(p) for p in paths], store, cache, compact=True).reports
    finally:
        loading.join()
    return analyze_store(store, reports, flt, limits, gpu)


def analyze_each(
    paths: Iterable[Path | str],
    flt: Filter | None = None,
    limits: Thresholds | None = None,
    gpu: str | None = None,
) -> Iterator[Analysis]:
    """One Analysis per run (`analyze --each`): inputs whose traces are not one job
    (scope/runs.py) are analyzed apart, each in its own store; inputs without a timeline
    (counters, ncu, summaries) follow as one more analysis of their own. One run: the same
    Analysis as `analyze`. Each is built when the one before it was consumed."""
    store = Store()
    reports = read_all([Path(p) for p in paths], store)
    runs = paths_of_runs(store)
    if len(runs) < 2:
        store.compact()
        yield analyze_store(store, reports, flt, limits, gpu)
        return
    del store  # each run is read again into a store of its own
    timeline = {p for r in runs for p in r}
    rest = [r.path for r in reports if r.status in USABLE and r.path not in timeline]
    bad = [r for r in reports if r.status not in USABLE]
    for i, run in enumerate([*runs, *([rest] if rest else [])]):
        a = analyze(run, flt, limits, gpu=gpu)
        if i == 0:  # rejected inputs are said once, with the first recap
            a.artifacts = bad + a.artifacts
        yield a


def analyze_lake(
    lake: Path | str,
    campaign: str | None = None,
    run: str | None = None,
    flt: Filter | None = None,
    limits: Thresholds | None = None,
    gpu: str | None = None,
) -> Analysis:
    """Analyze a perf-lake selection (crossview.lake): DuckDB views over its Parquet files."""
    # lazy: `--lake` only, kept out of analyze start-up (decision 0760)
    from crossview.lake.query import open_lake
    from crossview.lake.query import reports as lake_reports

    store = open_lake(lake, campaign, run)
    return analyze_store(store, lake_reports(store), flt, limits, gpu)


def analyze_store(
    store: Store,
    reports: list[ArtifactReport],
    flt: Filter | None = None,
    limits: Thresholds | None = None,
    gpu: str | None = None,
) -> Analysis:
    """Resolve the filter, build the views and run the detectors over a filled store."""
    if not any(r.status in USABLE for r in reports):
        return Analysis(reports, None, [])
    if gpu:
        # lazy: `--gpu` only, kept out of analyze start-up (measured, decision 0760)
        from crossview.sources.ncu.ingest import name_devices

        name_devices(store, gpu)
    # one recap, one run (scope/runs.py): other runs are set apart as rejected inputs;
    # --artifact selects one input: nothing to merge
    if sum(r.status in USABLE for r in reports) > 1 and (flt is None or flt.artifact is None):
        set_apart(store, reports)
        if not any(r.status in USABLE for r in reports):
            return Analysis(reports, None, [])
    resolved = resolve(store, flt or Filter())
    # lazy: imported by the preload while the read runs (decision 0907)
    from crossview.views.views import Views

    views = Views(store, resolved, limits or defaults())
    # a capture of another run (scope/runs.py) is no missing rank of this one
    views.rejected = [Rejected(r.path, r.kind, "; ".join(r.problems))
                      for r in reports if r.status not in (*NOT_REJECTED, OTHER_RUN)]
    views.rank_replayer = _replay_job
    # claims → findings, each built once (issue 37): the verdict runs when a caller first
    # reads them (lazy findings, issue 38)
    return Analysis(reports, views, lambda: _findings(views))


def _replay_job(views: Views, job: RankAnalysis) -> object:
    # lazy: `import crossview.analysis` (the MCP server, `crossview sol`) loads no detector,
    # verdict or replay until an analysis runs (MCP start-up +0.25 s measured, 0902)
    from crossview.replay.rank_findings import replay_job

    return replay_job(views, job)


def _findings(views: Views) -> list[Finding]:
    # lazy: `import crossview.analysis` (the MCP server, `crossview sol`) loads no detector,
    # verdict or replay until an analysis runs (MCP start-up +0.25 s measured, 0902)
    from crossview.verdict import decide

    return decide(views)


def bench_arms(path: Path) -> list[BenchArm]:
    """The benchmark arms (vllm bench / generic trials) of one result file; one-line
    InputError when the file is rejected or holds none (`crossview sol --bench`)."""
    a = analyze([path])
    if a.rejected:
        r = a.rejected[0]
        raise InputError(r.path, "; ".join(r.problems))
    arms = a.views.gpu_metrics.bench if a.views else []
    if not arms:
        raise InputError(path, "no benchmark result (vllm bench / generic trials) in this file")
    return arms

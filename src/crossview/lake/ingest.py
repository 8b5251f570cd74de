"""`crossview ingest`: hash, deduplicate, fan out one read per artifact, commit the results.

Two fan-out rounds over the same engine: hashes (cheap, I/O bound), then reads of the files
not yet in the lake. Lake artifact ids are allocated here, between the rounds, under the
lake's lock, so workers never coordinate. The manifest is appended only after a worker's
files are in place: it is the commit.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from crossview.errors import UsageError
from crossview.lake import manifest
from crossview.lake.fanout import Engine, mapper
from crossview.lake.task import (
    HashResult,
    HashTask,
    IngestResult,
    IngestTask,
    hash_file,
    ingest_file,
)
from crossview.sources.registry import discover


@dataclass
class Skipped:
    path: str
    sha256: str
    reason: str  # e.g. "already in the lake as artifact 3 (campaign=a run=b)"


@dataclass
class IngestSummary:
    lake: str
    added: list[manifest.Entry] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    rejected: list[IngestResult] = field(default_factory=list)
    results: list[IngestResult] = field(default_factory=list)  # every read, with worker RSS


def ingest(paths: list[Path], lake: Path, campaign: str | None = None,
           run: str | None = None, engine: Engine | None = None,
           memory_limit: str | None = None) -> IngestSummary:
    """memory_limit: DuckDB's per worker (e.g. "1GB"); default Engine.memory_per_worker."""
    engine = engine or Engine()
    campaign = manifest.check_part("campaign", campaign or manifest.DEFAULT)
    run = manifest.check_part("run", run or manifest.DEFAULT)
    files = discover(paths)
    if not files:
        raise UsageError("no input files found in " + ", ".join(map(str, paths)))
    out = IngestSummary(str(lake))
    with manifest.locked(lake), mapper(engine, len(files)) as run_tasks:
        manifest.repair(lake)  # what a killed ingest left: torn line, .part, orphans
        known = {e.sha256: e for e in manifest.read(lake)}
        hashes: list[HashResult] = run_tasks(hash_file, [HashTask(str(f)) for f in files],
                                             lambda t, why: HashResult(t.path, None, 0, why))
        todo: list[HashResult] = []
        seen: dict[str, str] = {}
        for h in hashes:
            if h.sha256 is None:
                out.rejected.append(IngestResult(h.path, "", 0, "unknown", "invalid",
                                                 [h.problem or "cannot read"]))
            elif h.sha256 in known:
                e = known[h.sha256]
                out.skipped.append(Skipped(h.path, h.sha256, f"already in the lake as artifact "
                                           f"{e.artifact_id} (campaign={e.campaign} run={e.run})"))
            elif h.sha256 in seen:
                out.skipped.append(Skipped(h.path, h.sha256, f"same content as {seen[h.sha256]}"))
            else:
                seen[h.sha256] = h.path
                todo.append(h)
        next_id = max((e.artifact_id for e in known.values()), default=0) + 1
        if next_id + len(todo) > manifest.MAX_ARTIFACTS:
            raise UsageError(f"{lake}: a lake holds at most {manifest.MAX_ARTIFACTS} artifacts")
        threads = engine.threads_per_worker(len(todo))
        mem = memory_limit or engine.memory_per_worker(len(todo))
        tasks = [IngestTask(h.path, h.sha256 or "", next_id + i, str(lake), campaign, run,
                            threads, mem) for i, h in enumerate(todo)]
        out.results = run_tasks(ingest_file, tasks, lambda t, why: IngestResult(
            t.path, t.sha256, t.artifact_id, "unknown", "error", [why]))
        sizes = {h.path: h.bytes for h in todo}
        now = datetime.now(UTC).isoformat(timespec="seconds")
        for r in out.results:
            if r.status != "ok":
                out.rejected.append(r)
                continue
            out.added.append(manifest.Entry(
                r.artifact_id, r.path, r.sha256, r.kind, sizes[r.path], campaign, run, now,
                r.rows, r.files))
        manifest.append(lake, out.added)
    return out

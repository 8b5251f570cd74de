"""`crossview ingest`: captures into the Parquet perf-lake (crossview.lake)."""

from __future__ import annotations

import json
import time
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from crossview.cli.app import (
    Fmt,
    app,
    capture_cache,
    check_memory,
    error_line,
    per_file_lines,
    warning_line,
    write_stdout,
)
from crossview.core.inert import name as show
from crossview.errors import CrossviewError, UsageError

if TYPE_CHECKING:
    from crossview.analysis import Analysis
    from crossview.scope.filter import Filter

LakeOpt = Annotated[Path | None, typer.Option(
    "--lake", help="Read this perf-lake (see `crossview ingest`) instead of trace files.")]
CampaignOpt = Annotated[str | None, typer.Option(help="Lake selection: only this campaign.")]
RunOpt = Annotated[str | None, typer.Option("--run", help="Lake selection: only this run.")]


def sources(paths: list[Path] | None, lake: Path | None) -> list[Path]:
    """Trace paths or a lake, not both: the paths error lines name."""
    if lake is not None and paths:
        error_line("give trace files or --lake DIR, not both")
        raise typer.Exit(2)
    if lake is None and not paths:
        error_line("no input: give trace files (or folders), or --lake DIR")
        raise typer.Exit(2)
    return [lake] if lake is not None else list(paths or [])


def analysis_of(paths: list[Path], flt: Filter | None = None, gpu: str | None = None,
                lake: Path | None = None, campaign: str | None = None,
                run: str | None = None, ahead: tuple[str, ...] = ()) -> Analysis:
    """In-process analysis of files, or of a lake selection through DuckDB views. `ahead`:
    the renderer's module, imported while the files are read (analysis.analyze)."""
    # lazy: `crossview --help` and every command's start-up import only what they run (0902)
    from crossview.analysis import analyze, analyze_lake

    if lake is not None:
        return analyze_lake(lake, campaign, run, flt, gpu=gpu)
    if campaign or run:
        raise UsageError("--campaign/--run select inside a lake: give --lake DIR")
    return analyze(paths, flt, gpu=gpu, cache=capture_cache(), ahead=ahead)


def lake_side(lake: Path, selector: str) -> Analysis:
    """One side of `diff --lake`: RUN, or CAMPAIGN/RUN."""
    # lazy: `crossview --help` and every command's start-up import only what they run (0902)
    from crossview.analysis import analyze_lake

    campaign, _, run = selector.rpartition("/")
    return analyze_lake(lake, campaign or None, run)


@app.command()
def ingest(
    paths: Annotated[list[Path], typer.Argument(help="Captures, or folders of them.")],
    lake: Annotated[Path, typer.Option(help="The lake directory (created if missing).")],
    campaign: Annotated[str | None, typer.Option(help="Campaign id (default: default).")]
    = None,
    run: Annotated[str | None, typer.Option(help="Run id (default: default).")] = None,
    workers: Annotated[int | None, typer.Option(
        help="Worker processes (default: one per core; 0 = in this process).")] = None,
    dask: Annotated[str | None, typer.Option(
        help="Run on Dask: a scheduler address (tcp://host:8786) or 'local'.")] = None,
    memory_limit: Annotated[str | None, typer.Option(
        help="DuckDB memory limit per worker, e.g. 1GB (default: 60% of the usable memory "
        "/ workers); past it DuckDB spills to $TMPDIR.")] = None,
    fmt: Annotated[Fmt, typer.Option("--format", "-f", help="Output format.")] = Fmt.md,
) -> None:
    """Write captures' normalized tables as Parquet (campaign=/run=/source=), idempotently."""
    # lazy: `crossview --help` and every command's start-up import only what they run (0902)
    from crossview.lake.fanout import default_engine
    from crossview.lake.ingest import ingest as run_ingest

    if fmt.value not in ("md", "json"):
        error_line(f"--format {fmt.value}: ingest reports as md or json")
        raise typer.Exit(2)
    t0 = time.perf_counter()
    try:
        s = run_ingest(paths, lake, campaign, run, default_engine(workers, dask),
                       check_memory(memory_limit))
    except CrossviewError as e:
        error_line(str(e))
        raise typer.Exit(2) from None
    wall = time.perf_counter() - t0
    per_file_lines(error_line, [(r.path, "; ".join(r.problems)) for r in s.rejected])
    # ingested whole, but the reader doubts something (clocks, names…): said, not silent
    per_file_lines(warning_line, [(r.path, "; ".join(r.problems)) for r in s.results
                                  if r.status == "ok" and r.problems])
    workers_rss = {str(r.pid): r.peak_rss_kib for r in s.results}
    if fmt is Fmt.json:
        write_stdout(json.dumps({
            "lake": s.lake, "wall_s": round(wall, 3),
            "added": [asdict(e) for e in s.added],
            "skipped": [asdict(k) for k in s.skipped],
            "rejected": [{"path": r.path, "kind": r.kind, "status": r.status,
                          "problems": r.problems} for r in s.rejected],
            "worker_peak_rss_kib": workers_rss,
        }, indent=2) + "\n")
    else:
        lines = []
        for a in s.added:
            rows = ", ".join(f"{t} {n:,}" for t, n in a.rows.items())
            lines.append(f"added {show(a.path)} ({a.kind}, artifact {a.artifact_id}, "
                         f"campaign={a.campaign} run={a.run}): rows {rows}")
        for k in s.skipped:
            lines.append(f"skipped {show(k.path)}: {k.reason} (sha256 {k.sha256[:12]}…)")
        peak = max(workers_rss.values(), default=0) / 1024
        lines.append(f"{len(s.added)} added, {len(s.skipped)} skipped (already there), "
                     f"{len(s.rejected)} rejected into {show(s.lake)} in {wall:.2f} s wall "
                     f"({len(workers_rss)} worker process(es), peak RSS {peak:.0f} MiB per "
                     "worker)")
        write_stdout("\n".join(lines) + "\n")
    if s.rejected:
        raise typer.Exit(2)

"""`crossview analyze` and `crossview kernels`."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from crossview.cli.app import (
    OPTIONS,
    AnalyzeFmt,
    Detail,
    Fmt,
    app,
    emit,
    error_line,
    run_analysis,
    write_output,
)
from crossview.cli.filter_options import NO_FILTER, GpuOpt, with_filter
from crossview.cli.lake import CampaignOpt, LakeOpt, RunOpt, analysis_of, sources
from crossview.cli.lake import analysis_of as run
from crossview.cli.report import html_report

if TYPE_CHECKING:
    from crossview.analysis import Analysis
    from crossview.scope.filter import Filter


LOCAL_DASK = "local"  # --dask local: a cluster of this machine's processes, this code

# each format's renderer: imported while the files are read (analysis.analyze, 0907)
_RENDERERS = {AnalyzeFmt.md: "crossview.render.markdown", AnalyzeFmt.json: "crossview.render.json",
              AnalyzeFmt.html: "crossview.render.html"}


@app.command()
@with_filter
def analyze(
    paths: Annotated[list[Path] | None, typer.Argument(
        help="Trace files or folders of them (or --lake).")] = None,
    fmt: Annotated[AnalyzeFmt, typer.Option("--format", "-f", help="Output format.")] = (
        AnalyzeFmt.md),
    output: Annotated[Path | None, typer.Option("--output", "-o", help="Write here.")] = None,
    detail: Annotated[Detail, typer.Option(
        help="summary: the verdict, the call tree and the CPU cross-check (one screen); "
        "full: then the metrics, steps, time account, kernel and roofline tables.")] = (
        Detail.summary),
    flt: Filter = NO_FILTER,  # the filter options (with_filter)
    gpu: GpuOpt = None,
    lake: LakeOpt = None,
    campaign: CampaignOpt = None,
    run_id: RunOpt = None,
    workers: Annotated[int | None, typer.Option(
        help="Multi-rank jobs: summarize each rank file in one of N worker processes (0 = "
        "in this process, the default).")] = None,
    dask: Annotated[str | None, typer.Option(
        help="Multi-rank jobs: summarize rank files on Dask: a scheduler address "
        "(tcp://host:8786) or 'local'.")] = None,
    each: Annotated[bool, typer.Option(
        "--each", help="Inputs that are not one run (other GPUs, drivers, clocks): one "
        "recap per run, instead of the main run's with the others set apart.")] = False,
) -> None:
    """Print the recap: findings with fixes, GPU call tree, CPU cross-check (--detail full:
    the metrics and tables behind them)."""
    run = analysis_of
    paths = sources(paths, lake)
    if (workers or dask) and lake is not None:
        error_line("--workers/--dask fan out trace files; a lake is already read through "
                   "DuckDB views in this process: drop them with --lake")
        raise typer.Exit(2)
    if each:
        if workers or dask or lake is not None or fmt is AnalyzeFmt.html:
            error_line("--each writes one Markdown or JSON recap per run of trace files: "
                       "not with --workers/--dask, --lake or --format html (give `crossview "
                       "report` one run at a time)")
            raise typer.Exit(2)
        OPTIONS.exit_at_once = True
        _each(paths, flt, gpu, fmt, detail, output)
        return
    if workers or dask:  # one task per rank file (rank_fanout.py)
        run = fanned_out(workers, dask)
    else:  # all in this process: nothing to tear down once the output is written
        OPTIONS.exit_at_once = True
    # lazy: `--help` does not load the cache's hashing (hashlib, secrets)
    from crossview.cli import answers

    # a second look at the same files: the kept answer (cli/answers.py); not for a lake (it is
    # not hashed) nor a Dask cluster's workers (their crossview need not be this code)
    answers.first_look(paths, output, kept=lake is None and dask in (None, LOCAL_DASK))
    if not (workers or dask or lake is not None):
        # the store's DuckDB opens on the other core while the readers import (0912); not
        # before a fan-out, whose workers must not start beside a live database
        from crossview.store import connect_ahead  # lazy: a kept answer needs no DuckDB

        connect_ahead.start()
    result = run_analysis(lambda: run(
        paths, flt, gpu=gpu, lake=lake, campaign=campaign, run=run_id,
        ahead=(_RENDERERS[fmt],)), paths)
    if fmt is AnalyzeFmt.html:  # the same page as `crossview report`
        text, bad = html_report(result, paths)
        emit(text, output, result, 2 if bad else 0)
        return
    if fmt is AnalyzeFmt.json:  # the renderer of the format asked for only (imports)
        # lazy: `crossview --help` and every command's start-up import only what they run (0902)
        from crossview.render import json as json_out

        # UTF-8 bytes, written as they are (emit): no decode and re-encode of a large recap
        emit(json_out.render_bytes(result), output, result)
        return
    # lazy: `crossview --help` and every command's start-up import only what they run (0902)
    from crossview.render import markdown

    emit(markdown.render(result, detail.value), output, result)


def _each(paths: list[Path], flt: Filter, gpu: str | None, fmt: AnalyzeFmt, detail: Detail,
          output: Path | None) -> None:
    """`analyze --each`: one recap per run (analysis.analyze_each), Markdown recaps one after
    the other, JSON as a list of the usual documents."""
    # lazy: `crossview --help` and every command's start-up import only what they run (0902)
    from crossview.analysis import analyze_each
    from crossview.render import json as json_out
    from crossview.render import markdown

    texts: list[str] = []
    rejected = False
    runs = iter(analyze_each(paths, flt, gpu=gpu))
    while True:
        try:
            result = run_analysis(lambda: next(runs), paths)
        except StopIteration:
            break
        rejected = rejected or bool(result.rejected)
        texts.append(json_out.render(result).rstrip() if fmt is AnalyzeFmt.json
                     else markdown.render(result, detail.value))
    text = ("[\n" + ",\n".join(texts) + "\n]\n" if fmt is AnalyzeFmt.json
            else "\n---\n\n".join(texts))
    if output:
        write_output(output, text, paths)
    else:
        sys.stdout.write(text)
    if rejected:
        raise typer.Exit(2)


def fanned_out(workers: int | None, dask: str | None) -> Callable[..., Analysis]:
    """`analysis_of`'s signature, fanned out per rank file over a pool or Dask."""
    # lazy: `crossview --help` and every command's start-up import only what they run (0902)
    from crossview.lake.fanout import default_engine
    from crossview.rank_fanout import analyze_fanout

    def run(paths: list[Path], flt: Filter, gpu: str | None = None, **_: object) -> Analysis:
        return analyze_fanout(paths, flt, default_engine(workers, dask), gpu=gpu)
    return run


@app.command()
def kernels(
    paths: Annotated[list[Path] | None, typer.Argument(
        help="ncu exports (.ncu-rep, --csv) or folders (or --lake).")] = None,
    fmt: Annotated[Fmt, typer.Option("--format", "-f", help="Output format.")] = Fmt.md,
    output: Annotated[Path | None, typer.Option("--output", "-o", help="Write here.")] = None,
    gpu: Annotated[str | None, typer.Option(
        help="GPU of captures that do not name it (e.g. 'RTX 5090'): its ceilings apply."
    )] = None,
    lake: LakeOpt = None,
    campaign: CampaignOpt = None,
    run_id: RunOpt = None,
) -> None:
    """Per-kernel roofline from Nsight Compute: FLOP/s, bytes, % of ceilings, bound."""
    # lazy: `crossview --help` and every command's start-up import only what they run (0902)
    from crossview.cli import answers

    paths = sources(paths, lake)
    answers.first_look(paths, output, kept=lake is None)  # a second look: the kept table
    # lazy: loaded once the answer is not kept
    from crossview.render import kernels as table

    result = run_analysis(lambda: run(paths, gpu=gpu, lake=lake, campaign=campaign,
                                      run=run_id), paths)
    assert result.views is not None
    if not result.views.kernels:
        error_line(", ".join(map(str, paths)) + ": no per-kernel counters (ncu) in this input: "
               "profile with `ncu -o report …` (or export `ncu --csv`) and pass that file")
        raise typer.Exit(2)
    text = table.render_json(result) if fmt is Fmt.json else table.render(result)
    emit(text, output, result)

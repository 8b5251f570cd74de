"""`crossview report`: the self-contained HTML report (also `analyze --format html`)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from crossview.cli.app import app, emit, error_line, run_analysis
from crossview.cli.filter_options import NO_FILTER, GpuOpt, with_filter
from crossview.cli.lake import CampaignOpt, LakeOpt, RunOpt, sources
from crossview.cli.lake import analysis_of as run
from crossview.cli.multi_value import multi_value
from crossview.errors import InputError

if TYPE_CHECKING:
    from crossview.analysis import Analysis
    from crossview.scope.filter import Filter


def html_report(result: Analysis, paths: list[Path], ab: list[Path] | None = None) -> tuple[
        str, bool]:
    """The report's HTML and whether an optional input (synthesis, A/B) was rejected; each
    rejected one gets its error line and the report is written without that panel."""
    # lazy: `crossview --help` and every command's start-up import only what they run (0902)
    from crossview.render.html import Extras, inputs, render

    ex = Extras()
    bad = False
    for p in inputs.synthesis_files(paths):
        try:
            ex.synthesis.append(inputs.read_synthesis(p))
        except InputError as e:
            error_line(str(e))
            bad = True
    for p in ab or []:
        try:
            ex.ab.append((p, inputs.read_ab(p)))
        except InputError as e:
            error_line(str(e))
            bad = True
    return render(result, ex), bad


@app.command(cls=multi_value("--ab"))
@with_filter
def report(
    paths: Annotated[list[Path] | None, typer.Argument(
        help="Trace files or folders of them (or --lake).")] = None,
    output: Annotated[Path, typer.Option("--output", "-o", help="Write the HTML here.")] = Path(
        "report.html"),
    ab: Annotated[list[Path] | None, typer.Option(
        "--ab", help="A/B results (`crossview ab --format json`) to include: `--ab a.json "
        "b.json` (after the inputs) or repeated.")] = None,
    flt: Filter = NO_FILTER,  # the filter options (with_filter)
    lake: LakeOpt = None,
    campaign: CampaignOpt = None,
    run_id: RunOpt = None,
    gpu: GpuOpt = None,
) -> None:
    """Write one self-contained HTML page: recap, flamegraphs, timeline, roofline, ledger."""
    # lazy: `crossview --help` and every command's start-up import only what they run (0902)
    from crossview.cli import answers

    paths = sources(paths, lake)
    # a second look: the page kept the first time (the A/B files are part of its key)
    answers.first_look([*paths, *(ab or [])], output, kept=lake is None)
    result = run_analysis(lambda: run(
        paths, flt, gpu=gpu, lake=lake, campaign=campaign, run=run_id), paths)
    text, bad = html_report(result, paths, ab)
    emit(text, output, result, 2 if bad else 0)  # exit 2 after the page: an input was bad

"""`crossview report`: the self-contained HTML report (also `analyze --format html`)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from crossview.cli.app import app, emit, error_line, parse_window, run_analysis
from crossview.cli.lake import CampaignOpt, LakeOpt, RunOpt, sources
from crossview.errors import InputError

if TYPE_CHECKING:
    from crossview.analysis import Analysis


def html_report(result: Analysis, paths: list[Path], ab: list[Path] | None = None) -> tuple[
        str, bool]:
    """The report's HTML and whether an optional input (synthesis, A/B) was rejected; each
    rejected one gets its error line and the report is written without that panel."""
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


@app.command()
def report(
    paths: Annotated[list[Path] | None, typer.Argument(
        help="Trace files or folders of them (or --lake).")] = None,
    output: Annotated[Path, typer.Option("--output", "-o", help="Write the HTML here.")] = Path(
        "report.html"),
    ab: Annotated[list[Path] | None, typer.Option(
        "--ab", help="A/B result (`crossview ab --format json`) to include.")] = None,
    device: Annotated[int | None, typer.Option(help="Only this GPU (device id).")] = None,
    stream: Annotated[int | None, typer.Option(help="Only this CUDA stream.")] = None,
    pid: Annotated[str | None, typer.Option(help="Only this host process.")] = None,
    tid: Annotated[str | None, typer.Option(help="Only this host thread.")] = None,
    window: Annotated[str | None, typer.Option(help="START_NS:END_NS (trace clock).")] = None,
    annotation: Annotated[str | None, typer.Option(
        help="Only work under this user annotation / NVTX range.")] = None,
    artifact: Annotated[str | None, typer.Option(help="Only this input file.")] = None,
    lake: LakeOpt = None,
    campaign: CampaignOpt = None,
    run_id: RunOpt = None,
    gpu: Annotated[str | None, typer.Option(
        help="GPU of ncu captures that do not name it (e.g. 'RTX 5090'): its ceilings apply."
    )] = None,
) -> None:
    """Write one self-contained HTML page: recap, flamegraphs, timeline, roofline, ledger."""
    from crossview.cli.lake import analysis_of as run
    from crossview.model.filter import Filter

    paths = sources(paths, lake)
    result = run_analysis(lambda: run(paths, Filter(
        device=device, stream=stream, pid=pid, tid=tid, window_ns=parse_window(window),
        annotation=annotation, artifact=artifact), gpu=gpu, lake=lake, campaign=campaign,
        run=run_id), paths)
    text, bad = html_report(result, paths, ab)
    emit(text, output, result)
    if bad:
        raise typer.Exit(2)

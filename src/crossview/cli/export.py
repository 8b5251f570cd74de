"""`crossview export`: the analysis in the formats of other viewers (crossview/export/)."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from crossview.cli.app import OPTIONS, app, error_line, run_analysis, write_output
from crossview.cli.filter_options import NO_FILTER, with_filter
from crossview.cli.lake import CampaignOpt, LakeOpt, RunOpt, sources
from crossview.cli.lake import analysis_of as run
from crossview.errors import UsageError

if TYPE_CHECKING:
    from crossview.scope.filter import Filter
    from crossview.views.host.calltree import CallTree
    from crossview.views.views import Views


class To(StrEnum):
    folded = "folded"
    speedscope = "speedscope"
    perfetto = "perfetto"


class View(StrEnum):
    gpu = "gpu"
    cpu = "cpu"
    both = "both"


def _trees(views: Views, view: View) -> list[tuple[str, CallTree]]:
    out = []
    if view in (View.gpu, View.both):
        out.append(("GPU view", views.gpu))
    if view in (View.cpu, View.both):
        out.append(("CPU view (sampled)" if views.cpu.samples else "CPU view", views.cpu))
    return [(n, t) for n, t in out if t.roots]


@app.command()
@with_filter
def export(
    paths: Annotated[list[Path] | None, typer.Argument(
        help="Trace files or folders of them (or --lake).")] = None,
    *,  # --to and --output are required options (no default) after an optional argument
    to: Annotated[To, typer.Option("--to", help="folded (flamegraph.pl / inferno), speedscope "
                                   "JSON, or perfetto (Chrome trace-event JSON).")],
    output: Annotated[Path, typer.Option("--output", "-o", help="Write here.")],
    view: Annotated[View | None, typer.Option(
        help="Call tree(s) to export (folded: default gpu; speedscope: default both). "
        "perfetto exports the timeline, which holds both.")] = None,
    flt: Filter = NO_FILTER,  # the filter options (with_filter)
    lake: LakeOpt = None,
    campaign: CampaignOpt = None,
    run_id: RunOpt = None,
) -> None:
    """Export call trees (folded stacks, speedscope) or the timeline (Perfetto) of the input."""
    # lazy: `crossview --help` and every command's start-up import only what they run (0902)
    from crossview.export import folded, perfetto, speedscope
    from crossview.units import duration

    if to is To.perfetto and view is not None:
        error_line("--view does not apply to --to perfetto: the timeline holds host and GPU")
        raise typer.Exit(2)
    paths = sources(paths, lake)
    result = run_analysis(lambda: run(paths, flt, lake=lake, campaign=campaign, run=run_id),
                          paths)
    assert result.views is not None
    views = result.views
    if to is To.perfetto:
        try:
            data, st = perfetto.render(views.store)
        except UsageError as e:
            error_line(", ".join(map(str, paths)) + f": {e}")
            raise typer.Exit(2) from None
        what = (f"{st.host_events:,} host events, {st.gpu_events:,} GPU ops "
                f"({st.kernels:,} kernels, {duration(st.kernel_ns)} kernel time), "
                f"{st.flows:,} launch→kernel flows; open in ui.perfetto.dev")
    else:
        chosen = view or (View.gpu if to is To.folded else View.both)
        trees = _trees(views, chosen)
        if not trees:
            hint = {View.gpu: "no kernels; try --view cpu", View.cpu: "no host events or "
                    "samples; try --view gpu", View.both: "no kernels, host events or samples"}
            error_line(", ".join(map(str, paths)) + f": nothing to export for --view "
                       f"{chosen.value} under this filter ({hint[chosen]})")
            raise typer.Exit(2)
        totals = ", ".join(f"{n} {duration(t.total_ns)}" for n, t in trees)
        if to is To.folded:
            data = folded.render(trees).encode()
            n_stacks = data.count(b"\n")
            what = f"{n_stacks:,} stacks, weights in ns; {totals}"
        else:
            data = speedscope.render(trees, ", ".join(Path(p).name for p in paths))
            what = f"profiles {totals}; open in speedscope.app"
    write_output(output, data, [Path(a.path) for a in result.artifacts] + list(paths))
    if not OPTIONS.quiet:
        typer.echo(f"crossview: wrote {to.value} export {output} ({what})", err=True)
    if result.rejected:
        raise typer.Exit(2)

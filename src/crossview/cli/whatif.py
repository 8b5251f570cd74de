"""`crossview whatif`: predict a lever's effect by replaying the capture's dependency graph."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from crossview.cli.app import Fmt, app, capture_cache, emit_to, error_line
from crossview.errors import CrossviewError


@app.command()
def whatif(
    capture: Annotated[list[Path], typer.Argument(
        help="Kineto trace or nsys report/SQLite (plus ncu exports for kernel-speedup=…:"
        "roofline); or the ranks of one job (a folder of rank traces), replayed together.")],
    lever: Annotated[list[str] | None, typer.Option(
        "--lever", "-l", help="NAME[=PARAM]; repeat to compose. Levers: dataloader-workers, "
        "cuda-graphs, remove-sync, pinned-copies, kernel-speedup, exclude-startup, "
        "overlap-comm, bucket-grads, fuse-elementwise, ddp-bookkeeping, graph-region, "
        "host-stalls; on the ranks of a job also rank-on-time=R, all-ranks-on-time, and "
        "NAME@R for one rank (docs/whatif.md).")] = None,
    fmt: Annotated[Fmt, typer.Option("--format", "-f", help="Output format.")] = Fmt.md,
) -> None:
    """Baseline vs predicted step time, GPU busy and what now bounds the step."""
    # lazy: `crossview --help` and every command's start-up import only what they run (0902)
    from crossview.cli import answers

    answers.first_look(capture, None)  # a second look: the kept prediction
    # lazy: loaded once the answer is not kept
    from crossview.render import whatif as out
    from crossview.replay.whatif import run

    try:
        result = run(capture, lever or [], cache=capture_cache(), ranges=True)
    except CrossviewError as e:
        error_line(str(e))
        raise typer.Exit(2) from None
    for path, why in result.rejected:  # read beside the replayed capture: said, as analyze
        error_line(f"{path}: {'; '.join(why)}")
    # exit 2 after the output when an input beside the replayed capture was rejected
    emit_to(out.render_json(result) if fmt is Fmt.json else out.render(result), None,
            list(capture), 2 if result.rejected else 0)

"""`crossview diff` and `crossview ab`."""

from __future__ import annotations

import sys
from enum import StrEnum
from functools import partial
from pathlib import Path
from typing import Annotated

import typer

from crossview.cli.app import (
    Fmt,
    app,
    error_line,
    run_analysis,
    write_output,
    write_stdout,
)
from crossview.cli.lake import lake_side
from crossview.cli.multi_value import multi_value
from crossview.errors import CrossviewError, UsageError


@app.command()
def diff(
    a: Annotated[Path, typer.Argument(help="Capture A (Kineto or nsys), the baseline.")],
    b: Annotated[Path, typer.Argument(help="Capture B, compared against A.")],
    fmt: Annotated[Fmt, typer.Option("--format", "-f", help="Output format.")] = Fmt.md,
    output: Annotated[Path | None, typer.Option("--output", "-o", help="Write here.")] = None,
    lake: Annotated[Path | None, typer.Option(
        "--lake", help="A and B are runs of this perf-lake ([CAMPAIGN/]RUN), not files.")] = None,
) -> None:
    """What changed from A to B: per family and kernel time/count/mean, busy, idle, launches."""
    from crossview.analysis import analyze as run
    from crossview.experiments.diff import compare
    from crossview.render import diff as table

    if lake is not None:
        sides = [run_analysis(partial(lake_side, lake, str(p)), [p]) for p in (a, b)]
    else:
        sides = [run_analysis(partial(run, [p]), [p]) for p in (a, b)]
    for p, side in zip((a, b), sides, strict=True):
        assert side.views is not None
        if not side.views.metrics.kernel_count:
            error_line(f"{p}: no GPU kernels in this capture: diff needs a Kineto or nsys timeline")
            raise typer.Exit(2)
    d = compare(*sides)
    text = table.render_json(d) if fmt is Fmt.json else table.render(d)
    if output:
        write_output(output, text, [Path(x.path) for sd in sides for x in sd.artifacts])
    else:
        write_stdout(text)
    if any(s.rejected for s in sides):
        raise typer.Exit(2)


class FailOn(StrEnum):
    loss = "loss"
    insufficient = "insufficient"  # also fails on refusals: the A/B proved nothing


@app.command(cls=multi_value("--baseline", "--variant"))
def ab(
    baseline: Annotated[list[Path], typer.Option(
        help="Baseline result files, one per trial: `--baseline b-t*.json` or repeated.")],
    variant: Annotated[list[Path], typer.Option(
        help="Variant result files, one per trial: `--variant v-t*.json` or repeated.")],
    metric: Annotated[list[str] | None, typer.Option(
        help="Metric(s) to compare (default: every metric with a known direction).")] = None,
    noise: Annotated[float | None, typer.Option(
        help="Noise threshold in % (default thresholds.yaml ab_noise_pct).")] = None,
    alpha: Annotated[float | None, typer.Option(help="Test level (default 0.10).")] = None,
    allow_diff: Annotated[list[str] | None, typer.Option(
        help="Context field the lever changes (may differ between arms).")] = None,
    higher_is_better: Annotated[list[str] | None, typer.Option(
        "--higher-is-better", help="Metric whose higher value is better.")] = None,
    lower_is_better: Annotated[list[str] | None, typer.Option(
        "--lower-is-better", help="Metric whose lower value is better.")] = None,
    ledger: Annotated[Path | None, typer.Option(help="Ledger JSON to record the verdict in.")]
    = None,
    lever: Annotated[str | None, typer.Option(help="Lever id in --ledger.")] = None,
    fail_on: Annotated[FailOn | None, typer.Option(help="Exit 1 on this verdict.")] = None,
    fmt: Annotated[Fmt, typer.Option("--format", "-f", help="Output format.")] = Fmt.md,
    output: Annotated[Path | None, typer.Option("--output", "-o", help="Write here.")] = None,
    node: Annotated[str | None, typer.Option(
        help="Hostname both arms ran on, for trials that recorded none (VERDICT gate).")]
    = None,
    gpu_uuid: Annotated[list[str] | None, typer.Option(
        help="GPU UUID(s) both arms ran on, for trials that recorded none (VERDICT gate).")]
    = None,
    exclude_cold: Annotated[bool, typer.Option(
        help="Leave trials flagged cold (warm-up outliers) out of the comparison.")] = False,
) -> None:
    """A/B of benchmark trials: medians, CI, p, verdict (win/loss/null/insufficient)."""
    from crossview.experiments.ab import run_ab
    from crossview.experiments.gates import NodeClaim
    from crossview.knowledge.thresholds import defaults
    from crossview.render import ab as table
    from crossview.synthesis.ledger_update import read_ledger, update_ledger

    try:
        if (ledger is None) != (lever is None):
            raise UsageError("--ledger and --lever go together")
        if ledger is not None:
            read_ledger(ledger)  # a bad ledger fails before any work
        res = run_ab(baseline, variant, metric, noise, alpha, set(allow_diff or ()),
                     set(higher_is_better or ()), set(lower_is_better or ()),
                     exclude_cold=exclude_cold)
        n = defaults().ab_bootstrap_resamples
        if ledger is not None and lever is not None:
            claim = NodeClaim(node, ",".join(gpu_uuid) if gpu_uuid else None)
            conf, failed = update_ledger(ledger, lever, res, table.to_json(res, n), claim,
                                         set(allow_diff or ()))
            print(f"crossview: {ledger}: lever {lever} → {conf}", file=sys.stderr)
            for g in failed:  # why it stays DRAFT, one line per gate
                print(f"crossview: failed gate {g}", file=sys.stderr)
    except CrossviewError as e:
        error_line(str(e))
        raise typer.Exit(2) from None
    text = table.render_json(res, n) if fmt is Fmt.json else table.render_md(res, n)
    if output:
        write_output(output, text, [*baseline, *variant])
    else:
        write_stdout(text)
    verdicts = {m.verdict for m in res.metrics}
    if fail_on is FailOn.loss and "loss" in verdicts:
        raise typer.Exit(1)
    if fail_on is FailOn.insufficient and ("insufficient" in verdicts or res.refusals
                                           or "loss" in verdicts):
        raise typer.Exit(1)

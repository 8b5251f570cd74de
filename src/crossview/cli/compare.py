"""`crossview diff` and `crossview ab`."""

from __future__ import annotations

import sys
from enum import StrEnum
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from crossview.cli.app import (
    Fmt,
    app,
    capture_cache,
    emit_to,
    error_line,
    run_analysis,
    warning_line,
    write_output,
    write_stdout,
)
from crossview.cli.lake import lake_side
from crossview.cli.multi_value import multi_value
from crossview.errors import CrossviewError, UsageError

if TYPE_CHECKING:
    from crossview.analysis import Analysis
    from crossview.experiments.diff import Diff


@app.command()
def diff(
    a: Annotated[Path, typer.Argument(help="Capture A (Kineto or nsys), the baseline.")],
    b: Annotated[Path, typer.Argument(help="Capture B, compared against A.")],
    fmt: Annotated[Fmt, typer.Option("--format", "-f", help="Output format.")] = Fmt.md,
    output: Annotated[Path | None, typer.Option("--output", "-o", help="Write here.")] = None,
    lake: Annotated[Path | None, typer.Option(
        "--lake", help="A and B are runs of this perf-lake ([CAMPAIGN/]RUN), not files.")] = None,
    lever: Annotated[list[str] | None, typer.Option(
        "--lever", help="Check the replay's prediction: NAME[=PARAM] applied to A (as "
        "`crossview whatif`) beside B's measured steps.")] = None,
    fail_on_regression: Annotated[float | None, typer.Option(
        "--fail-on-regression", help="Exit 1 when the metric (default the median step) "
        "regressed by more than PCT % beyond the step-to-step noise.", metavar="PCT")] = None,
    metric: Annotated[str | None, typer.Option(
        help="The gate's metric: median step | kernel time per step | GPU busy per step.")]
    = None,
    ledger: Annotated[Path | None, typer.Option(
        help="With --lever: record prediction, measurement and error on this ledger's row.")]
    = None,
    ledger_row: Annotated[str | None, typer.Option(
        help="The ledger row (lever id) to record on (default: the lever's finding row).")]
    = None,
) -> None:
    """What changed from A to B: comparability, the GPU's drift, noise, per-step causes, host
    ops, kernels; with --lever the replay's prediction checked against B."""
    # lazy: `crossview --help` and every command's start-up import only what they run (0902)
    from crossview.cli import answers

    # a second look: the kept comparison (not a --lake run, nor one recording on a ledger)
    answers.first_look([a, b], output, kept=lake is None and ledger is None)
    # lazy: loaded once the answer is not kept
    from crossview.analysis import analyze as run
    from crossview.experiments.diff import compare
    from crossview.render import diff as table

    try:
        if lake is not None and lever:
            raise UsageError("--lever replays capture files: give A and B as files, not "
                             "--lake runs")
        if (ledger is not None or ledger_row is not None) and not lever:
            raise UsageError("--ledger / --ledger-row record a --lever check: give --lever")
        if metric is not None and fail_on_regression is None:
            raise UsageError("--metric names the --fail-on-regression gate's metric")
        if fail_on_regression is not None:
            # lazy: `crossview --help` and every command's start-up import only what they run (0902)
            from crossview.experiments.regression import check_args

            check_args(fail_on_regression, metric)
        if lever:
            # lazy: `crossview --help` and every command's start-up import only what they run (0902)
            from crossview.replay.levers import parse

            for spec in lever:
                parse(spec)  # an unknown lever fails before any work
        if ledger is not None:
            # lazy: `crossview --help` and every command's start-up import only what they run (0902)
            from crossview.synthesis.ledger_update import read_ledger

            read_ledger(ledger)  # a bad ledger fails before any work
    except CrossviewError as e:
        error_line(str(e))
        raise typer.Exit(2) from None
    if lake is not None:
        sides = [run_analysis(partial(lake_side, lake, str(p)), [p]) for p in (a, b)]
    else:
        cache = capture_cache()
        sides = [run_analysis(partial(run, [p], cache=cache), [p]) for p in (a, b)]
    for p, side in zip((a, b), sides, strict=True):
        assert side.views is not None
        if not side.views.metrics.kernel_count:
            error_line(f"{p}: no GPU kernels in this capture: diff needs a Kineto or nsys timeline")
            raise typer.Exit(2)
    d = compare(*sides)
    try:
        _attach(d, a, b, sides, lever, fail_on_regression, metric, ledger, ledger_row)
    except CrossviewError as e:
        error_line(str(e))
        raise typer.Exit(2) from None
    text = table.render_json(d) if fmt is Fmt.json else table.render(d)
    rejected = any(s.rejected for s in sides)
    gate = None if rejected else d.gate  # a rejected side: exit 2, no gate

    def verdict() -> None:
        """The gate's line, after the comparison."""
        if gate is not None and gate.verdict == "undecided":
            warning_line(f"--fail-on-regression: not judged: {gate.why}")
        if gate is not None and gate.failed:
            error_line(f"--fail-on-regression {gate.threshold_pct:g}: {gate.why}")

    failed = gate is not None and gate.failed
    emit_to(text, output, [Path(x.path) for sd in sides for x in sd.artifacts],
            2 if rejected else 1 if failed else 0, verdict)


def _attach(d: Diff, a: Path, b: Path, sides: list[Analysis], lever: list[str] | None,
            pct: float | None, metric: str | None, ledger: Path | None,
            ledger_row: str | None) -> None:
    """The --lever check (and its ledger record) and the --fail-on-regression gate."""
    # lazy: `crossview --help` and every command's start-up import only what they run (0902)
    from crossview.experiments import lever_check, regression
    from crossview.experiments.diff import attach

    check = lever_check.check(a, b, list(lever)) if lever else None
    attach(d, check, regression.judge(sides[0], sides[1], pct, metric)
           if pct is not None else None)
    if check is not None and ledger is not None:
        # lazy: `crossview --help` and every command's start-up import only what they run (0902)
        from crossview.synthesis.ledger_replay import record

        rid = record(ledger, check, ledger_row)
        print(f"crossview: {ledger}: replay check recorded on lever {rid}", file=sys.stderr)


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
    # lazy: `crossview --help` and every command's start-up import only what they run (0902)
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

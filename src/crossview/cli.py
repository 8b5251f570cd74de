"""Command line: a thin shell over crossview.analysis (Typer)."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from crossview.errors import CrossviewError, UsageError

if TYPE_CHECKING:
    from crossview.analysis import Analysis

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  help="Cross-view GPU performance analysis of profiler captures.")


class Fmt(StrEnum):
    md = "md"
    json = "json"


def _error(msg: str) -> None:
    print(f"crossview: error: {msg}", file=sys.stderr)


def _window(text: str | None) -> tuple[int, int] | None:
    if text is None:
        return None
    try:
        a, b = text.split(":")
        return int(a), int(b)
    except ValueError:
        raise UsageError(f"--window {text!r}: expected START_NS:END_NS (integers)") from None


def _run(analysis: Callable[[], Analysis], paths: list[Path]) -> Analysis:
    """Run an analysis; one error line per rejected input; exit 2 when nothing was read."""
    try:
        result = analysis()
    except CrossviewError as e:
        _error(str(e))
        raise typer.Exit(2) from None
    for r in result.rejected:
        _error(f"{r.path}: {'; '.join(r.problems)}")
    if result.views is None:
        if not result.rejected:
            _error("no input files found in " + ", ".join(map(str, paths)))
        raise typer.Exit(2)  # nothing was analyzed: the error lines above say why
    return result


def _emit(text: str, output: Path | None, result: Analysis) -> None:
    """Write the output; exit 2 after it when some input was rejected."""
    if output:
        output.write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)
    if result.rejected:
        raise typer.Exit(2)


@app.command()
def analyze(
    paths: Annotated[list[Path], typer.Argument(help="Trace files or folders of them.")],
    fmt: Annotated[Fmt, typer.Option("--format", "-f", help="Output format.")] = Fmt.md,
    output: Annotated[Path | None, typer.Option("--output", "-o", help="Write here.")] = None,
    device: Annotated[int | None, typer.Option(help="Only this GPU (device id).")] = None,
    stream: Annotated[int | None, typer.Option(help="Only this CUDA stream.")] = None,
    pid: Annotated[str | None, typer.Option(help="Only this host process.")] = None,
    tid: Annotated[str | None, typer.Option(help="Only this host thread.")] = None,
    window: Annotated[str | None, typer.Option(help="START_NS:END_NS (trace clock).")] = None,
    annotation: Annotated[str | None, typer.Option(
        help="Only work under this user annotation / NVTX range.")] = None,
    artifact: Annotated[str | None, typer.Option(help="Only this input file.")] = None,
    gpu: Annotated[str | None, typer.Option(
        help="GPU of ncu captures that do not name it (e.g. 'RTX 5090'): its ceilings apply."
    )] = None,
) -> None:
    """Print the recap: metrics, GPU view, CPU cross-check, findings with fixes."""
    from crossview.analysis import analyze as run
    from crossview.model.filter import Filter
    from crossview.render import json as json_out
    from crossview.render import markdown

    result = _run(lambda: run(paths, Filter(
        device=device, stream=stream, pid=pid, tid=tid, window_ns=_window(window),
        annotation=annotation, artifact=artifact), gpu=gpu), paths)
    text = json_out.render(result) if fmt is Fmt.json else markdown.render(result)
    _emit(text, output, result)


@app.command()
def kernels(
    paths: Annotated[list[Path], typer.Argument(help="ncu exports (.ncu-rep, --csv) or folders.")],
    fmt: Annotated[Fmt, typer.Option("--format", "-f", help="Output format.")] = Fmt.md,
    output: Annotated[Path | None, typer.Option("--output", "-o", help="Write here.")] = None,
    gpu: Annotated[str | None, typer.Option(
        help="GPU of captures that do not name it (e.g. 'RTX 5090'): its ceilings apply."
    )] = None,
) -> None:
    """Per-kernel roofline from Nsight Compute: FLOP/s, bytes, % of ceilings, bound."""
    from crossview.analysis import analyze as run
    from crossview.render import kernels as table

    result = _run(lambda: run(paths, gpu=gpu), paths)
    assert result.views is not None
    if not result.views.kernels:
        _error(", ".join(map(str, paths)) + ": no per-kernel counters (ncu) in this input: "
               "profile with `ncu -o report …` (or export `ncu --csv`) and pass that file")
        raise typer.Exit(2)
    text = table.render_json(result) if fmt is Fmt.json else table.render(result)
    _emit(text, output, result)


@app.command()
def sol(
    model: Annotated[str, typer.Option(help="config.json path or shipped model name.")],
    hardware: Annotated[str, typer.Option(help="GPU: sol_ceilings.yaml key or device name.")],
    dtype: Annotated[str, typer.Option(help="Weight dtype: bf16, fp16, fp8, fp4, int8…")]
    = "bf16",
    kv_dtype: Annotated[str, typer.Option(help="KV-cache dtype.")] = "bf16",
    tp: Annotated[int | None, typer.Option(help="Tensor-parallel GPUs.")] = None,
    batch: Annotated[int | None, typer.Option(help="Concurrent sequences.")] = None,
    isl: Annotated[int | None, typer.Option(help="Input (prompt) tokens.")] = None,
    osl: Annotated[int | None, typer.Option(help="Output tokens.")] = None,
    bench: Annotated[Path | None, typer.Option(help="Benchmark result to rate (% of SoL).")]
    = None,
    fmt: Annotated[Fmt, typer.Option("--format", "-f", help="Output format.")] = Fmt.md,
) -> None:
    """LLM speed-of-light: lower bounds on prefill, TTFT, TPOT, tokens/s (and % of SoL)."""
    from crossview.views import sol_cmd

    try:
        text = sol_cmd.run(model, hardware, dtype=dtype, kv_dtype=kv_dtype, tp=tp, batch=batch,
                           isl=isl, osl=osl, bench=bench, as_json=fmt is Fmt.json)
    except CrossviewError as e:
        _error(str(e))
        raise typer.Exit(2) from None
    sys.stdout.write(text)


@app.command()
def diff(
    a: Annotated[Path, typer.Argument(help="Capture A (Kineto or nsys), the baseline.")],
    b: Annotated[Path, typer.Argument(help="Capture B, compared against A.")],
    fmt: Annotated[Fmt, typer.Option("--format", "-f", help="Output format.")] = Fmt.md,
    output: Annotated[Path | None, typer.Option("--output", "-o", help="Write here.")] = None,
) -> None:
    """What changed from A to B: per family and kernel time/count/mean, busy, idle, launches."""
    from crossview.analysis import analyze as run
    from crossview.experiments.diff import compare
    from crossview.render import diff as table

    sides = [_run(lambda p=p: run([p]), [p]) for p in (a, b)]
    for p, side in zip((a, b), sides, strict=True):
        assert side.views is not None
        if not side.views.metrics.kernel_count:
            _error(f"{p}: no GPU kernels in this capture: diff needs a Kineto or nsys timeline")
            raise typer.Exit(2)
    d = compare(*sides)
    text = table.render_json(d) if fmt is Fmt.json else table.render(d)
    if output:
        output.write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)
    if any(s.rejected for s in sides):
        raise typer.Exit(2)


class FailOn(StrEnum):
    loss = "loss"
    insufficient = "insufficient"  # also fails on refusals: the A/B proved nothing


@app.command()
def ab(
    baseline: Annotated[list[Path], typer.Option(help="Baseline result file(s), one per trial.")],
    variant: Annotated[list[Path], typer.Option(help="Variant result file(s), one per trial.")],
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
) -> None:
    """A/B of benchmark trials: medians, CI, p, verdict (win/loss/null/insufficient)."""
    from crossview.experiments.ab import run_ab
    from crossview.experiments.ledger import read_ledger, update_ledger
    from crossview.knowledge.thresholds import defaults
    from crossview.render import ab as table

    try:
        if (ledger is None) != (lever is None):
            raise UsageError("--ledger and --lever go together")
        if ledger is not None:
            read_ledger(ledger)  # a bad ledger fails before any work
        res = run_ab(baseline, variant, metric, noise, alpha, set(allow_diff or ()),
                     set(higher_is_better or ()), set(lower_is_better or ()))
        n = defaults().ab_bootstrap_resamples
        if ledger is not None and lever is not None:
            update_ledger(ledger, lever, res, table.to_json(res, n))
    except CrossviewError as e:
        _error(str(e))
        raise typer.Exit(2) from None
    text = table.render_json(res, n) if fmt is Fmt.json else table.render_md(res, n)
    if output:
        output.write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)
    verdicts = {m.verdict for m in res.metrics}
    if fail_on is FailOn.loss and "loss" in verdicts:
        raise typer.Exit(1)
    if fail_on is FailOn.insufficient and ("insufficient" in verdicts or res.refusals
                                           or "loss" in verdicts):
        raise typer.Exit(1)


@app.command("mcp")
def mcp_server(
    root: Annotated[list[Path], typer.Option(
        help="Folder whose captures the server may open (repeatable; nothing outside).")],
    http: Annotated[bool, typer.Option(help="Streamable HTTP instead of stdio.")] = False,
    host: Annotated[str, typer.Option(help="HTTP bind address (beyond loopback: --token).")]
    = "127.0.0.1",
    port: Annotated[int, typer.Option(help="HTTP port.")] = 8765,
    token: Annotated[str | None, typer.Option(
        envvar="CROSSVIEW_MCP_TOKEN", help="Bearer token HTTP clients must send.")] = None,
) -> None:
    """MCP server: crossview's views as tools for an agent (stdio by default)."""
    try:
        import mcp  # noqa: F401  (the SDK is an optional extra)
    except ImportError:
        _error("the MCP server needs the `mcp` extra: pip install 'crossview[mcp]'")
        raise typer.Exit(2) from None
    from crossview.mcp.server import run as serve

    try:
        serve(root, http, host, port, token)
    except CrossviewError as e:
        _error(str(e))
        raise typer.Exit(2) from None


@app.callback()
def _root() -> None:
    """crossview: why is my GPU workload slow, and what exactly do we change?"""


def main() -> None:
    try:
        app()
    except KeyboardInterrupt:
        _error("interrupted")
        sys.exit(130)
    except Exception as e:  # a bug, not a user error: one line unless debugging
        if os.environ.get("CROSSVIEW_DEBUG"):
            raise
        print(f"crossview: internal error: {type(e).__name__}: {e} "
              "(set CROSSVIEW_DEBUG=1 for the traceback)", file=sys.stderr)
        sys.exit(3)

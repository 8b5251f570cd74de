"""`crossview sol`: LLM speed-of-light bounds."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from crossview.cli.app import Fmt, app, error_line, write_stdout
from crossview.errors import CrossviewError


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
    # lazy: `crossview --help` and every command's start-up import only what they run (0902)
    from crossview.analysis import bench_arms
    from crossview.render import sol as out
    from crossview.sol import command

    try:
        arm = bench_arms(bench)[0] if bench else None
        answer = command.bound(model, hardware, dtype=dtype, kv_dtype=kv_dtype, tp=tp,
                               batch=batch, isl=isl, osl=osl, arm=arm)
    except CrossviewError as e:
        error_line(str(e))
        raise typer.Exit(2) from None
    write_stdout(out.render_json(*answer) if fmt is Fmt.json else out.render(*answer))

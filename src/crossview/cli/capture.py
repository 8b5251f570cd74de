"""`crossview capture`: make a bundle — `-o B -- CMD…` (a script), `vllm` (a serving engine),
`plan` (the coordinated multi-profiler capture as shell or Kubernetes)."""

from __future__ import annotations

import sys
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer
from typer.core import TyperGroup

from crossview.cli.app import app, error_line, write_stdout
from crossview.errors import CrossviewError

_CMD = "crossview.capture.cmd"


class _ScriptGroup(TyperGroup):
    """Everything after `--` is the command to capture, not a subcommand name."""

    # typer >= 0.16 vendors click: typer.Context subclasses the private typer._click Context
    # the base method names, so the narrower public type is reported as an unsafe override.
    def parse_args(  # type: ignore[override]
            self, ctx: typer.Context, args: list[str]) -> list[str]:
        if "--" in args:
            i = args.index("--")
            ctx.meta[_CMD] = args[i + 1:]
            args = args[:i]
        return super().parse_args(ctx, args)


capture_app = typer.Typer(cls=_ScriptGroup, invoke_without_command=True,
                          help="Capture a bundle: `crossview capture -o B -- python x.py`, "
                               "`crossview capture vllm …`, `crossview capture plan …`.")
app.add_typer(capture_app, name="capture")


def _fail(e: CrossviewError) -> typer.Exit:
    error_line(str(e))
    return typer.Exit(2)


@capture_app.callback()
def script(
    ctx: typer.Context,
    output: Annotated[Path | None, typer.Option("-o", "--output", help="bundle folder")] = None,
    wait: Annotated[int, typer.Option(help="profiler schedule: steps skipped")] = 1,
    warmup: Annotated[int, typer.Option(help="profiler schedule: warm-up steps")] = 1,
    active: Annotated[int, typer.Option(help="profiler schedule: recorded steps")] = 3,
    repeat: Annotated[int, typer.Option(help="profiler schedule: cycles")] = 1,
    whole: Annotated[bool, typer.Option("--whole", help="no schedule: record the whole run")
                     ] = False,
    interval_ms: Annotated[int, typer.Option(help="NVML sampling interval (ms)")] = 100,
    ncu_kernels: Annotated[str | None, typer.Option(
        help="re-run under `ncu --set full` for kernels matching this regex (needs ncu)")] = None,
    ncu_launch_count: Annotated[int, typer.Option(help="ncu: launches profiled")] = 3,
    ncu_rep: Annotated[Path | None, typer.Option(help="ncu: keep the .ncu-rep here")] = None,
    regime: Annotated[str | None, typer.Option(
        help="context.extra.regime: decode | prefill | serving | training")] = None,
) -> None:
    """Capture a script: `crossview capture -o B -- python x.py …`.

    Runs the command with the torch profiler in every Python process it starts (a
    sitecustomize hook), NVML and host-CPU samplers, then writes traces/, metrics/ and
    bundle.yaml.
    """
    if ctx.invoked_subcommand is not None:
        return
    cmd = ctx.meta.get(_CMD)
    if not cmd:
        if output is None:
            typer.echo(ctx.get_help())
            raise typer.Exit(0)
        error_line("no command to capture: crossview capture -o BUNDLE -- python script.py …")
        raise typer.Exit(2)
    if output is None:
        error_line("-o/--output BUNDLE is required")
        raise typer.Exit(2)
    # lazy: `crossview --help` and every command's start-up import only what they run (0902)
    from crossview.capture.profiler import Schedule
    from crossview.capture.script import ScriptOptions, run_script

    opts = ScriptOptions(Schedule(wait, warmup, active, repeat, whole), interval_ms,
                         ncu_kernels=ncu_kernels, ncu_launch_count=ncu_launch_count,
                         ncu_rep=ncu_rep, regime=regime)
    try:
        rc = run_script(output, list(cmd), opts)
    except CrossviewError as e:
        raise _fail(e) from None
    print(f"crossview capture: bundle written to {output} (bundle.yaml lists what went wrong, "
          "if anything)", file=sys.stderr)
    raise typer.Exit(rc)


@capture_app.command("vllm")
def vllm(
    output: Annotated[Path, typer.Option("-o", "--output", help="bundle folder")],
    url: Annotated[str, typer.Option(help="the engine's base URL")] = "http://127.0.0.1:8000",
    bench: Annotated[str | None, typer.Option(
        help='load generator command, e.g. "vllm bench serve --model M …"')] = None,
    interval: Annotated[float, typer.Option(help="/metrics scrape interval (s)")] = 5.0,
    trace_dir: Annotated[Path | None, typer.Option(
        help="the server's VLLM_TORCH_PROFILER_DIR (default: that variable here)")] = None,
    duration: Annotated[float | None, typer.Option(
        help="without --bench: seconds to capture while load comes from elsewhere")] = None,
    trace_wait: Annotated[float, typer.Option(
        help="seconds to wait for the server's trace files after /stop_profile")] = 120.0,
    no_profile: Annotated[bool, typer.Option(
        "--no-profile", help="do not toggle /start_profile and /stop_profile")] = False,
) -> None:
    """Serving capture of a running vLLM: scrapes, profiler window, bench, traces, Context.

    /metrics before, every --interval s and after; /start_profile and /stop_profile around the
    bench; the bench result, the server's trace files and the Context go into the bundle.
    """
    # lazy: `crossview --help` and every command's start-up import only what they run (0902)
    from crossview.capture.vllm import VllmOptions, capture_vllm

    try:
        rc = capture_vllm(output, VllmOptions(url, bench, interval, trace_dir, duration,
                                              trace_wait, not no_profile))
    except CrossviewError as e:
        raise _fail(e) from None
    print(f"crossview capture: bundle written to {output}", file=sys.stderr)
    raise typer.Exit(rc)


class PlanFmt(StrEnum):
    sh = "sh"
    k8s = "k8s"


@capture_app.command("plan")
def plan(
    engine: Annotated[str, typer.Option(help="serving engine (knowledge/capture_plan.yaml)")
                      ] = "vllm",
    model: Annotated[str | None, typer.Option(help="model name or local path")] = None,
    tokenizer: Annotated[str | None, typer.Option(help="local tokenizer path (bench)")] = None,
    tp: Annotated[int | None, typer.Option(help="tensor parallel size (= GPUs)")] = None,
    port: Annotated[int | None, typer.Option()] = None,
    out: Annotated[str | None, typer.Option(help="captures folder")] = None,
    isl: Annotated[int | None, typer.Option(help="input tokens per request")] = None,
    osl: Annotated[int | None, typer.Option(help="output tokens per request")] = None,
    num_prompts: Annotated[int | None, typer.Option()] = None,
    concurrency: Annotated[int | None, typer.Option()] = None,
    kernels: Annotated[str | None, typer.Option(help="ncu kernel-name regex")] = None,
    launch_count: Annotated[int | None, typer.Option(help="ncu launches")] = None,
    dcgm_url: Annotated[str | None, typer.Option(help="dcgm-exporter base URL")] = None,
    image: Annotated[str | None, typer.Option(help="k8s: server image")] = None,
    client_image: Annotated[str | None, typer.Option(help="k8s: client image")] = None,
    pvc: Annotated[str | None, typer.Option(help="k8s: captures PVC")] = None,
    namespace: Annotated[str | None, typer.Option(help="k8s: namespace")] = None,
    fmt: Annotated[PlanFmt, typer.Option("--format", help="sh | k8s")] = PlanFmt.sh,
) -> None:
    """Print the coordinated multi-profiler capture as shell commands or Kubernetes Jobs.

    (A) bench + torch-profiler window + metric scrapes, (B) a separate nsys run, (C) a separate
    ncu run by kernel name, (D) DCGM over the bench window.
    """
    # lazy: `crossview --help` and every command's start-up import only what they run (0902)
    from crossview.capture import plan as plan_mod
    from crossview.capture.plan_k8s import render_k8s

    over = {"model": model, "tokenizer": tokenizer, "tp": tp, "port": port, "out": out,
            "isl": isl, "osl": osl, "num_prompts": num_prompts, "concurrency": concurrency,
            "kernels": kernels, "launch_count": launch_count, "dcgm_url": dcgm_url,
            "image": image, "client_image": client_image, "pvc": pvc, "namespace": namespace}
    try:
        p = plan_mod.build(engine, over)
    except CrossviewError as e:
        raise _fail(e) from None
    write_stdout(render_k8s(p) if fmt is PlanFmt.k8s else plan_mod.render_sh(p))

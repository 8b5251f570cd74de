"""The filter options every analysis command takes (one definition, so `analyze`, `report` and
`export` cannot drift apart), and the Filter they build."""

from __future__ import annotations

from typing import Annotated

import typer

from crossview.cli.app import parse_window
from crossview.scope.filter import Filter

DeviceOpt = Annotated[int | None, typer.Option(help="Only this GPU (device id).")]
StreamOpt = Annotated[int | None, typer.Option(help="Only this CUDA stream.")]
PidOpt = Annotated[str | None, typer.Option(help="Only this host process.")]
TidOpt = Annotated[str | None, typer.Option(help="Only this host thread.")]
WindowOpt = Annotated[str | None, typer.Option(help="START_NS:END_NS (trace clock).")]
AnnotationOpt = Annotated[str | None, typer.Option(
    help="Only work under this user annotation / NVTX range.")]
ArtifactOpt = Annotated[str | None, typer.Option(help="Only this input file.")]
StepOpt = Annotated[str | None, typer.Option(
    help="Only these steps: N or A:B (ProfilerStep#N numbers, else 1-based step index).")]
GpuOpt = Annotated[str | None, typer.Option(
    help="GPU of ncu captures that do not name it (e.g. 'RTX 5090'): its ceilings apply.")]


def make_filter(device: int | None, stream: int | None, pid: str | None, tid: str | None,
                window: str | None, annotation: str | None, artifact: str | None,
                step: str | None = None) -> Filter:
    return Filter(device=device, stream=stream, pid=pid, tid=tid,
                  window_ns=parse_window(window), annotation=annotation, artifact=artifact,
                  step=step)

"""The filter options every analysis command takes (one definition, so `analyze`, `report` and
`export` cannot drift apart), and the Filter they build."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Annotated, TypeVar

import typer

from crossview.cli.app import error_line, parse_window
from crossview.errors import UsageError
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
R = TypeVar("R")

GpuOpt = Annotated[str | None, typer.Option(
    help="GPU of ncu captures that do not name it (e.g. 'RTX 5090'): its ceilings apply.")]


def make_filter(device: int | None, stream: int | None, pid: str | None, tid: str | None,
                window: str | None, annotation: str | None, artifact: str | None,
                step: str | None = None) -> Filter:
    return Filter(device=device, stream=stream, pid=pid, tid=tid,
                  window_ns=parse_window(window), annotation=annotation, artifact=artifact,
                  step=step)


# What a `with_filter` command declares as its `flt` default (replaced by the options' Filter).
NO_FILTER = Filter()

# The options `with_filter` adds, in help order, and the Filter field each one fills.
_FILTER_PARAMS: tuple[tuple[str, object], ...] = (
    ("device", DeviceOpt), ("stream", StreamOpt), ("pid", PidOpt), ("tid", TidOpt),
    ("window", WindowOpt), ("annotation", AnnotationOpt), ("artifact", ArtifactOpt),
    ("step", StepOpt))


def with_filter(fn: Callable[..., R]) -> Callable[..., R]:
    """Give a typer command the filter options and pass it one `flt: Filter` instead: the
    command declares `flt` and never repeats the eight options. Typer reads the wrapper's
    `__signature__`, whose annotations are evaluated here (the command module may import its
    types under TYPE_CHECKING only, so `flt` itself is not evaluated)."""
    sig = inspect.signature(fn)
    kw = inspect.Parameter.KEYWORD_ONLY  # typer calls commands with keywords only
    params: list[inspect.Parameter] = []
    for p in sig.parameters.values():
        if p.name == "flt":
            params += [inspect.Parameter(n, kw, default=None, annotation=a)
                       for n, a in _FILTER_PARAMS]
            continue
        ann = p.annotation
        if isinstance(ann, str):
            ann = eval(ann, fn.__globals__)  # noqa: S307 - the command's own annotation text
        params.append(p.replace(annotation=ann, kind=kw))
    names = {n for n, _ in _FILTER_PARAMS}

    @functools.wraps(fn)
    def command(**kwargs: object) -> R:
        opts = {n: kwargs.pop(n, None) for n in names}
        try:
            flt = make_filter(**opts)  # type: ignore[arg-type]
        except UsageError as e:  # a malformed --window: one error line, exit 2
            error_line(str(e))
            raise typer.Exit(2) from None
        return fn(flt=flt, **kwargs)

    command.__signature__ = sig.replace(  # type: ignore[attr-defined]
        parameters=params, return_annotation=inspect.Signature.empty)
    command.__annotations__ = {p.name: p.annotation for p in params}
    return command

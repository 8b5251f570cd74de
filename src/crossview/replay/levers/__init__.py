"""Levers: graph transformations, one module per lever. Each module has NAME, SUMMARY and
`apply(graph, param, ctx) -> str` (one line saying what it changed); a lever that needs
information the capture does not hold raises LeverUnavailable naming it."""

from __future__ import annotations

from dataclasses import dataclass
from types import ModuleType

from crossview.errors import UsageError
from crossview.replay.levers import (
    bucket_grads,
    cuda_graphs,
    dataloader,
    ddp_bookkeeping,
    fuse_elementwise,
    graph_region,
    host_stalls,
    kernel_speedup,
    overlap_comm,
    pinned,
    remove_sync,
    startup,
)
from crossview.replay.levers.common import LeverUnavailable

MODULES: dict[str, ModuleType] = {m.NAME: m for m in (
    dataloader, cuda_graphs, remove_sync, pinned, kernel_speedup, startup, overlap_comm,
    bucket_grads, fuse_elementwise, ddp_bookkeeping, graph_region, host_stalls)}

__all__ = ["MODULES", "LeverSpec", "LeverUnavailable", "parse"]


@dataclass(frozen=True)
class LeverSpec:
    name: str
    param: str | None

    def __str__(self) -> str:
        return self.name if self.param is None else f"{self.name}={self.param}"


def parse(text: str) -> LeverSpec:
    name, _, param = text.partition("=")
    name = name.strip()
    if name not in MODULES:
        raise UsageError(f"--lever {text!r}: unknown lever; known: {', '.join(MODULES)}")
    return LeverSpec(name, param.strip() or None)

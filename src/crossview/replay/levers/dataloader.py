"""dataloader-workers: data loading moves to worker processes; the main thread keeps only the
per-batch hand-off (receiving the batch) inside each DataLoader `__next__`.

What the lever itself costs (issue 39, decision 0853): the workers run the loading the capture
shows on the main thread beside the training threads, on the same host; their cores, caches,
memory bandwidth and clocks are shared, so the training threads' own host work (ops, Python,
runtime calls: every host segment of the threads that call the CUDA API) runs slower. The
replay cannot see the host, so that slowdown is an unknown with bounds (replay.yaml
`host_slowdown`, `_low`, `_high`): the prediction is replayed at the point and at each bound."""

from __future__ import annotations

from crossview.replay.graph import CALL, CPU, GAP, GPU_KINDS, WAIT, Graph
from crossview.replay.levers.common import (
    LeverContext,
    LeverUnavailable,
    bounded,
    defaults,
    number,
)

NAME = "dataloader-workers"
SUMMARY = "data loading off the main thread (DataLoader num_workers > 0)"
PARAM_IS = "handoff_ms"
UNKNOWNS = {"host_slowdown": "the worker processes' slowdown of the training threads' host "
            "work (shared cores, caches, memory bandwidth, clocks: the host is not in the "
            "capture)"}


def apply(g: Graph, param: str | None, ctx: LeverContext) -> str:
    handoff = int(number(NAME, param, defaults(NAME)["handoff_ms"]) * 1e6)
    spans = 0
    removed = 0
    for i in range(len(g)):
        if "dataloader" not in g.tags[i] or g.kind[i] in GPU_KINDS or g.kind[i] == WAIT:
            continue
        prev = next((c.pred for c in g.cons[i] if c.why == "chain"), None)
        first = prev is None or "dataloader" not in g.tags[prev]
        removed += g.dur[i]
        g.dur[i] = handoff if first else 0
        spans += first
    if not spans:
        raise LeverUnavailable(f"{NAME}: the capture holds no DataLoader frames on a host "
                               "thread (knowledge/frames.yaml `dataloader`): nothing to move")
    slow = bounded(NAME, "host_slowdown", ctx)
    lanes = {g.lane[i] for i in range(len(g)) if g.kind[i] == CALL}  # threads calling CUDA
    added = 0
    for i in range(len(g)):
        if (slow and g.lane[i] in lanes and g.kind[i] in (CPU, GAP, CALL)
                and "dataloader" not in g.tags[i]):
            extra = int(g.dur[i] * slow)
            g.dur[i] += extra
            added += extra
    return (f"{spans} DataLoader __next__ spans: {removed / 1e6:.2f} ms of main-thread time "
            f"→ {handoff / 1e6:.2f} ms hand-off each; the training threads' host work "
            f"{slow:+.1%} ({added / 1e6:.2f} ms) beside the worker processes")

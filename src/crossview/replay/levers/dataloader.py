"""dataloader-workers: data loading moves to worker processes; the main thread keeps only the
per-batch hand-off (receiving the batch) inside each DataLoader `__next__`."""

from __future__ import annotations

from crossview.replay.graph import GPU_KINDS, WAIT, Graph
from crossview.replay.levers.common import LeverContext, LeverUnavailable, defaults, number

NAME = "dataloader-workers"
SUMMARY = "data loading off the main thread (DataLoader num_workers > 0)"


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
    return (f"{spans} DataLoader __next__ spans: {removed / 1e6:.2f} ms of main-thread time "
            f"→ {handoff / 1e6:.2f} ms hand-off each")

"""The `whatif` tool (issue 16): replay a capture's dependency graph under levers, as
`crossview whatif`. Read-only."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from crossview.errors import CrossviewError
from crossview.mcp.cache import AnalysisCache
from crossview.mcp.compact import Detail, within
from crossview.mcp.jsonout import dumps
from crossview.mcp.safety import Refused

CaptureArg = Annotated[list[str], Field(description="Kineto trace or nsys report/SQLite under "
                                        "a root (plus ncu exports for kernel-speedup "
                                        "MATCH:roofline), or the ranks of one job (a folder "
                                        "of rank traces: replayed joined at their "
                                        "collectives).", min_length=1)]
LeverArg = Annotated[list[str] | None, Field(description="Levers NAME[=PARAM], composed in "
                                             "order: dataloader-workers, cuda-graphs, "
                                             "remove-sync, pinned-copies, kernel-speedup="
                                             "MATCH:FACTOR|MATCH:roofline, exclude-startup, "
                                             "overlap-comm, bucket-grads, fuse-elementwise, "
                                             "ddp-bookkeeping, graph-region, host-stalls; "
                                             "on the ranks of a job also rank-on-time=R, "
                                             "all-ranks-on-time and NAME@R (one rank). "
                                             "None: the baseline self-check.")]


class WhatIfTools:
    def __init__(self, cache: AnalysisCache) -> None:
        self.cache = cache

    def whatif(self, capture: CaptureArg, lever: LeverArg = None,
               detail: Detail = "summary") -> str:
        """Predict a lever's effect by replaying the capture's dependency graph (Daydream-
        style): baseline vs predicted median step time and GPU busy (ns), the self-check
        (unchanged replay vs measured steps; no prediction when it fails), the prediction's
        range (the levers replayed at the bounds of what they cannot know) and what bounds
        the predicted step (critical path by cause). Refused with one line on a capture with no
        timeline or no host side; a path refused, or a file rejected, beside the capture is
        listed under `rejected` and the capture still replayed."""
        # lazy: MCP server start-up loads no tool's work (+~1 s measured, decision 0902)
        from crossview.replay.whatif import run

        # per path, as the other tools: one refused path is reported beside the replay of the
        # rest (issue 43); every path refused refuses the call, naming each
        _, paths, refused = self.cache.roots.check_each(capture)
        try:
            w = run(paths, lever or [], cache=self.cache.persistent, ranges=True)
        except CrossviewError as e:
            raise Refused("; ".join([str(e), *(f"{p}: {why}" for p, why in refused)])
                          ) from None
        w.rejected = [*((p, [why]) for p, why in refused), *w.rejected]
        doc = w.to_dict()
        return dumps(doc) if detail == "full" else within(doc)

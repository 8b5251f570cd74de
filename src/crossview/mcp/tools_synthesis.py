"""Synthesis tools (issue 5 / issue 7): `inventory` and `synthesize` of an evidence bundle
under a root. Read-only like every tool: nothing is written into the bundle (the CLI
`crossview synthesize` persists findings/synthesis-<ts>.{md,json})."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

from pydantic import Field

from crossview.errors import CrossviewError
from crossview.mcp.cache import AnalysisCache
from crossview.mcp.jsonout import dumps
from crossview.mcp.safety import Refused

BundleArg = Annotated[str, Field(description="Evidence bundle folder under a root (artifacts "
                                 "+ optional bundle.yaml).")]
GpuArg = Annotated[str | None, Field(description="GPU name for captures that name none "
                                     "(ncu details CSV); default: bundle.yaml context.")]


class SynthesisTools:
    def __init__(self, cache: AnalysisCache) -> None:
        self.cache = cache

    def _bundle(self, path: str) -> Path:
        real = self.cache.roots.check(path)
        if not real.is_dir():
            raise Refused(f"{path}: not a bundle folder")
        return real

    def inventory(self, bundle: BundleArg, gpu: GpuArg = None) -> str:
        """Every artifact of a bundle: detected kind, capture validation (each problem with
        the fix for the capture), the rigor tier it supplies (L1–L4), the bundle Context
        with unknown fields named, and the valid distinct sources."""
        from crossview.synthesis import bundle_context

        root = self._bundle(bundle)
        try:
            inv = bundle_context.take_inventory(root, gpu)
        except CrossviewError as e:
            raise Refused(str(e)) from None
        return dumps({"bundle": str(root), **inv.to_dict()})

    def synthesize(self, bundle: BundleArg, gpu: GpuArg = None) -> str:
        """Cross-view synthesis as `crossview synthesize`: sources, reconciliation per
        family/phase and per kernel identity, contradictions, the ranked lever ledger (every
        row cites bundle artifacts; DRAFT until an A/B), experiment plans and the next-lever
        frontier. Refused (tool error) with fewer than two valid, distinct sources.
        Read-only: run the CLI to write findings/synthesis-<ts>.{md,json}."""
        from crossview.render import synthesis_md
        from crossview.synthesis import synthesize as syn_mod

        root = self._bundle(bundle)
        try:
            syn = syn_mod.run(root, gpu)
        except CrossviewError as e:
            raise Refused(str(e)) from None
        return dumps({"persisted": False, **syn.to_dict(),
                      "markdown": synthesis_md.render(syn)})

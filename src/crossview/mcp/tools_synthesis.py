"""Synthesis tools (issue 5 / issue 7): `inventory` and `synthesize` of an evidence bundle
under a root. Read-only like every tool: nothing is written into the bundle (the CLI
`crossview synthesize` persists findings/synthesis-<ts>.{md,json})."""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field

from crossview.errors import CrossviewError
from crossview.mcp.cache import AnalysisCache
from crossview.mcp.compact import Detail, clip, compact, fit
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
        if not real.exists():
            raise Refused(f"{path}: no such folder")
        if not real.is_dir():
            raise Refused(f"{path}: not a bundle folder")
        return real

    def inventory(self, bundle: BundleArg, gpu: GpuArg = None,
                  detail: Detail = "summary") -> str:
        """Every artifact of a bundle: detected kind, capture validation (each problem with
        the fix for the capture), the rigor tier it supplies (L1–L4), the bundle Context
        with unknown fields named, and the valid distinct sources."""
        # lazy: MCP server start-up loads no tool's work (+~1 s measured, decision 0902)
        from crossview.synthesis import bundle_context

        root = self._bundle(bundle)
        try:
            inv = bundle_context.take_inventory(root, gpu)
        except CrossviewError as e:
            raise Refused(str(e)) from None
        d = {"bundle": str(root), **inv.to_dict()}
        if detail == "full":
            return dumps(compact(d))
        keep = ("path", "kind", "source", "tier", "valid", "phase", "holds", "capture_problems")
        # a reader's doubt stays in the summary: an agent sees no stderr line
        arts = [{**{k: a.get(k) for k in keep},
                 **({"warnings": a["warnings"]} if a.get("warnings") else {})}
                for a in d.get("artifacts") or []]
        return fit([lambda: {**d, "artifacts": arts},
                    lambda: {"bundle": d["bundle"], "sources": d.get("sources"),
                             "unknown_context": d.get("unknown_context"), "artifacts": arts}])

    def synthesize(self, bundle: BundleArg, gpu: GpuArg = None,
                   format: Annotated[Literal["json", "md"], Field(
                       description="json (default); md: the synthesis Markdown a human "
                       "reads, as `crossview synthesize` writes it.")] = "json",
                   detail: Detail = "summary") -> str:
        """Cross-view synthesis as `crossview synthesize`: sources, reconciliation per
        family/phase and per kernel identity, contradictions, the ranked lever ledger (every
        row cites bundle artifacts; DRAFT until an A/B), experiment plans and the next-lever
        frontier. Refused (tool error) with fewer than two valid, distinct sources.
        Read-only: run the CLI to write findings/synthesis-<ts>.{md,json}."""
        # lazy: MCP server start-up loads no tool's work (+~1 s measured, decision 0902)
        from crossview.render import synthesis_md
        from crossview.synthesis import synthesize as syn_mod

        root = self._bundle(bundle)
        try:
            syn = syn_mod.run(root, gpu)
        except CrossviewError as e:
            raise Refused(str(e)) from None
        if format == "md":
            return dumps({"persisted": False, "markdown": synthesis_md.render(syn)})
        d = syn.to_dict()
        if detail == "full":
            return dumps(compact({"persisted": False, **d}))
        return fit([partial(_summary, d, n, c) for n, c in ((10, 300), (5, 200), (3, 120))])


def _summary(d: dict[str, Any], rows: int, chars: int) -> dict[str, Any]:
    """The ledger, plans and frontier by id, lever, effect and record; contradictions by
    title (detail=full for the reconciliation tables and every field)."""
    def pick(items: Any, keys: tuple[str, ...], n: int) -> list[dict[str, Any]]:
        return [{k: clip(x[k], chars) if isinstance(x.get(k), str) else x.get(k)
                 for k in keys} for x in (items or [])[:n]]

    return {"persisted": False, "generated_at": d.get("generated_at"),
            "bundle": d.get("bundle"), "context": d.get("context"),
            "unknown_context": d.get("unknown_context"), "sources": d.get("sources"),
            "contradictions": pick(d.get("contradictions"), ("id", "kind", "title"), rows),
            "ledger": pick(d.get("ledger"), ("id", "rank", "lever", "type",
                                             "expected_effect", "sol_rigor", "confidence",
                                             "actionable", "evidence_artifacts"), rows),
            "ledger_total": len(d.get("ledger") or []),
            "experiments": pick(d.get("experiments"), ("lever_id", "metric", "trials",
                                                       "record"), rows),
            "frontier": pick(d.get("frontier"), ("id", "what", "value", "cost"), rows),
            "warnings": d.get("warnings")}

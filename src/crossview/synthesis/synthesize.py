"""Run the synthesis in order: inventory → refuse or reconcile → contradictions → ledger →
(keep A/B outcomes of earlier runs) → experiments → frontier."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from crossview.errors import CrossviewError
from crossview.synthesis import (
    bundle,
    bundle_context,
    contradictions,
    experiments,
    frontier,
    inventory,
    ledger,
    persist,
    reconcile,
)


class Refused(CrossviewError):
    """Fewer than two valid, distinct sources: not a cross-view."""


@dataclass
class Synthesis:
    inv: inventory.Inventory
    rec: reconcile.Reconciliation
    contradictions: list[contradictions.Contradiction]
    levers: list[ledger.Lever]
    plans: list[experiments.Plan]
    frontier: list[frontier.Candidate]
    wall: str | None
    stamp: str  # UTC timestamp of this run (file names, generated_at)
    kept: list[str]  # lever ids whose VERDICT / tried-null came from an earlier synthesis

    def to_dict(self) -> dict[str, object]:
        inv = self.inv
        return {"generated_at": self.stamp, "bundle": str(inv.bundle.root),
                "context": inv.bundle.context_dict(),
                "unknown_context": inv.bundle.unknowns(),
                "context_sources": dict(sorted(inv.bundle.context_sources.items())),
                "command": ({"argv": inv.bundle.command.argv,
                             "source": inv.bundle.command.source,
                             "profiler_removed": inv.bundle.command.wrapper}
                            if inv.bundle.command else None),
                "sources": {s: {"artifacts": a, "tier": next(
                    e.tier for e in inv.entries if e.path == a[0])}
                    for s, a in inv.sources().items()},
                "inventory": [e.to_dict() for e in inv.entries],
                "reconciliation": self.rec.to_dict(),
                "contradictions": [c.to_dict() for c in self.contradictions],
                "ledger": [lv.to_dict() for lv in self.levers],
                "experiments": [p.to_dict() for p in self.plans],
                "frontier": [c.to_dict() for c in self.frontier], "wall": self.wall,
                "kept_from_earlier": self.kept, "warnings": self.warnings()}

    def save(self, markdown: str) -> tuple[Path, Path]:
        """Write BUNDLE/findings/synthesis-<stamp>.{md,json}: the rendered markdown and this."""
        return persist.write(self.inv.bundle.root, self.stamp, self.to_dict(), markdown)

    def warnings(self) -> list[str]:
        """Everything left out, with why (issue 17: never empty when something was)."""
        inv = self.inv
        out = list(inv.bundle.warnings)
        out += [f"{e.path}: left out — {p.problem}: {p.detail} (fix: {p.fix})"
                for e in inv.entries for p in e.problems]
        out += [f"{f}: left out — not a format crossview reads" for f in inv.other_files
                if f not in inv.bundle.command_files]
        return out


def refusal(inv: inventory.Inventory) -> str | None:
    srcs = inv.sources()
    if len(srcs) > 1:
        return None
    found = "; ".join(f"{s} ({len(a)} file{'s' if len(a) > 1 else ''}: {', '.join(a)})"
                      for s, a in srcs.items()) or "no valid source"
    why = [f"{e.path}: " + ("; ".join(f"{p.problem}: {p.detail}" for p in e.problems)
                            if e.problems else f"{e.source} is valid but corroborates only"
                            " (not a profiler view of the GPU)")
           for e in inv.entries if not (e.valid and e.counts)]
    need = ("two files of one source are one source; add another profiler's capture "
            "(nsys / PyTorch profiler timeline L2, ncu L4, GPU counters L3, sampled stacks L1)")
    return (f"{inv.bundle.root}: cannot synthesize: {len(srcs)} valid distinct source(s), "
            f"2 needed — found {found}"
            + (f"; rejected: {' | '.join(why)}" if why else "") + f"; {need}")


def run(root: Path, gpu: str | None = None, now: datetime | None = None) -> Synthesis:
    inv = bundle_context.take_inventory(root, gpu)
    b = inv.bundle
    why = refusal(inv)
    if why:
        raise Refused(why)
    stamp = (now or datetime.now(UTC)).strftime("%Y%m%dT%H%M%SZ")
    rec = reconcile.build(inv)
    cons = contradictions.find(inv, rec)
    levers = ledger.build(inv, rec)
    kept = persist.keep_outcomes(root, levers, b.warnings)
    ledger_rel = f"{bundle.OUTPUT_DIR}/synthesis-{stamp}.json"
    plans = experiments.plans(b, levers, ledger_rel)
    front, wall = frontier.build(inv, rec, levers, {p.lever_id for p in plans})
    return Synthesis(inv, rec, cons, levers, plans, front, wall, stamp, kept)

"""Next-lever frontier: candidates ranked by value × cost (cost levels in synthesis.yaml), each
with its expected unlock and the test that would prove or refute it. Never empty without a
documented wall."""

from __future__ import annotations

from dataclasses import dataclass

from crossview.knowledge import synthesis as kb
from crossview.knowledge import thresholds
from crossview.synthesis.bundle import phase_words
from crossview.synthesis.inventory import Inventory
from crossview.synthesis.ledger import Lever
from crossview.synthesis.reconcile import Reconciliation

INVENTORY = "inventory"  # the bundle's artifact list (synthesis JSON `inventory`)


@dataclass
class Candidate:
    id: str
    what: str
    type: str  # config | engine-src | kernel | capture
    value: str  # expected unlock: direction and rough size, with its basis
    value_pct: float  # % of its window (0 when unknown: capture candidates)
    cost: int
    test: str  # the experiment or capture that proves or refutes it
    evidence_artifacts: list[str]
    score: float = 0.0
    evidence: str = ""  # what the cited artifacts show (a missing tier: the inventory)

    def to_dict(self) -> dict[str, object]:
        return dict(self.__dict__)


def build(inv: Inventory, rec: Reconciliation, levers: list[Lever],
          planned: set[str]) -> tuple[list[Candidate], str | None]:
    costs = kb.table("costs")
    cfg = kb.table("ledger")
    out: list[Candidate] = []
    for lv in levers:
        if lv.id in planned or lv.confidence != "DRAFT":
            continue
        out.append(Candidate(lv.id, lv.lever, lv.type, lv.expected_effect(),
                             lv.window_share.value, int(costs[lv.type]),
                             f"A/B per the experiment template `{lv.template}`, then "
                             f"`crossview ab --ledger … --lever {lv.id}`",
                             lv.evidence_artifacts))
    tiers = set(inv.tiers())
    short = thresholds.defaults().short_kernel_ns  # the launch-bound cut, one source
    for (phase, art), _win in sorted(rec.phase_totals.items()):
        rows = [k for k in rec.kernels if k.artifact == art]
        n = sum(k.count for k in rows) or 1
        n_short = sum(k.count for k in rows if k.avg.value < short)
        if rows and not rows[0].timeline and 100 * n_short / n >= cfg["launch_min_share_pct"]:
            out.append(Candidate(
                f"cuda-graphs:{phase}", f"CUDA graphs for {_step(phase)}: "
                f"{100 * n_short / n:.0f}% of its {n:,} launches are < {short / 1e3:.0f} µs",
                "config", "unknown size: up to the host gaps between those launches (not "
                "measurable from a summary)", 0.0, int(costs["config"]),
                f"capture an nsys timeline of {phase_words(phase)} (`nsys profile "
                "--trace=cuda,nvtx "
                "--cuda-graph-trace=node`, export SQLite) and re-synthesize: the host gap "
                "column gives the recoverable time", [art]))
    for tier, what, test in (
            ("L3", "workload counters: bytes- vs compute-bound over the run",
             "capture DCGM (DRAM_ACTIVE, PIPE_TENSOR_ACTIVE, SM_ACTIVE) over the benchmark "
             "window with dcgm-exporter or `dcgmi dmon -e 1002,1004,1005`"),
            ("L2", "a traced timeline (durations, host gaps, CUDA graphs)",
             "capture `nsys profile --trace=cuda,nvtx,osrt` of the same run"),
            ("L4", "per-kernel roofline of the hot kernels",
             "capture `ncu --set full -k regex:<top kernel> --launch-count 1` for the top "
             "kernels of the reconciliation table"),
            ("L1", "sampled stacks: CPU-side share and the Python frames behind the launches",
             "record `py-spy record --format raw` (or speedscope) during the benchmark")):
        if tier not in tiers:  # the evidence of an absence is the inventory, not a file
            out.append(Candidate(f"capture:{tier}", f"missing {tier}: {what}", "capture",
                                 "unlocks the levers this tier can see (not sized)", 0.0,
                                 int(costs["capture"]), test, [INVENTORY],
                                 evidence=f"the bundle inventory: {len(inv.entries)} "
                                 f"artifact(s) supply {', '.join(sorted(tiers)) or 'no tier'}"
                                 f"; none supplies {tier}"))
    for c in out:
        c.score = round(c.value_pct / c.cost, 4)
    out.sort(key=lambda c: (-c.score, c.cost, c.type == "capture", c.id))
    wall = None
    if not out:
        wall = ("documented wall: every hot kernel of the bundle is at its roofline and "
                "every tier L1–L4 is present — the remaining levers change the work itself "
                "(precision, batch size, model), outside this bundle")
    return out, wall


def _step(phase: str) -> str:
    """"the decode step", but "the whole capture" (not "the all step") for phase all."""
    return phase_words(phase) if phase == "all" else f"the {phase} step"

"""nccl-collective-bound, cross-rank: a straggler rank makes the others wait in collectives.

Reads the cross-rank analysis (views/distributed/crossrank.py); one claim per straggler rank,
naming the rank, the collective with the largest skew, and what the rank did in the wait
window.
"""

from __future__ import annotations

from crossview.core.claim import Cite, Claim, Count, Cutoff, Facts, FixPart, Ns, Phrasing, Tier
from crossview.detectors.common import crossed, ms, pct
from crossview.detectors.declare import About, Declaration
from crossview.views.views import Views

PATTERN = "nccl-collective-bound"


class Straggler(Facts, frozen=True, kw_only=True):
    rank: int
    path: str
    late: Count
    skewed: Count
    min_skew_ns: Ns
    wait_ns: Ns
    skew_ns: Ns
    median_skew_ns: Ns
    collective: str
    cause: str  # what the rank did in the wait window (views/distributed/straggler_cause.py)
    cause_kind: str
    clock: str
    partial: str  # "" or what is missing (the ranks' list)
    partial_flag: bool


def detect(v: Views) -> list[Claim]:
    job = v.ranks
    # late ranks named by their share of the waiting (detectors/late_ranks.py) own that time
    if job is None or (job.late is not None and job.late.named):
        return []
    out: list[Claim] = []
    # the time the other ranks lost waiting, against one rank's kernel span (ranks run
    # concurrently, so the job's span is one rank's, not the sum)
    spans = sorted(r.span_ns for r in job.ranks)
    span = spans[len(spans) // 2] or 1
    partial = job.partial_note()
    for s in job.stragglers:
        share = s.wait_ns / span
        cut = crossed(share, v.limits.nccl_red_share, v.limits.nccl_yellow_share,
                      ("nccl_red_share", "nccl_yellow_share"))
        tier: Tier = cut[0] if cut else "note"
        cutoff: Cutoff | None = cut[1] if cut else None
        path = next(r.path for r in job.ranks if r.rank == s.rank)
        out.append(Claim(
            pattern=PATTERN, form="straggler", share=share, tier=tier, cutoff=cutoff,
            fix=(FixPart(key="nccl-collective-bound-straggler", flags=(s.cause_kind,),
                         subject=f"rank {s.rank} (`{path}`), {s.cause_kind} cause above."),),
            partial=bool(job.partial),
            cites=tuple(Cite(artifact=r.path, read="rank-collectives",
                             fill=(("rank", str(r.rank)),)) for r in job.ranks),
            facts=Straggler(rank=s.rank, path=path, late=s.late, skewed=s.skewed,
                            min_skew_ns=v.limits.straggler_min_skew_ns, wait_ns=s.wait_ns,
                            skew_ns=s.skew_ns, median_skew_ns=s.median_skew_ns,
                            collective=s.collective, cause=s.cause, cause_kind=s.cause_kind,
                            clock=job.clock_note, partial=partial or "",
                            partial_flag=bool(job.partial))))
    return out


def phrase(c: Claim) -> Phrasing:
    f = c.facts
    assert isinstance(f, Straggler)
    obs = (f"Rank {f.rank} arrives last at {f.late:,} of {f.skewed:,} skewed collectives "
           f"(start spread ≥ {ms(f.min_skew_ns)}); the others wait "
           f"{ms(f.wait_ns)} in all ({pct(c.share)} of a rank's kernel span), worst "
           f"{ms(f.skew_ns)} at {f.collective}, median {ms(f.median_skew_ns)}. "
           f"Cause: {f.cause}. Clock: {f.clock}."
           + (f" Straggler analysis is {f.partial}." if f.partial else ""))
    return Phrasing(
        title=f"Straggler: rank {f.rank} is last into {f.late:,} of {f.skewed:,} skewed "
              f"collectives, up to {ms(f.skew_ns)} late ({f.collective})",
        observation=obs,
        effect=f"Removing rank {f.rank}'s lateness returns up to "
               f"{ms(f.wait_ns)} of collective wait to every other rank.",
        details={"rank": f.rank, "collective": f.collective, "skew_ns": f.skew_ns,
                 "median_skew_ns": f.median_skew_ns, "wait_ns": f.wait_ns,
                 "cause_kind": f.cause_kind, "partial": f.partial_flag})


DECLARATION = Declaration(
    patterns=("nccl-collective-bound",), detect=detect, phrase=phrase, causes=(),
    thresholds=("nccl_red_share", "nccl_yellow_share", "straggler_min_skew_ns"),
    fix_keys=("nccl-collective-bound-straggler",), about=About(side="communication"))

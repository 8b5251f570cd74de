"""nccl-collective-bound, cross-rank: a straggler rank makes the others wait in collectives.

Reads the cross-rank analysis (views/distributed/crossrank.py); one finding per straggler
rank, naming the rank, the collective with the largest skew, and what the rank did in the
wait window.
"""

from __future__ import annotations

from crossview.core.finding import Evidence, Finding
from crossview.detectors.common import ms, pct, severity
from crossview.detectors.declare import Declaration
from crossview.knowledge.fixes import fix_for
from crossview.views.views import Views

PATTERN = "nccl-collective-bound"


def detect(v: Views) -> list[Finding]:
    job = v.ranks
    # late ranks named by their share of the waiting (detectors/late_ranks.py) own that time
    if job is None or (job.late is not None and job.late.named):
        return []
    out: list[Finding] = []
    # the time the other ranks lost waiting, against one rank's kernel span (ranks run
    # concurrently, so the job's span is one rank's, not the sum)
    spans = sorted(r.span_ns for r in job.ranks)
    span = spans[len(spans) // 2] or 1
    partial = job.partial_note()
    for s in job.stragglers:
        share = s.wait_ns / span
        sev = severity(share, v.limits.nccl_red_share, v.limits.nccl_yellow_share) or "info"
        path = next(r.path for r in job.ranks if r.rank == s.rank)
        obs = (f"Rank {s.rank} arrives last at {s.late:,} of {s.skewed:,} skewed collectives "
               f"(start spread ≥ {ms(v.limits.straggler_min_skew_ns)}); the others wait "
               f"{ms(s.wait_ns)} in all ({pct(share)} of a rank's kernel span), worst "
               f"{ms(s.skew_ns)} at {s.collective}, median {ms(s.median_skew_ns)}. "
               f"Cause: {s.cause}. Clock: {job.clock_note}."
               + (f" Straggler analysis is {partial}." if partial else ""))
        where = f"rank {s.rank} (`{path}`), {s.cause_kind} cause above."
        out.append(Finding(
            pattern=PATTERN, severity=sev,
            title=f"Straggler: rank {s.rank} is last into {s.late:,} of {s.skewed:,} skewed "
                  f"collectives, up to {ms(s.skew_ns)} late ({s.collective})",
            observation=obs,
            fix=fix_for("nccl-collective-bound-straggler", s.cause_kind, where),
            share=share,
            evidence=[Evidence(r.path, f"rank {r.rank}: communication kernels in order per "
                               "(process group or stream, collective type); start/end per rank")
                      for r in job.ranks],
            confidence="DRAFT" if not partial else "DRAFT (partial: ranks missing)",
            expected_effect=f"Removing rank {s.rank}'s lateness returns up to "
                            f"{ms(s.wait_ns)} of collective wait to every other rank.",
            details={"rank": s.rank, "collective": s.collective, "skew_ns": s.skew_ns,
                     "median_skew_ns": s.median_skew_ns, "wait_ns": s.wait_ns,
                     "cause_kind": s.cause_kind, "partial": job.partial},
        ))
    return out


DECLARATION = Declaration(
    patterns=("nccl-collective-bound",), detect=detect, causes=(),
    thresholds=("nccl_red_share", "nccl_yellow_share", "straggler_min_skew_ns"),
    fix_keys=("nccl-collective-bound-straggler",))

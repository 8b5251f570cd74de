"""Markdown for multi-rank jobs: a per-rank table and the straggler line. Formats only."""

from __future__ import annotations

from crossview.units import duration
from crossview.views.views import Views

MAX_ROWS = 16  # a table of thousands of ranks is unreadable: the extremes are shown


def section(v: Views) -> list[str]:
    job = v.ranks
    if job is None:
        return []
    out = [f"\n**Ranks** ({len(job.ranks)} analyzed"
           + (f" of {job.expected}" if job.expected else "")
           + f"; clock: {job.clock} — {job.clock_note})\n",
           "| rank | GPU busy | GPU idle | comm time | exposed comm | overlapped | collectives |",
           "|---:|---:|---:|---:|---:|---:|---:|"]
    rows = sorted(job.ranks, key=lambda r: r.kernel_busy_pct)
    if len(rows) > MAX_ROWS:  # the least and the most busy ranks
        rows = rows[: MAX_ROWS // 2] + rows[-MAX_ROWS // 2:]
    for r in sorted(rows, key=lambda r: r.rank):
        out.append(f"| {r.rank} | {r.kernel_busy_pct:.1f}% of {duration(r.span_ns)} | "
                   f"{duration(r.span_ns - r.busy_ns)} | {duration(r.comm_time_ns)} | "
                   f"{duration(r.exposed_comm_ns)} | "
                   f"{duration(r.comm_time_ns - r.exposed_comm_ns)} | {len(r.collectives):,} |")
    skewed = max((c.start_spread_ns for c in job.collectives), default=0)
    ends = max((c.end_spread_ns for c in job.collectives), default=0)
    out.append(f"\n{len(job.collectives):,} collectives aligned across ranks (by order per "
               f"process group/stream and type; by sequence number where recorded): largest "
               f"start spread {duration(skewed)}, largest end spread {duration(ends)}.")
    for s in job.stragglers:
        out.append(f"**Straggler: rank {s.rank}** — last to arrive at {s.late:,} of {s.skewed:,} "
                   f"skewed collectives, worst {duration(s.skew_ns)} at {s.collective} "
                   f"(median {duration(s.median_skew_ns)}); cause: {s.cause}.")
    if not job.stragglers:
        out.append("No straggler: no rank arrives last at most skewed collectives.")
    if job.partial:
        out.append(f"⚠️ Straggler analysis is {job.partial_note()}.")
    out.extend(f"Note: {n}." for n in job.notes)
    return out

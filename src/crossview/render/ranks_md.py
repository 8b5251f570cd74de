"""Markdown for multi-rank jobs: a per-rank table (communication split into waiting for a
peer and transfer), the late ranks by share, the busbw of the transfer part, the cross-rank
critical path and the majority-vote straggler. Formats only."""

from __future__ import annotations

from crossview.units import bandwidth, duration
from crossview.views.distributed.crossrank import RankAnalysis
from crossview.views.distributed.rank_path import CriticalPath
from crossview.views.views import Views

MAX_ROWS = 16  # a table of thousands of ranks is unreadable: the extremes are shown
LATE_SHOWN = 4  # late ranks named in the line after the named ones
PATH_CAUSES = 3
CHAIN = 8


def section(v: Views) -> list[str]:
    return table_lines(v) + text_lines(v)


def table_lines(v: Views) -> list[str]:
    """The ranks' heading and per-rank table (an HTML page's ranks panel holds its own)."""
    job = v.ranks
    if job is None:
        return []
    out = [f"\n**Ranks** ({len(job.ranks)} analyzed"
           + (f" of {job.expected}" if job.expected else "")
           + f"; clock: {job.clock} — {job.clock_note})\n"]
    return out + _table(job)


def text_lines(v: Views) -> list[str]:
    """What the per-rank table does not say: alignment, late ranks and why, busbw, the
    cross-rank critical path, stragglers."""
    job = v.ranks
    if job is None:
        return []
    out: list[str] = []
    skewed = max((c.start_spread_ns for c in job.collectives), default=0)
    ends = max((c.end_spread_ns for c in job.collectives), default=0)
    summed = f"; the groups waited {duration(job.late.spread_ns)} in all (start spreads " \
        "summed)" if job.late is not None else ""
    out.append(f"\n{len(job.collectives):,} collectives aligned across ranks (by order per "
               f"process group/stream and type; by sequence number where recorded): largest "
               f"start spread {duration(skewed)}, largest end spread {duration(ends)}{summed}.")
    out += _late(job)
    out += _busbw(v)
    out += _path(job)
    if job.late is None or not job.late.named:  # the vote, where no rank is named by share
        for s in job.stragglers:
            out.append(f"**Straggler: rank {s.rank}** — last to arrive at {s.late:,} of "
                       f"{s.skewed:,} skewed collectives, worst {duration(s.skew_ns)} at "
                       f"{s.collective} (median {duration(s.median_skew_ns)}); cause: "
                       f"{s.cause}.")
        if not job.stragglers:
            out.append("No late rank: no rank holds its groups for a tenth of the waiting, and "
                       "none arrives last at most skewed collectives.")
    if job.partial:
        out.append(f"⚠️ Straggler analysis is {job.partial_note()}.")
    out.extend(f"Note: {n}." for n in job.notes)
    return out


def _table(job: RankAnalysis) -> list[str]:
    split = bool(job.comm)
    head = ("| rank | GPU busy | GPU idle | comm time | "
            + ("waiting for a peer | transfer | " if split else "")
            + "exposed comm | collectives | last at | the group waited for it |")
    out = [head, "|" + "---:|" * (head.count("|") - 1)]
    rows = sorted(job.ranks, key=lambda r: r.kernel_busy_pct)
    if len(rows) > MAX_ROWS:  # the least and the most busy ranks
        rows = rows[: MAX_ROWS // 2] + rows[-MAX_ROWS // 2:]
    late = {x.rank: x for x in job.late.ranks} if job.late is not None else {}
    for r in sorted(rows, key=lambda r: r.rank):
        c = job.comm.get(r.rank)
        lr = late.get(r.rank)
        mid = (f"{duration(c.wait_ns)} | {duration(c.transfer_ns)} | " if c is not None
               else "– | – | ") if split else ""
        out.append(f"| {r.rank} | {r.kernel_busy_pct:.1f}% of {duration(r.span_ns)} | "
                   f"{duration(r.span_ns - r.busy_ns)} | {duration(r.comm_time_ns)} | {mid}"
                   f"{duration(r.exposed_comm_ns)} | {len(r.collectives):,} | "
                   + (f"{lr.last:,} | {duration(lr.group_wait_ns)} ({lr.share:.1%}) |"
                      if lr is not None else "0 | – |"))
    return out


def _late(job: RankAnalysis) -> list[str]:
    if job.late is None or not job.late.named:
        return []
    late = job.late
    out = ["**Late ranks** (each collective waits from its first rank's arrival to its last "
           "one's; a rank's share is the waiting it caused as the last one):"]
    for r in late.named:
        why = f" Why — {r.cause.short()}." if r.cause is not None else ""
        out.append(f"- **rank {r.rank}**: {r.share:.1%} of the waiting — last at {r.last:,} "
                   f"of {late.collectives:,} collectives, the others waited "
                   f"{duration(r.group_wait_ns)} for it ({duration(r.exclusive_ns)} for it "
                   f"alone), longest {duration(r.worst_ns)} at {r.worst}.{why}")
    rest = [r for r in late.ranks if not r.named]
    if rest:
        out.append("- others last at least once: " + ", ".join(
            f"rank {r.rank} {r.share:.1%} (last at {r.last:,})" for r in rest[:LATE_SHOWN])
            + (f", {len(rest) - LATE_SHOWN} more" if len(rest) > LATE_SHOWN else "") + ".")
    return out


def _busbw(v: Views) -> list[str]:
    rows = [c for c in v.comm_bandwidth.collectives if c.busbw_transfer_bytes_per_s]
    if not rows:
        return []
    parts = []
    for c in sorted(rows, key=lambda c: -c.time_ns)[:3]:
        of = (f" ({c.pct_of_ceiling_transfer:.0f}% of {c.ceiling})"
              if c.pct_of_ceiling_transfer is not None else "")
        parts.append(f"{c.op} {c.dtype or ''} ×{c.count:,}: "
                     f"{bandwidth(c.busbw_transfer_bytes_per_s or 0)}{of} over the transfer "
                     f"part ({duration(c.transfer_ns or 0)}), "
                     f"{bandwidth(c.busbw_bytes_per_s or 0)} over the whole kernel time")
    return ["Busbw from the transfer part only (after the last rank arrived): "
            + "; ".join(parts) + "."]


def path_line(p: CriticalPath) -> str:
    total = p.ns or 1
    ranks = []
    for rank, ns in p.by_rank()[:4]:
        causes = ", ".join(f"{c} {n / (ns or 1):.1%}" for c, n in p.by_cause(rank)[:PATH_CAUSES])
        ranks.append(f"rank {rank} {ns / total:.1%} ({causes})")
    runs = p.runs()
    chain = ""
    if len(runs) > 1:
        chain = "; in time order: " + " → ".join(
            f"rank {r.rank} {duration(r.end_ns - r.start_ns)}" for r in runs[:CHAIN]) + (
            f" → … {len(runs) - CHAIN} more" if len(runs) > CHAIN else "")
    return "; ".join(ranks) + chain


def _path(job: RankAnalysis) -> list[str]:
    p = job.replayed().critical_path
    if p is None:
        return [f"Cross-rank critical path: {job.critical_path_note}."] \
            if job.critical_path_note else []
    return [f"**Cross-rank critical path** of {p.step} ({duration(p.end_ns - p.start_ns)}: the "
            f"slowest rank's step, rank {p.ends_on}'s; walked back through the ranks' replay "
            f"graphs joined at their collectives, as `crossview whatif` on the folder): "
            f"{path_line(p)}."]


def key_findings(v: Views, pattern_share: float) -> str:
    """The key-findings sentence when late ranks lead the recap."""
    job = v.ranks
    if job is None or job.late is None or not job.late.named:
        return ""
    who = " and ".join(f"rank {r.rank} ({r.share:.0%})" for r in job.late.named)
    p = job.replayed().critical_path
    path = ""
    if p is not None and p.pieces:
        rank, ns = p.by_rank()[0]
        cause, cns = p.by_cause(rank)[0]
        path = (f" The step's cross-rank critical path runs {ns / (p.ns or 1):.0%} on rank "
                f"{rank} ({cause} {cns / (ns or 1):.0%} of it).")
    return (f"Ranks of one job ({len(job.ranks)} analyzed). The dominant pattern is "
            f"**late-ranks**: every collective waits for its last rank, mostly {who}; the "
            f"other ranks' GPUs spin in NCCL kernels {pattern_share:.1%} of the step (their "
            f"GPU busy counts that spinning).{path}")

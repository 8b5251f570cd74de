"""`crossview whatif` on the ranks of one job, as text (formatting only: the numbers come from
replay/rank_whatif.py)."""

from __future__ import annotations

from crossview.replay.rank_whatif import RankWhatIf
from crossview.units import duration
from crossview.views.distributed.rank_path import CriticalPath

PATH_RANKS = 4  # ranks shown under "now bounded by"
PATH_CAUSES = 3  # causes shown per rank
CHAIN = 8  # runs of the chain shown


def _delta(a: float, b: float) -> str:
    d = b - a
    sign = "+" if d >= 0 else "−"
    return f"{sign}{duration(abs(d))}" + (f", {sign}{abs(d) / a:.1%}" if a else "")


def path_lines(p: CriticalPath, indent: str = "  ") -> list[str]:
    """The critical path by rank (its causes) and the chain of ranks it runs through."""
    total = p.ns or 1
    out = []
    for rank, ns in p.by_rank()[:PATH_RANKS]:
        causes = ", ".join(f"{c} {duration(n)}" for c, n in p.by_cause(rank)[:PATH_CAUSES])
        out.append(f"{indent}rank {rank}: {duration(ns)} ({ns / total:.1%}) — {causes}")
    runs = p.runs()
    if len(runs) > 1:
        shown = ", ".join(f"rank {r.rank} {duration(r.end_ns - r.start_ns)}"
                          for r in runs[:CHAIN])
        more = f", … {len(runs) - CHAIN} more" if len(runs) > CHAIN else ""
        out.append(f"{indent}chain (in time order): {shown}{more}")
    return out


def render(w: RankWhatIf) -> str:
    levers = ", ".join(w.levers) or "none (baseline)"
    lines = [f"whatif {w.capture} — {len(w.ranks)} ranks of one job (ranks "
             f"{', '.join(map(str, w.ranks))}) — levers: {levers}"]
    lines += [f"  {c}" for c in w.changes]
    lines.append(f"clock: {w.clock_note}")
    errs = ", ".join(f"rank {r} {e:.2%}" for r, e in sorted(w.rank_errors.items()))
    lines.append(f"self-check: the unchanged replay of the ranks' joined graph reproduces every "
                 f"rank's measured steps within {w.selfcheck_max_error:.2%} (limit "
                 f"{w.selfcheck_limit:.0%}; {errs}); {w.nodes_moved:,} of {w.nodes:,} graph "
                 "nodes off their measured start")
    if not w.selfcheck_ok:
        lines.append("prediction withheld: the self-check failed, so the joined graph does not "
                     "model these ranks well enough to trust a predicted number")
        return "\n".join(lines + [f"note: {x}" for x in w.notes]) + "\n"
    m = w.medians()
    meas, pred = m["measured_step_ns"], m["predicted_step_ns"]
    b = w.baseline[len(w.baseline) // 2] if w.baseline else None
    p = sorted(w.predicted, key=lambda s: s.ns)[len(w.predicted) // 2] if w.predicted else None
    name = b.name if b else "?"
    ends = (f"; the slowest rank is now rank {p.ends_on} (measured: rank {b.ends_on})"
            if p and b and p.ends_on != b.ends_on else
            f"; the slowest rank is rank {b.ends_on}" if b else "")
    lines.append(f"job step ({name}: the slowest rank's step, which every rank waits for; "
                 f"median of {int(m['steps'])}): measured {duration(meas)} → "
                 f"predicted {duration(pred)} ({_delta(meas, pred)}){ends}")
    base, after = w.per_rank(w.baseline), w.per_rank(w.predicted)
    lines.append("per rank (its step; its collectives' wait for the last rank / transfer):")
    for r in sorted(base):
        b0, p0 = base[r][len(base[r]) // 2], after.get(r, base[r])[len(base[r]) // 2]
        lines.append(f"  rank {r}: {duration(b0.measured_ns)} → {duration(p0.predicted_ns)}; "
                     f"wait {duration(b0.wait_ns)} → {duration(p0.wait_ns)}, transfer "
                     f"{duration(b0.transfer_ns)} → {duration(p0.transfer_ns)}")
    if w.path is not None:
        lines.append(f"now bounded by (cross-rank critical path of {w.path.step}, the median "
                     f"predicted job step, {duration(w.path.ns)}):")
        lines += path_lines(w.path)
    lines += [f"note: {x}" for x in w.notes]
    return "\n".join(lines) + "\n"

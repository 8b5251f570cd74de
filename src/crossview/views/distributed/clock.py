"""One clock for the ranks of a job, from the ends of their collectives.

A collective completes on all of its ranks together (nobody leaves an all-reduce before the
last rank has contributed), so on one clock its ends coincide within a few µs whatever the
ranks' arrival order. Per rank, the difference d_c = end on the reference rank − end on this
rank over the collectives they share is its clock offset plus that end jitter:

- d_c all within `shared_tolerance_ns` (knowledge/ranks.yaml) of their median: the median is
  the offset, applied when it exceeds the tolerance (a rank on another node, or a clock that
  drifted: "collective-ends") — on overlapping kernel spans only when at least
  `min_shared_to_shift` collectives agree on it — else the ranks share a clock as recorded;
- ends that do not agree with any one offset (a trace edited, or a clock that jumped): on
  overlapping kernel spans the recorded clock is kept, else the rank is aligned at the end of
  its first collective shared with the reference ("first-collective-end", decision 0055);
  the disagreement is the stated error;
- no collective shared with an aligned rank: kernel spans overlapping keep the clock, else the
  first kernels are aligned (no error known).

The error of each offset is the largest |d_c − offset| over the shared collectives: how far
one collective's ends still disagree once aligned. A pure function of per-rank summaries.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field

from crossview.knowledge.loader import load_typed
from crossview.units import duration
from crossview.views.distributed.ranks import RankSummary

GLOBAL, ENDS, FIRST_END = "global", "collective-ends", "first-collective-end"


@dataclass
class Clock:
    kind: str  # global | collective-ends | first-collective-end
    note: str
    offsets_ns: dict[int, int]  # rank → add to the rank's timestamps for the common clock
    errors_ns: dict[int, int | None]  # rank → max |end disagreement| once aligned (None: unknown)
    how: dict[int, str] = field(default_factory=dict)  # rank → how its offset was found


def _ends(r: RankSummary) -> dict[tuple[str, str, int], int]:
    by_seq = all(c.seq is not None for c in r.collectives)
    return {(c.group, c.op, c.seq if by_seq and c.seq is not None else c.index): c.end_ns
            for c in r.collectives}


def align(ranks: list[RankSummary]) -> Clock:
    """Offsets of every rank onto the lowest rank's clock (ranks sorted by rank)."""
    p = load_typed("ranks.yaml").clock
    tol = p.shared_tolerance_ns
    shared = max(r.first_ns for r in ranks) < min(r.last_ns for r in ranks)
    ref = ranks[0]
    ends = {r.rank: _ends(r) for r in ranks}
    offsets: dict[int, int] = {ref.rank: 0}
    errors: dict[int, int | None] = {ref.rank: 0}
    how: dict[int, str] = {ref.rank: "reference"}
    todo = list(ranks[1:])
    while todo:
        progressed = False
        for r in list(todo):
            # the collectives this rank shares with an aligned one, on the aligned one's clock
            base = next((a for a in offsets if set(ends[a]) & set(ends[r.rank])), None)
            if base is None:
                continue
            keys = sorted(set(ends[base]) & set(ends[r.rank]),
                          key=lambda k: ends[r.rank][k])
            d = [ends[base][k] + offsets[base] - ends[r.rank][k] for k in keys]
            med = int(statistics.median(d))
            spread = max(abs(x - med) for x in d)
            if spread <= tol and (not shared or (abs(med) > tol
                                                 and len(d) >= p.min_shared_to_shift)):
                offsets[r.rank], how[r.rank] = med, ENDS
            elif spread <= tol or shared:
                offsets[r.rank], how[r.rank] = 0, GLOBAL
            else:  # no one offset fits: the first shared collective's end (decision 0055)
                offsets[r.rank], how[r.rank] = d[0], FIRST_END
            errors[r.rank] = max(abs(x - offsets[r.rank]) for x in d)
            todo.remove(r)
            progressed = True
        if not progressed:
            break
    for r in todo:  # shares no collective with any aligned rank
        offsets[r.rank] = 0 if shared else ref.first_ns - r.first_ns
        errors[r.rank] = None
        how[r.rank] = GLOBAL if shared else "first kernel"
    kind = (FIRST_END if FIRST_END in how.values() or "first kernel" in how.values()
            else ENDS if ENDS in how.values() else GLOBAL)
    return Clock(kind, _note(kind, ref.rank, offsets, errors, how, shared), offsets, errors,
                 how)


def _note(kind: str, ref: int, offsets: dict[int, int], errors: dict[int, int | None],
          how: dict[int, str], shared: bool) -> str:
    known = [e for e in errors.values() if e is not None]
    worst = max(known, default=0)
    if kind == GLOBAL:
        lead = ("ranks' timestamps used as one clock (their kernel spans overlap: same node "
                "or synchronized clocks)" if shared else "ranks' timestamps used as one clock")
        bad = [r for r, e in errors.items() if e is not None and how[r] == GLOBAL and r != ref
               and e > load_typed("ranks.yaml").clock.shared_tolerance_ns]
        if bad:
            return (lead + f"; collective ends disagree by up to {duration(worst)} (ranks "
                    + ", ".join(map(str, bad)) + ") with no single offset that fits them — "
                    "kept as recorded")
        return lead + f"; the collectives' ends agree within {duration(worst)}"
    moved = [r for r in sorted(offsets) if offsets[r] and r != ref]
    parts = [f"rank {r} {_signed(offsets[r])}"
             + (f" (± {duration(errors[r] or 0)})" if errors[r] is not None else
                " (first kernels aligned: no shared collective, error unknown)")
             for r in moved]
    why = ("the collectives' ends agree once shifted" if kind == ENDS else
           "the end of the first collective shared with an aligned rank (the ends do not "
           "agree on one offset)")
    return (f"ranks aligned on rank {ref}'s clock from {why}: "
            + ("; ".join(parts) if parts else "no shift needed")
            + f"; largest end disagreement once aligned {duration(worst)}")


def _signed(ns: int) -> str:
    return ("+" if ns >= 0 else "−") + duration(abs(ns))

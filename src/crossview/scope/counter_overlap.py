"""Which metric samples fall inside the trace window, when both clocks are known.

The trace window is --window mapped to wall clock, else each clocked trace's own event span.
One line per (metric artifact, trace): samples inside / all of that artifact, and their span —
the evidence that a counter mean describes the traced steps and not the whole run.
"""

from __future__ import annotations

from pathlib import Path

from crossview.scope.trace_clock import TraceClock, span_text, trace_clocks
from crossview.store.store import Store


def _windows(store: Store, paths: list[str], mapped: tuple[int, int, TraceClock] | None
             ) -> list[tuple[str, int, int]]:
    if mapped is not None:
        return [(f"--window of {mapped[2].name}", mapped[0], mapped[1])]
    return [(f"trace {c.name}", *c.epoch_span()) for c in trace_clocks(store, paths)]


def overlap_notes(store: Store, paths: list[str], ids: list[int],
                  mapped: tuple[int, int, TraceClock] | None) -> list[str]:
    """Lines for the metrics-first block: the selected artifacts (ids) that hold metrics."""
    out: list[str] = []
    rows = store.sql("SELECT f.artifact_id, a.path, count(*) FROM metrics f JOIN artifacts a"
                     " USING (artifact_id) WHERE f.ts_ns IS NOT NULL AND f.artifact_id IN"
                     " (SELECT unnest($ids)) GROUP BY 1, 2 ORDER BY 2", {"ids": ids}).fetchall()
    if not rows:  # no timed metric sample: no trace span to read (a scan of every op)
        return out
    windows = _windows(store, paths, mapped)
    if not windows:
        return out
    for aid, path, total in rows:
        for label, a, b in windows:
            n, lo, hi = store.sql(
                "SELECT count(*), min(ts_ns), max(ts_ns) FROM metrics WHERE artifact_id = $i"
                " AND ts_ns >= $a AND ts_ns < $b", {"i": aid, "a": a, "b": b}).fetchall()[0]
            head = f"{Path(str(path)).name}: {int(n):,} of {int(total):,} metric samples"
            if n:
                out.append(f"{head} fall inside the {label}, {span_text(a, b)}; they span "
                           f"{span_text(int(lo), int(hi))}")
            else:
                out.append(f"{head} fall inside the {label}, {span_text(a, b)}: "
                           "the counters do not describe the traced steps")
    return out

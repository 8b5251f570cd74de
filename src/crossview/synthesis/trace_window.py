"""Inventory check of a metrics series against the traces' own wall-clock spans.

When some trace of the bundle has a known wall-clock base (scope/trace_clock.py), a metrics
series is judged against the traced steps themselves instead of bundle.yaml's capture window:
no sample within any trace's span (± trace_window_slack_s) → `outside-window`; a series that
meets a trace but does not cover its whole span → a note (counter means then describe only
part of the traced steps).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from crossview.knowledge import synthesis as kb
from crossview.scope.trace_clock import TraceClock, span_text, trace_clocks
from crossview.store.store import Store


@dataclass
class WindowCheck:
    checked: bool  # False: no trace with a known clock — fall back to bundle.yaml
    outside: str | None = None  # the problem detail when no trace is met
    notes: list[str] = field(default_factory=list)


def _inside(store: Store, aid: int, a: int, b: int) -> int:
    return int(store.sql("SELECT count(*) FROM metric_samples WHERE artifact_id = $i"
                         " AND ts_ns >= $a AND ts_ns <= $b",
                         {"i": aid, "a": a, "b": b}).fetchall()[0][0])


def _partial(c: TraceClock, lo: int, hi: int, period: int) -> str | None:
    """A note when the series starts or ends inside the trace by more than one sample period
    (a sampler at that period cannot have seen the traced steps it missed)."""
    a, b = c.epoch_span()
    if lo <= a + period and hi >= b - period:
        return None
    return (f"samples {span_text(lo, hi)} cover only part of the wall-clock span of "
            f"{c.name}, {span_text(a, b)}: counter means describe part of the traced steps")


def check(store: Store, aid: int, lo: int, hi: int) -> WindowCheck:
    clocks = trace_clocks(store)
    if not clocks:
        return WindowCheck(False)
    slack = int(float(kb.table("trace_window_slack_s")) * 1e9)
    out = WindowCheck(True)
    met = []
    for c in clocks:
        a, b = c.epoch_span()
        if _inside(store, aid, a - slack, b + slack):
            met.append(c)
    if not met:
        spans = "; ".join(f"{c.name} {span_text(*c.epoch_span())}" for c in clocks)
        out.outside = (f"samples span {span_text(lo, hi)}, none within "
                       f"{kb.table('trace_window_slack_s')} s of the traced steps: {spans}")
        return out
    ticks = int(store.sql("SELECT count(DISTINCT ts_ns) FROM metric_samples"
                          " WHERE artifact_id = $i", {"i": aid}).fetchall()[0][0])
    period = (hi - lo) // max(ticks - 1, 1)
    out.notes = [n for c in met if (n := _partial(c, lo, hi, period))]
    return out

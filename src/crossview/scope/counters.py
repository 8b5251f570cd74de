"""The same resolved Filter applied to time-series metrics: the `f_metrics` view.

artifact → only those artifacts; device → that GPU's counters (engine-level serving metrics,
which belong to no GPU, stay); window → when a selected trace's wall-clock base is known
(scope/trace_clock.py) the window is mapped to epoch and metrics are scoped to it; otherwise
samples inside it, but only when some timed sample falls inside: trace clocks are often not
wall-clock epoch (monotonic µs), so a window that misses every metric sample keeps the whole
metric capture and says so instead of emptying it.
"""

from __future__ import annotations

from crossview.scope.counter_overlap import overlap_notes
from crossview.scope.filter import ResolvedFilter
from crossview.scope.trace_clock import span_text, unknown_clock_traces, window_epoch
from crossview.store.store import Store


def resolve_metrics(store: Store, resolved: ResolvedFilter) -> list[str]:
    """Create f_metrics (and f_trials) for the filter; return notes on what was applied."""
    notes: list[str] = []
    ids = [a for a, in store.sql(
        "SELECT artifact_id FROM artifacts WHERE status = 'ok' AND path IN (SELECT unnest($p))",
        {"p": list(resolved.artifacts)}).fetchall()]
    id_list = ",".join(str(int(i)) for i in ids) or "NULL"
    where = [f"artifact_id IN ({id_list})"]
    req = resolved.requested
    if req.device is not None:
        where.append(f"(device = {int(req.device)} OR device IS NULL)")
    mapped = None
    if req.window_ns is not None:
        mapped = window_epoch(store, list(resolved.artifacts),
                              (int(req.window_ns[0]), int(req.window_ns[1])))
    if mapped is not None:
        # both clocks known: the window is a wall-clock span, scope to it even when empty
        ea, eb, clock = mapped
        where.append(f"(ts_ns IS NULL OR (ts_ns >= {int(ea)} AND ts_ns < {int(eb)}))")
        notes.append(f"--window mapped to wall clock via the clock base of {clock.name}: "
                     f"metrics scoped to {span_text(ea, eb)}")
    elif req.window_ns is not None:
        a, b = (int(x) for x in req.window_ns)
        inside = store.sql(
            f"SELECT count(*) FROM metrics WHERE {' AND '.join(where)} AND ts_ns >= {a}"
            f" AND ts_ns < {b}").fetchall()[0][0]
        if inside:
            where.append(f"(ts_ns IS NULL OR (ts_ns >= {a} AND ts_ns < {b}))")
        elif store.sql(f"SELECT count(*) FROM metrics WHERE {' AND '.join(where)}"
                       ).fetchall()[0][0]:
            unknown = unknown_clock_traces(store, list(resolved.artifacts))
            why = (f"; {', '.join(unknown)} carries no wall-clock base (baseTimeNanoseconds)"
                   if unknown else "")
            notes.append("no metric sample falls inside --window (metric clocks are wall-clock; "
                         f"the trace clock may not be{why}): metrics cover their whole capture")
    store.sql("DROP VIEW IF EXISTS f_metrics")
    store.sql(f"CREATE TEMP VIEW f_metrics AS SELECT * FROM metrics WHERE {' AND '.join(where)}")
    notes.extend(overlap_notes(store, list(resolved.artifacts), [int(i) for i in ids], mapped))
    store.sql("DROP VIEW IF EXISTS f_trials")
    store.sql(f"CREATE TEMP VIEW f_trials AS SELECT * FROM trials WHERE artifact_id IN ({id_list})")
    return notes

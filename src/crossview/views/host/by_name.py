"""Host events (every kind: ops, runtime calls, Python frames, annotations) summed by name:
what `crossview diff` compares per frame, and what tells a bundle which engine's code ran.

Read from the host events directly, not `host_op_tree`: these sums need no parent, and the
view's parent join doubles their time (hta_v100_ddp_training: 25 → 54 ms per side)."""

from __future__ import annotations

from collections.abc import Sequence

from crossview.store.store import Store


def self_time_in(store: Store, spans: Sequence[tuple[int, int]]) -> list[tuple[str, int]]:
    """(name, host self ns) of the filter's host events that start inside one of `spans`
    ([start, end) on the trace clock), events with self time only."""
    if not spans:
        return []
    values = ", ".join(f"({int(s)}, {int(e)})" for s, e in spans)
    return [(str(n), int(t)) for n, t in store.sql(
        f"WITH w(s, e) AS (VALUES {values}) SELECT h.name, sum(h.self_ns) FROM f_host h "
        "JOIN w ON h.start_ns >= w.s AND h.start_ns < w.e WHERE h.self_ns > 0 "
        "GROUP BY h.name").fetchall()]


def matching_per_file(store: Store, pattern: str) -> list[tuple[str, int]]:
    """(file path, host events whose name matches the regex `pattern`), every file of the
    store, by path."""
    return [(str(p), int(n)) for p, n in store.sql(
        "SELECT a.path, count(*) FROM host_ops h JOIN artifacts a USING (artifact_id)"
        " WHERE regexp_matches(h.name, $rx) GROUP BY 1 ORDER BY 1", {"rx": pattern}).fetchall()]

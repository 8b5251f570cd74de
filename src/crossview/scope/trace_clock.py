"""One clock for traces and metrics: a trace's own ns mapped to UTC epoch ns.

A trace artifact with a known wall-clock base (artifacts.clock_epoch_ns: Kineto
baseTimeNanoseconds, nsys session start, or 0 when the trace clock already is epoch) maps any
trace time t to t + base; metric samples (metrics.ts_ns) are epoch ns already.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from crossview.store.store import Store
from crossview.units import duration


@dataclass(frozen=True)
class TraceClock:
    artifact_id: int
    path: str
    base_ns: int  # epoch ns of trace time 0
    start_ns: int  # first event, trace ns
    end_ns: int  # last event end, trace ns

    @property
    def name(self) -> str:
        return Path(self.path).name

    def epoch_span(self) -> tuple[int, int]:
        return self.start_ns + self.base_ns, self.end_ns + self.base_ns


def utc(ns: int) -> str:
    """ISO UTC text of epoch ns, to the millisecond (…Z)."""
    text = datetime.fromtimestamp(ns / 1e9, UTC).isoformat(timespec="milliseconds")
    return text.replace("+00:00", "Z")


def span_text(a: int, b: int) -> str:
    return f"{utc(a)} … {utc(b)} ({duration(b - a)})"


_SPANS = """
    SELECT a.artifact_id, a.path, a.clock_epoch_ns, min(o.s), max(o.e)
    FROM artifacts a JOIN (
        SELECT artifact_id, start_ns AS s, start_ns + dur_ns AS e FROM gpu_ops
        UNION ALL SELECT artifact_id, start_ns, start_ns + dur_ns FROM host_ops) o
      USING (artifact_id)
    WHERE a.status = 'ok' __WHERE__
    GROUP BY 1, 2, 3 ORDER BY 2
"""


def _traces(store: Store, paths: Sequence[str] | None, known: bool) -> list[tuple]:
    where = "AND a.clock_epoch_ns IS NOT NULL" if known else "AND a.clock_epoch_ns IS NULL"
    params: dict[str, object] = {}
    if paths is not None:
        where += " AND a.path IN (SELECT unnest($p))"
        params["p"] = list(paths)
    return store.sql(_SPANS.replace("__WHERE__", where), params).fetchall()


def trace_clocks(store: Store, paths: Sequence[str] | None = None) -> list[TraceClock]:
    """Trace artifacts (timed host/GPU events) whose wall-clock base is known."""
    return [TraceClock(int(i), str(p), int(b), int(s), int(e))
            for i, p, b, s, e in _traces(store, paths, True)]


def unknown_clock_traces(store: Store, paths: Sequence[str] | None = None) -> list[str]:
    """Names of the trace artifacts whose clock cannot be put on the wall clock."""
    return [Path(str(p)).name for _i, p, *_ in _traces(store, paths, False)]


def window_epoch(store: Store, paths: Sequence[str], window_ns: tuple[int, int]
                 ) -> tuple[int, int, TraceClock] | None:
    """The trace-ns window as epoch ns, or None when no trace base (or several differing
    ones: the window cannot belong to all of them) is known among the selected traces."""
    clocks = trace_clocks(store, paths)
    if not clocks or len({c.base_ns for c in clocks}) != 1:
        return None
    base = clocks[0].base_ns
    return window_ns[0] + base, window_ns[1] + base, clocks[0]

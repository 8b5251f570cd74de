"""What the longest blocking host calls waited for (a sync-bound finding's "why").

A blocking call (a copy to pageable memory, a stream sync) returns when the GPU op it launched
has run, and that op runs after everything queued before it on its stream. When the call's
stream sat idle from the call's start, its queued work was held by something else: a
cross-stream dependency (an event wait) on another stream, released when that stream's op
ended. The op on another stream of the device whose end precedes the held stream's first
start by at most `release_ns` is named as the release; the held time and that lag are the
evidence, so the engineer sees "the copy took 2 µs, the call 146 ms: its stream waited for
stream 7" instead of a slow copy.
"""

from __future__ import annotations

from dataclasses import dataclass

from crossview.views.views import Views


@dataclass(frozen=True)
class Release:
    """The op on another stream whose end let the held stream start."""

    stream: int
    name: str
    family: str
    lag_ns: int  # from its end to the held stream's first start


@dataclass(frozen=True)
class BlockingWait:
    call: str  # the host API name
    host_ns: int  # the call's duration
    scope: str  # the innermost annotation enclosing the call ("" if none)
    device: int
    stream: int
    op_name: str  # the GPU op the call launched
    op_ns: int
    held_ns: int  # the call's stream idle, with work queued, from the call's start
    release: Release | None


_CALLS_SQL = """
SELECT h.op_id, h.name, h.start_ns, h.dur_ns, g.device, g.stream, g.name AS op, g.dur_ns AS op_ns,
       g.start_ns AS op_start
FROM f_host h JOIN f_gpu g ON g.launch_op_id = h.op_id AND g.artifact_id = h.artifact_id
WHERE h.kind = 'runtime' AND h.name IN (SELECT unnest($names))
ORDER BY h.dur_ns DESC, h.op_id LIMIT $k
"""
# the held stream's first op at or after the call's start, and whether one ran across it
_STREAM_SQL = """
SELECT min(start_ns) FILTER (start_ns >= $t) AS first,
       count(*) FILTER (start_ns < $t AND start_ns + dur_ns > $t) AS covering
FROM f_gpu WHERE device = $d AND stream = $s AND start_ns <= $op_start
"""
_RELEASE_SQL = """
SELECT stream, name, coalesce(family, kind), $first - (start_ns + dur_ns) AS lag
FROM f_gpu WHERE device = $d AND stream <> $s
  AND start_ns + dur_ns <= $first AND start_ns + dur_ns >= $first - $release
ORDER BY lag, stream LIMIT 1
"""
# each call's nearest enclosing annotation (not a ProfilerStep#), all calls in one walk up
_SCOPE_SQL = """
WITH RECURSIVE up(call, op_id, parent, kind, name, n) AS (
  SELECT op_id, op_id, parent, kind, name, 0 FROM host_ops
  WHERE op_id IN (SELECT unnest($ops))
  UNION ALL
  SELECT up.call, h.op_id, h.parent, h.kind, h.name, up.n + 1 FROM host_ops h JOIN up
    ON h.op_id = up.parent WHERE up.n < 64)
SELECT call, arg_min(name, n) FROM up
WHERE kind = 'annotation' AND name NOT LIKE 'ProfilerStep#%' GROUP BY call
"""


def longest(v: Views, names: tuple[str, ...], k: int, release_ns: int
            ) -> list[BlockingWait]:
    """The k longest calls of these API names in scope that launched a GPU op, longest first,
    each with what held its stream."""
    store = v.store
    out: list[BlockingWait] = []
    rows = store.sql(_CALLS_SQL, {"names": list(names), "k": k}).fetchall()
    scopes = dict(store.sql(_SCOPE_SQL, {"ops": [r[0] for r in rows]}).fetchall()) \
        if rows else {}
    for op_id, call, start, dur, dev, stream, op, op_ns, op_start in rows:
        first, covering = store.sql(_STREAM_SQL, {
            "t": start, "d": dev, "s": stream, "op_start": op_start}).fetchall()[0]
        held = 0 if covering or first is None else int(first) - int(start)
        release = None
        if held > 0:
            r = store.sql(_RELEASE_SQL, {"first": first, "d": dev, "s": stream,
                                         "release": release_ns}).fetchall()
            if r:
                release = Release(int(r[0][0]), str(r[0][1]), str(r[0][2]), int(r[0][3]))
        scope = str(scopes[op_id]) if op_id in scopes else ""
        out.append(BlockingWait(str(call), int(dur), scope, int(dev), int(stream), str(op),
                                int(op_ns), held, release))
    return out

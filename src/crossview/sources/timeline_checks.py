"""Checks a trace reader makes on the times it just stored, before anything is computed from
them (issue 43): each doubt becomes one problem of the artifact, so the user is told on
stderr and in the recap; nothing is changed or dropped.

- Launch clocks: a kernel cannot start before the API call that launched it, and no launch
  queue holds a kernel for a minute. When many of one thread's or one stream's GPU ops break
  that, that thread's or stream's clock is shifted against the others (a trace merged from
  two clocks, an edited file): every time across them (GPU busy, launch gaps, which thread
  waits) is then wrong.
- One stream runs its ops one after another: two that overlap by most of the later one's
  duration cannot both be right. (Programmatic dependent launch lets the next kernel start
  a few µs early: real B200 traces overlap up to 16% of a kernel, so only overlaps past
  `stream_overlap_share` of the later op, and past `stream_overlap_min_ns`, are doubted. Ops
  of a CUDA graph are left out: a graph's branches may run side by side.)

Bounds in knowledge/input_limits.yaml. One SQL pass each, O(n log n) in the GPU ops.
"""

from __future__ import annotations

from crossview.sources import guard
from crossview.store.store import Store

_OPS = "kind IN ('kernel', 'memcpy', 'memset')"
_NAMED = 3  # threads / streams named in a problem


def doubts(store: Store, artifact_id: int) -> list[str]:
    """The problems to report about this artifact's GPU and launch times (empty: none)."""
    return [*launch_clocks(store, artifact_id), *stream_overlaps(store, artifact_id)]


def launch_clocks(store: Store, artifact_id: int) -> list[str]:
    lead = int(guard.limit("clock_launch_lead_ns"))
    queue = int(guard.limit("clock_launch_queue_ns"))
    rows = store.sql(
        "SELECT h.pid, h.tid, g.device, g.stream, count(*),"
        " count(*) FILTER (WHERE g.start_ns - h.start_ns < -$lead"
        "  OR g.start_ns - h.start_ns > $queue),"
        " max(abs(g.start_ns - h.start_ns))"
        " FROM gpu_ops g JOIN host_ops h ON h.op_id = g.launch_op_id"
        f" WHERE g.artifact_id = $a AND h.artifact_id = $a AND g.{_OPS}"
        " GROUP BY ALL", {"a": artifact_id, "lead": lead, "queue": queue}).fetchall()
    total = sum(r[4] for r in rows)
    bad = sum(r[5] for r in rows)
    if not bad:
        return []
    worst = max(r[6] for r in rows if r[5])
    threads: dict[str, list[int]] = {}
    streams: dict[str, list[int]] = {}
    for pid, tid, dev, stream, n, b, _ in rows:
        for key, into in ((f"{pid}/{tid}", threads), (f"{dev}/{stream}", streams)):
            into.setdefault(key, [0, 0])
            into[key][0] += n
            into[key][1] += b

    def most(d: dict[str, list[int]], what: str) -> list[str]:
        hit = sorted(((b, n, k) for k, (n, b) in d.items() if 2 * b > n), reverse=True)
        return [f"{what} {guard.show(k)}: {b:,} of {n:,}" for b, n, k in hit[:_NAMED]]

    named = most(threads, "thread") + most(streams, "stream")
    where = f" ({'; '.join(named)})" if named else ""
    return [f"clocks disagree: {bad:,} of {total:,} GPU op(s) start before the call that "
            f"launched them or more than {queue / 1e9:,.0f} s after it, by up to "
            f"{worst / 1e9:,.1f} s{where}: some thread's or stream's clock is shifted "
            "against the others, so times across them (GPU busy, launch gaps) are not "
            "comparable"]


def stream_overlaps(store: Store, artifact_id: int) -> list[str]:
    floor = int(guard.limit("stream_overlap_min_ns"))
    share = float(guard.limit("stream_overlap_share"))
    rows = store.sql(
        "SELECT device, stream, count(*) FROM ("
        " SELECT device, stream, start_ns, dur_ns,"
        "  least(lag(start_ns + dur_ns) OVER w, start_ns + dur_ns) - start_ns AS over,"
        "  lag(start_ns) OVER w IS NOT NULL AS has_prev"
        f" FROM gpu_ops WHERE artifact_id = $a AND {_OPS} AND stream IS NOT NULL"
        "  AND NOT coalesce(via_graph, false)"
        " WINDOW w AS (PARTITION BY device, stream ORDER BY start_ns, gpu_op_id))"
        " WHERE has_prev AND over > $floor AND over > $share * dur_ns"
        " GROUP BY ALL ORDER BY 3 DESC",
        {"a": artifact_id, "floor": floor, "share": share}).fetchall()
    if not rows:
        return []
    n = sum(r[2] for r in rows)
    where = ", ".join(f"{d}/{s}" for d, s, _ in rows[:_NAMED])
    more = f" and {len(rows) - _NAMED} more" if len(rows) > _NAMED else ""
    return [f"{n:,} GPU op(s) overlap the one before them on the same stream by more than "
            f"{100 * share:.0f}% of their duration (device/stream {where}{more}): a stream runs "
            "its ops one after another, so their times are damaged (GPU busy counts each "
            "nanosecond once)"]

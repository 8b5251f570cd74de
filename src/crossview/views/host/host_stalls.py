"""Host stalls: host ops whose own time is ≥ `stall_min_ns` and ≥ `stall_ratio` × the median
own time of the same op on the same artifact (knowledge/ranks.yaml `late`).

A µs-class op (`aten::empty`, `aten::view`) whose own time reaches tens of ms did not work
that long: its thread was descheduled or blocked (CPU contention, page faults, a lock). The
megatron_tp8_a100 ranks hold such stalls on every rank (`aten::view` 29 ms on rank 4,
`aten::mm` 20 ms on rank 0, median tens of µs). The op's own time past its median is the
stall: what the `host-stalls` replay lever (replay/levers/host_stalls.py) removes.
"""

from __future__ import annotations

from dataclasses import dataclass

from crossview.store.store import Store


@dataclass(frozen=True)
class HostStall:
    name: str
    lane: str  # "T pid/tid" (the replay graph's host lane)
    start_ns: int
    end_ns: int
    self_ns: int  # the op's own time in this call
    median_ns: int  # the median own time of the op on this artifact
    calls: int  # calls of the op on this artifact

    @property
    def excess_ns(self) -> int:
        return max(0, self.self_ns - self.median_ns)


def stalls(store: Store, artifact_id: int, min_ns: int, ratio: float,
           windows: tuple[list[int], list[int]] | None = None, table: str = "host_ops",
           limit: int | None = None) -> list[HostStall]:
    """The artifact's stalls, longest first (`windows`: only ops starting inside these
    [start, end) spans; `table`: host_ops, or f_host for the filter's scope)."""
    join = ""
    params: dict[str, object] = {"a": artifact_id, "min": min_ns, "ratio": ratio}
    if windows is not None:
        join = (" JOIN (SELECT unnest($s) AS s, unnest($e) AS e) w"
                " ON h.start_ns >= w.s AND h.start_ns < w.e")
        params.update(s=windows[0], e=windows[1])
    rows = store.sql(
        f"WITH m AS (SELECT name, median(self_ns) AS med, count(*) AS n FROM {table}"
        "  WHERE artifact_id = $a AND self_ns IS NOT NULL GROUP BY name)"
        f" SELECT h.name, h.pid, h.tid, h.start_ns, h.start_ns + h.dur_ns, h.self_ns, m.med,"
        f" m.n FROM {table} h JOIN m USING (name){join}"
        " WHERE h.artifact_id = $a AND h.self_ns >= $min AND h.self_ns >= $ratio * m.med"
        " ORDER BY h.self_ns DESC, h.start_ns" + (f" LIMIT {int(limit)}" if limit else ""),
        params).fetchall()
    return [HostStall(str(n), f"T {pid}/{tid}", int(s), int(e), int(sf), int(med), int(c))
            for n, pid, tid, s, e, sf, med, c in rows]

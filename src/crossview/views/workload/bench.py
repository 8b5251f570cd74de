"""Benchmark results per (artifact, arm): trials, median of each metric, the Context, and —
when the result kept per-request detail — ITL/TTFT distributions and prompt lengths."""

from __future__ import annotations

import json

from crossview.core.bench_arm import BenchArm, MetricSummary, RequestStats
from crossview.store.store import Store


def _requests(store: Store, aid: int, arm: str, spike_ratio: float) -> RequestStats | None:
    n, failed, isl, isl90, osl, t50, t99 = store.sql(
        "SELECT count(*), count(*) FILTER (error IS NOT NULL), avg(input_len),"
        " quantile_cont(input_len, 0.9), avg(output_len),"
        " quantile_cont(ttft_s, 0.5) FILTER (error IS NULL),"
        " quantile_cont(ttft_s, 0.99) FILTER (error IS NULL)"
        " FROM bench_requests WHERE artifact_id = $a AND arm = $arm",
        {"a": aid, "arm": arm}).fetchall()[0]
    if not n:
        return None
    cnt, p50, p99, mx = store.sql(
        "SELECT count(*), quantile_cont(x, 0.5), quantile_cont(x, 0.99), max(x) FROM"
        " (SELECT unnest(itl_s) AS x FROM bench_requests WHERE artifact_id = $a AND arm = $arm"
        " AND error IS NULL)", {"a": aid, "arm": arm}).fetchall()[0]
    spikes = None
    if cnt and p50:
        spikes = store.sql(
            "SELECT count(*) FILTER (x > $lim) / count(*) FROM (SELECT unnest(itl_s) AS x"
            " FROM bench_requests WHERE artifact_id = $a AND arm = $arm AND error IS NULL)",
            {"a": aid, "arm": arm, "lim": spike_ratio * p50}).fetchall()[0][0]

    def ms(x: float | None) -> float | None:
        return None if x is None else float(x) * 1e3

    return RequestStats(int(n), int(failed), isl, isl90, osl, ms(t50), ms(t99), int(cnt or 0),
                        ms(p50), ms(p99), ms(mx), spikes, spike_ratio)


def bench_arms(store: Store, spike_ratio: float) -> list[BenchArm]:
    out: list[BenchArm] = []
    for aid, path, arm, trials in store.sql(
            "SELECT t.artifact_id, a.path, t.arm, count(DISTINCT t.trial) FROM f_trials t"
            " JOIN artifacts a USING (artifact_id) GROUP BY ALL ORDER BY 2, 3").fetchall():
        ctxs = [json.loads(c) for c, in store.sql(
            "SELECT context FROM context WHERE artifact_id = $a AND arm = $arm ORDER BY trial",
            {"a": aid, "arm": arm}).fetchall()]
        first = ctxs[0] if ctxs else {}
        differs = sorted(k for k in first if any(c.get(k) != first[k] for c in ctxs[1:])
                         and k not in ("date", "metadata"))
        b = BenchArm(path, arm, int(trials), first, differs)
        for metric, unit, n, med, lo, hi in store.sql(
                "SELECT metric, any_value(unit), count(*), median(value), min(value), max(value)"
                " FROM f_trials WHERE artifact_id = $a AND arm = $arm GROUP BY metric"
                " ORDER BY metric", {"a": aid, "arm": arm}).fetchall():
            b.metrics[metric] = MetricSummary(unit or "", int(n), float(med), float(lo),
                                              float(hi))
        b.requests = _requests(store, aid, arm, spike_ratio)
        out.append(b)
    return out

"""Benchmark results per (artifact, arm): trials, median of each metric, the Context, and —
when the result kept per-request detail — ITL/TTFT distributions and prompt lengths. Also the
store's trials as rows (every file, no filter), for `crossview ab` and the bundle's context."""

from __future__ import annotations

import json
from typing import NamedTuple

from crossview.core.bench_arm import BenchArm, MetricSummary, RequestStats
from crossview.store.store import Store


class TrialValue(NamedTuple):
    """One metric of one benchmark trial, as its file recorded it."""

    artifact_id: int
    arm: str
    trial: int
    metric: str
    value: float
    unit: str | None
    path: str  # the result file


class TrialContext(NamedTuple):
    """The Context (core/context.py, as JSON) one trial ran under, and its file."""

    path: str
    context: dict[str, object]


def trial_values(store: Store) -> list[TrialValue]:
    """Every trial value of the store, by (file, arm, trial, metric)."""
    return [TrialValue(*r) for r in store.sql(
        "SELECT t.artifact_id, t.arm, t.trial, metric, value, unit, a.path"
        " FROM trials t JOIN artifacts a USING (artifact_id)"
        " ORDER BY t.artifact_id, t.arm, t.trial, metric").fetchall()]


def request_ttfts(store: Store) -> dict[tuple[int, str, int], tuple[float, float]]:
    """(file, arm, trial) → (the first request's TTFT, the median TTFT), seconds, over the
    requests that succeeded (per-request detail: `vllm bench serve --save-detailed`)."""
    return {(aid, a, t): (f, m) for aid, a, t, f, m in store.sql(
        "SELECT artifact_id, arm, trial, arg_min(ttft_s, request), median(ttft_s)"
        " FROM bench_requests WHERE ttft_s IS NOT NULL AND error IS NULL"
        " GROUP BY ALL").fetchall()}


def trial_contexts(store: Store) -> list[TrialContext]:
    """Every trial's Context, by (file, arm, trial)."""
    return [TrialContext(str(p), json.loads(c)) for p, c in store.sql(
        "SELECT a.path, c.context FROM context c JOIN artifacts a USING (artifact_id)"
        " ORDER BY c.artifact_id, c.arm, c.trial").fetchall()]


def trial_count(store: Store, artifact_id: int) -> int:
    """The distinct trials one file holds."""
    return int(store.sql("SELECT count(DISTINCT trial) FROM trials WHERE artifact_id = $a",
                         {"a": artifact_id}).fetchall()[0][0] or 0)


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

"""Serving-engine metrics per (artifact, engine, model) over the filter.

Gauges (running, waiting, KV use, …) are combined across series at each scrape (sum of
request counts, max of percentages) and summarized over scrapes. Counters and histogram
buckets become increases between the first and last scrape (a drop is a restart: the new
value counts from zero), so two scrapes that bracket a window give that window's numbers;
one scrape gives the cumulative numbers since the engine started, and says so.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field

from crossview.knowledge import metric_names
from crossview.store.store import Store
from crossview.views.workload.histogram import HistStat, stat

ENGINES = ("vllm", "sglang", "triton", "dynamo")
_MODEL = ("coalesce(json_extract_string(labels, '$.model_name'),"
          " json_extract_string(labels, '$.model'), '')")

_GAUGES_SQL = f"""
SELECT a.path, f.source, {_MODEL} AS model, f.metric, f.seq, min(f.ts_ns), sum(f.value),
       max(f.value), any_value(f.raw_name), any_value(f.unit)
FROM f_metrics f JOIN artifacts a USING (artifact_id)
WHERE f.source IN (SELECT unnest($engines)) AND f.mtype = 'gauge'
GROUP BY ALL ORDER BY 1, 2, 3, 4, 5
"""

# per series: increase over the scrapes (reset-aware) and the last cumulative value
_SERIES_SQL = f"""
WITH s AS (
    SELECT a.path, f.source, {_MODEL} AS model, f.metric, f.mtype, f.raw_name, f.labels,
           json_extract_string(f.labels, '$.le') AS le, f.seq, f.ts_ns, f.value, f.unit,
           lag(f.value) OVER (PARTITION BY f.artifact_id, f.raw_name, f.labels
                              ORDER BY f.seq) AS prev
    FROM f_metrics f JOIN artifacts a USING (artifact_id)
    WHERE f.source IN (SELECT unnest($engines))
      AND f.mtype IN ('counter', 'bucket', 'sum', 'count')
)
SELECT path, source, model, metric, mtype, le, any_value(raw_name), any_value(unit),
       sum(CASE WHEN prev IS NULL THEN 0 WHEN value >= prev THEN value - prev ELSE value END),
       arg_max(value, seq), count(DISTINCT seq), min(ts_ns), max(ts_ns)
FROM s GROUP BY path, source, model, metric, mtype, le, raw_name, labels
ORDER BY path, source, model, metric, mtype, le, raw_name, labels
"""  # ordered: the summaries' dicts (and the JSON's key order) follow the rows'


@dataclass
class GaugeStat:
    unit: str
    raw_name: str
    mean: float
    max: float
    min: float
    last: float
    by_scrape: dict[int, float] = field(default_factory=dict)  # seq → combined value


@dataclass
class CounterStat:
    unit: str
    raw_name: str
    increase: float | None  # over the window (≥ 2 scrapes)
    cumulative: float  # last value (since the engine started)
    rate_per_s: float | None  # increase ÷ window, when scrapes carry timestamps

    @property
    def value(self) -> float:
        """The window's increase when there is one, else the cumulative count."""
        return self.increase if self.increase is not None else self.cumulative


@dataclass
class ServingSummary:
    artifact: str
    engine: str
    model: str
    scrapes: int
    first_ns: int | None
    last_ns: int | None
    gauges: dict[str, GaugeStat] = field(default_factory=dict)
    counters: dict[str, CounterStat] = field(default_factory=dict)
    histograms: dict[str, HistStat] = field(default_factory=dict)
    info: dict[str, dict[str, str]] = field(default_factory=dict)

    @property
    def over(self) -> str:
        return "window" if self.scrapes >= 2 else "since start"

    @property
    def window_s(self) -> float | None:
        if self.first_ns is None or self.last_ns is None or self.last_ns <= self.first_ns:
            return None
        return (self.last_ns - self.first_ns) / 1e9

    def hist(self, metric: str) -> HistStat | None:
        h = self.histograms.get(metric)
        return h if h is not None and h.count > 0 else None

    def counter(self, metric: str) -> float | None:
        c = self.counters.get(metric)
        return c.value if c is not None else None

    @property
    def prefix_hit_rate_pct(self) -> float | None:
        """Hits ÷ queries (tokens) from the counters, else the engine's own rate gauge."""
        q, h = self.counter("prefix_cache_queries"), self.counter("prefix_cache_hits")
        if q:
            return 100.0 * (h or 0.0) / q
        g = self.gauges.get("prefix_cache_hit_rate")
        return g.mean if g is not None else None

    @property
    def finished(self) -> float | None:
        return self.counter("requests_finished")

    @property
    def idle(self) -> bool:
        """No request running or waiting at any scrape and none finished or observed."""
        busy = any(self.gauges[g].max > 0 for g in ("requests_running", "requests_waiting",
                                                    "requests_inflight") if g in self.gauges)
        done = any((self.counter(c) or 0) > 0 for c in ("requests_finished", "prompt_tokens",
                                                        "generation_tokens"))
        seen = any(h.count > 0 for h in self.histograms.values())
        return not (busy or done or seen)

    def to_dict(self) -> dict[str, object]:
        d = asdict(self)
        d["histograms"] = {k: h.to_dict() for k, h in self.histograms.items()}
        for g in d["gauges"].values():
            g.pop("by_scrape", None)
        d.update(over=self.over, window_s=self.window_s, idle=self.idle,
                 prefix_hit_rate_pct=self.prefix_hit_rate_pct)
        return d


def _le(text: str | None) -> float:
    if text is None:
        return math.inf
    return math.inf if text in ("+Inf", "Inf", "inf") else float(text)


def serving_summaries(store: Store) -> list[ServingSummary]:
    canon = metric_names.serving_canonical()
    out: dict[tuple[str, str, str], ServingSummary] = {}

    def summary(path: str, src: str, model: str) -> ServingSummary:
        key = (path, src, model)
        if key not in out:
            out[key] = ServingSummary(path, src, model, 0, None, None)
        return out[key]

    eng = {"engines": list(ENGINES)}
    for path, src, model, metric, seq, ts, total, top, raw, unit in store.sql(
            _GAUGES_SQL, eng).fetchall():
        s = summary(path, src, model)
        if ts is not None:
            s.first_ns = ts if s.first_ns is None else min(s.first_ns, ts)
            s.last_ns = ts if s.last_ns is None else max(s.last_ns, ts)
        agg = canon.get(metric, {}).get("agg", "sum")
        g = s.gauges.setdefault(metric, GaugeStat(unit or "", raw, 0.0, 0.0, 0.0, 0.0))
        g.by_scrape[int(seq)] = float(top if agg == "max" else total)
    for path, src, model, metric, labels in store.sql(
            f"SELECT a.path, f.source, {_MODEL}, f.metric, f.labels FROM f_metrics f"
            " JOIN artifacts a USING (artifact_id) WHERE f.source IN (SELECT unnest($engines))"
            " AND f.mtype = 'info'", eng).fetchall():
        summary(path, src, model).info[metric] = json.loads(labels)
    hist_parts: dict[tuple, dict] = {}
    for (path, src, model, metric, mtype, le, raw, unit, inc, last, nseq, t0, t1) in store.sql(
            _SERIES_SQL, eng).fetchall():
        s = summary(path, src, model)
        s.scrapes = max(s.scrapes, int(nseq))
        for t in (t0, t1):
            if t is not None:
                s.first_ns = t if s.first_ns is None else min(s.first_ns, t)
                s.last_ns = t if s.last_ns is None else max(s.last_ns, t)
        use = float(inc) if nseq >= 2 else float(last)
        if mtype == "counter":
            c = s.counters.get(metric)
            if c is None:
                c = s.counters[metric] = CounterStat(unit or "", raw, 0.0 if nseq >= 2 else None,
                                                     0.0, None)
            c.cumulative += float(last)
            if c.increase is not None and nseq >= 2:
                c.increase += float(inc)
        else:
            h = hist_parts.setdefault((path, src, model, metric), {
                "unit": unit or "", "raw": raw, "buckets": {}, "sum": 0.0, "count": 0.0})
            if mtype == "bucket":
                h["buckets"][_le(le)] = h["buckets"].get(_le(le), 0.0) + use
            else:
                h[mtype] += use
            if mtype == "bucket":
                h["raw"] = raw.removesuffix("_bucket")
    for s in out.values():
        gauge_scrapes = max((len(g.by_scrape) for g in s.gauges.values()), default=0)
        s.scrapes = max(s.scrapes, gauge_scrapes)
        for g in s.gauges.values():
            vals = [g.by_scrape[k] for k in sorted(g.by_scrape)]
            g.mean, g.max, g.min, g.last = sum(vals) / len(vals), max(vals), min(vals), vals[-1]
        win = s.window_s
        for c in s.counters.values():
            if c.increase is not None and win:
                c.rate_per_s = c.increase / win
    for (path, src, model, metric), h in hist_parts.items():
        s = out[(path, src, model)]
        s.histograms[metric] = stat(metric, h["unit"], list(h["buckets"].items()), h["count"],
                                    h["sum"], s.over, h["raw"])
    # engine-wide info series (vllm:cache_config_info has no model label) belong to every
    # model summary of the same engine in the same artifact
    for key in [k for k, v in out.items() if not k[2] and not (v.gauges or v.counters
                                                               or v.histograms)]:
        peers = [v for k, v in out.items() if k[:2] == key[:2] and k[2]]
        for p in peers:
            p.info = {**out[key].info, **p.info}
        if peers:
            del out[key]
    return [out[k] for k in sorted(out)]

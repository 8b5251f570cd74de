"""Generic benchmark results for load generators without a reader of their own
(spec: docs/input-formats.md).

CSV — a header with at least `metric` and `value`; optional `unit`, `arm`, `trial`; every other
column describes the trial (Context field names such as model, concurrency, isl, osl,
request_rate, hostname, gpu; anything else lands in the Context's metadata):

    arm,trial,metric,value,unit,model,concurrency,isl,osl
    baseline,0,output_throughput,1234.5,tok/s,meta-llama/Llama-3.1-8B,64,1024,128

JSONL — one trial per line, optionally after a header line that gives the shared context:

    {"format": "crossview-bench", "version": 1, "context": {"model": "…", "gpu": "…"}}
    {"arm": "baseline", "trial": 0, "metrics": {"output_throughput": {"value": 1234.5,
     "unit": "tok/s"}, "median_itl_ms": 11.2}, "context": {"concurrency": 64}}

A metric given as a bare number takes its unit from the name (`_ms` → ms, `_s` → s,
`throughput` → per second as written by vLLM), else stays unit-less.
"""

from __future__ import annotations

import csv
import io
import math
from pathlib import Path
from typing import Any

from crossview.core.context import Context
from crossview.errors import InputError
from crossview.sources.artifact_report import ArtifactReport
from crossview.sources.bench.trials import TrialRows, apply, commit, scalar
from crossview.sources.counters.rows import problem_lines
from crossview.sources.textfile import json_objects, read_bytes
from crossview.store.store import Store

KIND = "bench-generic"
FORMAT = "crossview-bench"
_CORE = {"arm", "trial", "metric", "value", "unit"}


def _unit_for(metric: str) -> str:
    if metric.endswith("_ms"):
        return "ms"
    if metric.endswith("_s") or metric == "duration":
        return "s"
    if metric in ("request_throughput", "request_goodput"):
        return "req/s"
    if metric.endswith("throughput"):
        return "tok/s"
    return ""


def _csv_header(head: bytes) -> list[str] | None:
    first = head.lstrip().split(b"\n", 1)[0].decode("utf-8", "replace").strip()
    cols = [c.strip().lower() for c in first.split(",")]
    return cols if {"metric", "value"} <= set(cols) else None


def sniff(head: bytes, path: Path) -> bool:
    first = head.lstrip().split(b"\n", 1)[0]
    if first.startswith(b"{"):
        return f'"{FORMAT}"'.encode() in first or (
            b'"metrics"' in first and (b'"trial"' in first or b'"arm"' in first))
    return _csv_header(head) is not None


def _read_csv(text: str, t: TrialRows, bad: list[tuple[int, str]]) -> None:
    reader = csv.DictReader(io.StringIO(text))
    reader.fieldnames = [c.strip().lower() for c in reader.fieldnames or []]
    for lineno, row in enumerate(reader, 2):
        metric = (row.get("metric") or "").strip()
        try:
            value = float((row.get("value") or "").strip())
        except ValueError:
            bad.append((lineno, f"value {row.get('value')!r} is not a number"))
            continue
        if not math.isfinite(value):  # NaN / inf: never averaged in silently
            bad.append((lineno, f"value {row.get('value')!r} is not a finite number"))
            continue
        if not metric:
            bad.append((lineno, "empty metric name"))
            continue
        arm = (row.get("arm") or "").strip() or "default"
        trial_text = (row.get("trial") or "0").strip() or "0"
        if not trial_text.lstrip("-").isdigit():
            bad.append((lineno, f"trial {trial_text!r} is not an integer"))
            continue
        trial = int(trial_text)
        unit = (row.get("unit") or "").strip() or _unit_for(metric)
        t.add(arm, trial, metric, value, unit)
        ctx = t.contexts.setdefault((arm, trial), Context(bench="generic CSV"))
        for k, v in row.items():
            if k not in _CORE and k is not None and v not in (None, ""):
                apply(ctx, k, v.strip(), metadata=True)


def _read_jsonl(data: bytes, t: TrialRows, bad: list[tuple[int, str]]) -> None:
    shared: dict[str, Any] = {}
    for lineno, obj in json_objects(data, bad):
        if obj.get("format") == FORMAT:
            given = obj.get("context")
            shared = given if isinstance(given, dict) else {}
            continue
        metrics = obj.get("metrics")
        trial = obj.get("trial", 0)
        if not isinstance(metrics, dict) or not isinstance(trial, int):
            bad.append((lineno, "needs a `metrics` object and an integer `trial`"))
            continue
        arm = str(obj.get("arm") or "default")
        ctx = Context(bench=str(shared.get("bench") or "generic JSONL"))
        given = obj.get("context")
        own = given if isinstance(given, dict) else {}
        for k, v in {**shared, **own}.items():
            apply(ctx, k, v, metadata=True)
        t.contexts[(arm, trial)] = ctx
        for name, m in metrics.items():
            value, unit = (m.get("value"), m.get("unit")) if isinstance(m, dict) else (m, None)
            v = scalar(value)
            if not isinstance(v, int | float) or isinstance(v, bool) or not math.isfinite(v):
                bad.append((lineno, f"metric {name!r}: value is not a finite number"))
                continue
            t.add(arm, trial, str(name), float(v), str(unit) if unit else _unit_for(name))


def read(path: Path, store: Store) -> ArtifactReport:
    path = Path(path)
    data = read_bytes(path)
    t = TrialRows()
    bad: list[tuple[int, str]] = []
    if data.lstrip()[:1] == b"{":
        _read_jsonl(data, t, bad)
    elif _csv_header(data[:4096]) is not None:
        _read_csv(data.decode("utf-8", "replace"), t, bad)
    else:
        raise InputError(path, "not a generic benchmark CSV (needs `metric,value` columns) or "
                         "JSONL", "unsupported")
    return commit(store, path, KIND, t, problem_lines(bad, "benchmark"))

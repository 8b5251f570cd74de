"""Prometheus `/metrics` scrapes: dcgm-exporter and serving engines (vLLM, SGLang, Triton,
Dynamo) through one parser (promtext.py) and one name table (knowledge/*_metrics.yaml).

Histograms stay histograms (bucket rows with their `le` label, plus sum and count); counters
stay cumulative — the metrics view turns them into rates when two timed scrapes bracket a
window. `_created` twins of counters/histograms are dropped (creation times, not samples).
"""

from __future__ import annotations

import math
import re
from pathlib import Path

from crossview.errors import InputError
from crossview.knowledge import metric_names
from crossview.sources.artifact_report import ArtifactReport
from crossview.sources.counters import promtext
from crossview.sources.counters.rows import MetricRows, commit, labels_json, problem_lines
from crossview.store.store import Store

KIND = "prometheus"
_SAMPLE_LINE = re.compile(rb"^[a-zA-Z_:][a-zA-Z0-9_:]*(\{[^\n]*\})?[ \t]+[-+0-9.eEinfINFaN]+",
                          re.M)
_UNIT_SUFFIX = (("_seconds", "s"), ("_bytes", "B"), ("_perc", "ratio"), ("_percent", "%"),
                ("_tokens", "tokens"), ("_us", "µs"), ("_ms", "ms"))
_PART_TYPE = {"counter": "counter", "gauge": "gauge", "bucket": "bucket", "sum": "sum",
              "count": "count", "info": "info", "summary": "quantile", "untyped": "untyped",
              "histogram": "untyped", "stateset": "gauge", "unknown": "untyped"}


def sniff(head: bytes, path: Path) -> bool:
    """Text with `# HELP`/`# TYPE` lines or several `name{labels} value` lines."""
    if b"\x00" in head[:4096] or head.lstrip()[:1] in (b"{", b"["):
        return False
    if b"\n# TYPE " in b"\n" + head or b"\n# HELP " in b"\n" + head:
        return True
    if b"\n" + promtext.SCRAPE_MARK.encode() in b"\n" + head:
        return True
    return len(_SAMPLE_LINE.findall(head[:16384])) >= 3 and b"," not in head[:200]


def _unit_from_name(family: str) -> str:
    for suffix, unit in _UNIT_SUFFIX:
        if family.endswith(suffix) or family.endswith(suffix + "_total"):
            return unit
    return ""


def _device(labels: dict[str, str]) -> int | None:
    g = labels.get("gpu")
    return int(g) if g is not None and g.isdigit() else None


def _scaled_le(le: str, scale: float) -> str:
    try:
        v = promtext.parse_float(le)
    except ValueError:
        return le
    return "+Inf" if math.isinf(v) else repr(v * scale)


def _bound_ok(le: str | None) -> bool:
    """A bucket's `le`: a number, or ±Inf (NaN is no bound)."""
    try:
        return le is not None and not math.isnan(promtext.parse_float(le.strip()))
    except ValueError:
        return False


def read(path: Path, store: Store) -> ArtifactReport:
    path = Path(path)
    try:
        text = path.read_bytes().decode("utf-8", errors="replace")
    except OSError as e:
        raise InputError(path, f"cannot read: {e.strerror or e}") from None
    parsed = promtext.parse(text)
    rows = MetricRows()
    legacy: list[tuple[int, str]] = []  # (row index, canonical) of legacy names
    current: set[str] = set()
    sources: set[str] = set()
    fb_total: dict[int, float] = {}
    label_text: dict[tuple[tuple[str, str], ...], str] = {}  # label set → its JSON, once
    infinite = bad_le = 0
    for s in parsed.samples:
        family, part = promtext.family_of(s.name, parsed.types)
        if part == "created":
            continue
        if not math.isfinite(s.value):  # NaN = no observation (e.g. an empty summary)
            infinite += not math.isnan(s.value)
            continue
        mtype = _PART_TYPE.get(part, "untyped")
        if mtype == "bucket" and not _bound_ok(s.labels.get("le")):
            bad_le += 1  # a bucket without a numeric upper bound cannot be placed
            continue
        if mtype == "gauge" and family.endswith("_info"):
            mtype = "info"
        if family.startswith("DCGM_"):
            canon, source = metric_names.gpu_name("dcgm-exporter", family), "dcgm-exporter"
        else:
            canon = metric_names.serving_name(family)
            source = metric_names.engine_of_family(family) or "prometheus"
        labels = dict(s.labels)
        value = s.value
        if canon is not None:
            metric, unit = canon.metric, canon.unit
            if mtype == "bucket":  # bucket values are counts; their bounds carry the unit
                if "le" in labels and canon.scale != 1.0:
                    labels["le"] = _scaled_le(labels["le"], canon.scale)
            elif mtype != "count":
                value = value * canon.scale
        else:
            metric, unit = family, _unit_from_name(family)
        device = _device(labels)
        if source == "dcgm-exporter":
            rows.note_device(device, labels.get("modelName"))
            if metric == "mem_total" and device is not None:
                fb_total[device] = value
        sources.add(source)
        if canon is not None and canon.legacy:
            legacy.append((len(rows), metric))
        elif canon is not None:
            current.add(metric)
        key = tuple(labels.items())
        lab = label_text.get(key)
        if lab is None:
            lab = label_text[key] = labels_json(labels)
        rows.add(source, device, metric, s.ts_ns, value, unit, lab, s.name, mtype, s.scrape)
    if legacy and current:
        drop = {i for i, m in legacy if m in current}
        if drop:
            rows.drop([i not in drop for i in range(len(rows))])
    for d, mib in fb_total.items():
        if d in rows.devices:
            rows.note_device(d, rows.devices[d][0], mib)
            rows.devices[d] = (rows.devices[d][0], mib)
    problems = problem_lines(parsed.bad, "metrics")
    last = text.rstrip("\n").rsplit("\n", 1)[-1].strip()
    if text and not text.endswith("\n") and last.startswith("#"):
        # the format ends every line with a newline; a file that stops inside a comment line
        # was cut (a last *sample* line without one is accepted: exporters' files do that,
        # and a cut sample is already a malformed line above)
        problems.append("partial: the file ends inside a comment line without a newline: cut "
                        "short, what followed is missing")
    if infinite:
        problems.append(f"{infinite} sample(s) with an infinite value skipped")
    if bad_le:
        problems.append(f"partial: {bad_le:,} histogram bucket sample(s) whose `le` bound is "
                        "missing or not a number were skipped")
    if parsed.scrapes > 1 and parsed.timed_scrapes == 0 and not rows.has_timestamps():
        problems.append(f"{parsed.scrapes} scrapes without timestamps: counters cannot be "
                        "turned into rates (add `# scrape_time <epoch s>` lines)")
    kind = KIND + ":" + ",".join(sorted(sources)) if sources else KIND
    return commit(store, path, kind, rows, problems, "metric")

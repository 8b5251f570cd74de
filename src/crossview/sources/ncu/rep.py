""".ncu-rep reader through NVIDIA's `ncu-report` package (optional extra `crossview[ncu]`).

The container is checked first (rep_format.walk): a cut or corrupt file is rejected with
where it breaks, instead of the partial load ncu_report would silently give. Every numeric
metric of every profiled launch goes to kernel_metrics (values are already in base units:
ns, byte, hz, %); rule results go to kernel_rules.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from crossview.errors import InputError
from crossview.sources import guard
from crossview.sources.artifact_report import ArtifactReport
from crossview.sources.ncu import ingest, native_log
from crossview.sources.ncu.record import KernelRecord, MetricRow, RuleRow
from crossview.sources.ncu.rep_format import MAGIC, walk
from crossview.sources.ncu.units import normalize
from crossview.store.store import Store

KIND = "ncu-rep"
EXTRA_HINT = "pip install 'crossview[ncu]' (or: pip install ncu-report)"
SECTION = "report"
_MSG_TYPE = {0: "", 1: "INF", 2: "OPT", 3: "WRN", 4: "ERR"}
_SPEEDUP_TYPE = {0: "", 1: "local", 2: "global"}
_LINK = re.compile(r"@\w+:[^:@]*:([^@]*)@")  # "@section:Id:Title@" → "Title"


def sniff(head: bytes, path: Path) -> bool:
    return head[:4] == MAGIC


def _module() -> Any:
    try:
        # lazy: optional dependency (ncu_report: extra `ncu`)
        import ncu_report
    except ImportError:
        return None
    return ncu_report


def read(path: Path, store: Store) -> ArtifactReport:
    path = Path(path)
    try:
        size = path.stat().st_size
        with open(path, "rb") as f:
            magic = f.read(4)
            layout = walk(f, size) if magic == MAGIC else None
    except OSError as e:
        raise InputError(path, f"cannot read: {e.strerror or e}") from None
    if size == 0:
        raise InputError(path, "empty file", "empty")
    if layout is None:
        raise InputError(path, "not an Nsight Compute report (no NVR header)", "unsupported")
    if layout.problem:
        raise InputError(path, f"corrupt .ncu-rep, {layout.problem}; the report is cut or "
                         "damaged, re-copy it or re-run ncu")
    N = _module()
    if N is None:
        raise InputError(path, f"reading .ncu-rep needs the optional ncu-report package: "
                         f"{EXTRA_HINT}; or export it with `ncu --import {path.name} --csv "
                         "--page details`", "unsupported")
    with native_log.caught() as said:  # its protobuf log lines: this file's problems
        try:
            ctx = N.load_report(str(path))
            recs = [_record(N, ctx.range_by_idx(r).action_by_idx(a), r, a, path)
                    for r in range(ctx.num_ranges())
                    for a in range(ctx.range_by_idx(r).num_actions())]
            error = None
        except Exception as e:  # the native loader: any failure is this file's problem
            recs, error = [], f"{type(e).__name__}: {e}"
    native = f" ({guard.quote('; '.join(said), 200)})" if said else ""
    if error is not None:
        raise InputError(path, f"ncu_report cannot load it: {error}{native}")
    if layout.results and not recs:
        raise InputError(path, f"damaged .ncu-rep: it holds {layout.results} profiled "
                         f"result(s), ncu_report loaded none{native}")
    problems = []
    if len(recs) != layout.results:
        problems.append(f"the file holds {layout.results} profiled results, ncu_report "
                        f"loaded {len(recs)}")
    if said:
        problems.append("ncu_report could not parse part of it: "
                        + guard.quote("; ".join(said), 200))
    return ingest.write(store, path, KIND, recs, problems)


def _value(N: Any, m: Any) -> tuple[float | None, str]:
    kind = m.kind()
    if kind == N.IMetric.ValueKind_STRING:
        return None, str(m.as_string() or "")
    if kind in (N.IMetric.ValueKind_UINT32, N.IMetric.ValueKind_UINT64):
        v = float(m.as_uint64())
    elif kind in (N.IMetric.ValueKind_DOUBLE, N.IMetric.ValueKind_FLOAT):
        v = float(m.as_double())
    else:
        return None, ""
    return v, repr(v) if v != int(v) else str(int(v))


def _record(N: Any, action: Any, r: int, a: int, path: Path) -> KernelRecord:
    try:
        name = action.name(N.IAction.NameBase_DEMANGLED) or action.name()
    except TypeError:
        name = action.name()
    rec = KernelRecord(ncu_id=str(a), name=str(name), launch_key=f"{path}#{r}.{a}")
    attrs: dict[str, tuple[float | None, str]] = {}
    for metric in action.metric_names():
        if metric.startswith(("breakdown:", "regex:")):
            continue  # ncu's own bookkeeping: lists of metric names, not values
        m = action.metric_by_name(metric)
        value, text = _value(N, m)
        attrs[metric] = (value, text)
        if value is None and not text:
            continue
        raw_unit = str(m.unit() or "")
        norm, unit = normalize(value, raw_unit)
        rec.metrics.append(MetricRow(SECTION, metric, norm, unit, text, raw_unit))
    _launch(rec, attrs)
    rec.rules = [_rule(N, x) for x in action.rule_results()]
    return rec


def _num(attrs: dict[str, tuple[float | None, str]], key: str) -> int | None:
    v = attrs.get(key, (None, ""))[0]
    return int(v) if v is not None else None


def _launch(rec: KernelRecord, attrs: dict[str, tuple[float | None, str]]) -> None:
    rec.device_name = attrs.get("device__attribute_display_name", (None, ""))[1] or None
    rec.device = _num(attrs, "launch__device_id")
    rec.stream = _num(attrs, "launch__stream_id")
    ctx = _num(attrs, "launch__context_id")
    rec.context = str(ctx) if ctx is not None else None
    rec.sm_count = _num(attrs, "device__attribute_multiprocessor_count")
    rec.mem_bytes = _num(attrs, "device__attribute_total_memory")
    major = _num(attrs, "device__attribute_compute_capability_major")
    minor = _num(attrs, "device__attribute_compute_capability_minor")
    rec.cc = f"{major}.{minor}" if major is not None else None
    for what, prefix in (("grid", "launch__grid_dim_"), ("block", "launch__block_dim_")):
        dims = [_num(attrs, prefix + d) for d in "xyz"]
        if all(d is not None for d in dims):
            setattr(rec, what, "(" + ", ".join(str(d) for d in dims) + ")")


def _rule(N: Any, r: Any) -> RuleRow:
    msg = r.rule_message() if r.has_rule_message() else {}
    msg = msg if isinstance(msg, dict) else {}
    speedup_type, speedup = "", None
    if r.has_speedup_estimation():
        s = r.speedup_estimation()
        get = s.get if isinstance(s, dict) else (lambda k, _s=s: getattr(_s, k, None))
        st = get("speedup_type")
        speedup_type = _SPEEDUP_TYPE.get(st, str(st or "")) if isinstance(st, int) else str(
            st or "")
        sp = get("speedup")
        speedup = float(sp) if isinstance(sp, int | float) else None
    return RuleRow(
        section=str(r.section_identifier() or ""), rule=str(r.rule_identifier() or ""),
        type=_MSG_TYPE.get(int(msg.get("type", 0) or 0), ""),
        title=str(msg.get("title", "")), message=_LINK.sub(r"\1", str(msg.get("message", ""))),
        speedup_type=speedup_type, speedup_pct=speedup,
    )

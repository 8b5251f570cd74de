"""Inventory: every artifact of a bundle with its detected kind, its capture-validation result
(each problem with the fix for the capture) and the rigor tier it supplies."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from crossview.core.finding import Finding
from crossview.errors import UsageError
from crossview.knowledge import synthesis as kb
from crossview.knowledge.thresholds import defaults
from crossview.scope.filter import Filter
from crossview.scope.resolve import resolve
from crossview.sources import guard, outputs
from crossview.sources.artifact_report import ArtifactReport
from crossview.sources.ncu.ingest import name_devices
from crossview.sources.registry import read_all
from crossview.store import stdlib
from crossview.store.store import Store
from crossview.synthesis import trace_window
from crossview.synthesis.bundle import Bundle
from crossview.verdict import decide
from crossview.views.host import sampled
from crossview.views.summary import kernel_summary
from crossview.views.views import Views
from crossview.views.workload import bench


@dataclass(frozen=True)
class CaptureProblem:
    problem: str  # empty | unreadable | no-gpu-events | no-kernels | … (synthesis.yaml)
    detail: str
    fix: str

    def to_dict(self) -> dict[str, str]:
        return {"problem": self.problem, "detail": self.detail, "fix": self.fix}


@dataclass
class Entry:
    path: str  # relative to the bundle
    kind: str  # reader kind (sources/registry.py)
    source: str  # the profiler it stands for (synthesis.yaml sources)
    tier: str  # L1 | L2 | L3 | L4 | bench | none
    counts: bool  # one of the profiler views a cross-view needs
    valid: bool
    phase: str | None
    phase_from: str
    what: str  # what it holds, in words ("46 kernel rows", …)
    problems: list[CaptureProblem] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    artifact_id: int | None = None
    # read whole, but the reader doubts something (clocks, names…): also among the notes,
    # and one warning line on stderr
    warnings: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, object]:
        return {"path": self.path, "kind": self.kind, "source": self.source,
                "tier": self.tier, "valid": self.valid, "phase": self.phase or "unknown",
                "phase_from": self.phase_from, "holds": self.what,
                "capture_problems": [p.to_dict() for p in self.problems],
                "notes": list(self.notes),
                # the doubt by itself: an agent (MCP) sees no stderr line
                **({"warnings": list(self.warnings)} if self.warnings else {})}


@dataclass
class Inventory:
    bundle: Bundle
    entries: list[Entry]
    other_files: list[str]  # in the bundle, not a format crossview reads
    store: Store
    views: Views | None
    findings: list[Finding]
    gpu_named: str | None  # the GPU name given to captures that lack one, and by whom

    def valid(self) -> list[Entry]:
        return [e for e in self.entries if e.valid]

    def sources(self) -> dict[str, list[str]]:
        """Distinct valid profiler sources → their artifacts."""
        out: dict[str, list[str]] = {}
        for e in self.valid():
            if e.counts:
                out.setdefault(e.source, []).append(e.path)
        return dict(sorted(out.items()))

    def tiers(self) -> list[str]:
        return sorted({e.tier for e in self.valid() if e.tier.startswith("L")})

    def entry(self, abs_path: str) -> Entry | None:
        rel = self.bundle.rel(abs_path)
        return next((e for e in self.entries if e.path == rel), None)

    def to_dict(self) -> dict[str, object]:
        return {"bundle": str(self.bundle.root), "context": self.bundle.context_dict(),
                "unknown_context": self.bundle.unknowns(),
                "context_sources": dict(sorted(self.bundle.context_sources.items())),
                "capture": {k: self.bundle.capture[k] for k in sorted(self.bundle.capture)},
                "warnings": list(self.bundle.warnings),
                "gpu_named": self.gpu_named,
                "artifacts": [e.to_dict() for e in self.entries],
                "other_files": list(self.other_files),
                "sources": self.sources(), "tiers": self.tiers()}


def _one(store: Store, sql: str, aid: int) -> int:
    return int(store.sql(sql, {"a": aid}).fetchall()[0][0] or 0)


def _epoch_ns(text: object) -> int | None:
    if not text:
        return None
    try:
        dt = datetime.fromisoformat(str(text).replace("Z", "+00:00"))
    except ValueError:
        return None
    return int(dt.timestamp() * 1e9)


def _host_what(store: Store, aid: int) -> tuple[str, int]:
    """('N host CPU samples (…)', cores) — ticks, not rows: a tick writes several metrics."""
    ticks, cores = store.sql(
        "SELECT count(DISTINCT seq), count(DISTINCT json_extract_string(labels, '$.core'))"
        " FROM metric_samples WHERE artifact_id=$a", {"a": aid}).fetchall()[0]
    return (f"{int(ticks or 0):,} host CPU samples"
            + (f" ({int(cores)} cores)" if cores else " (all CPUs only)"), int(cores or 0))


def _classify(store: Store, r: ArtifactReport) -> tuple[str, str, bool, str]:
    """(source, tier, counts, what) of one read artifact."""
    table = kb.table("sources")
    aid = r.artifact_id
    if aid is not None and sampled.rows_held(store, aid) and r.kind not in ("kineto",):
        has_gpu = _one(store, "SELECT count(*) FROM kernels WHERE artifact_id=$a", aid)
        if not has_gpu or r.kind not in table:
            s = kb.table("sampled")
            return s["source"], s["tier"], True, s["what"]
    if r.kind == "prometheus" and aid is not None:
        srcs = {s for (s,) in store.sql("SELECT DISTINCT source FROM metric_samples WHERE"
                                        " artifact_id=$a", {"a": aid}).fetchall()}
        if srcs and srcs <= set(kb.table("serving_metric_sources")):
            s = kb.table("serving")
            return s["source"], s["tier"], s["counts"], s["what"]
    if r.kind in table:
        s = table[r.kind]
        return s["source"], s["tier"], s["counts"], s["what"]
    rigor = None
    if aid is not None:
        rigor = store.sql("SELECT rigor FROM input_files WHERE artifact_id=$a",
                          {"a": aid}).fetchall()[0][0]
    return r.kind, str(rigor or "none"), bool(rigor and str(rigor).startswith("L")), r.kind


def _validate(store: Store, bundle: Bundle, r: ArtifactReport, e: Entry) -> None:
    """Fill e.problems / e.what / e.valid from what the capture holds."""
    def problem(pid: str, detail: str) -> None:
        e.problems.append(CaptureProblem(pid, detail, kb.capture_fix(pid, e.source)))

    path = Path(r.path)
    if path.is_file() and path.stat().st_size == 0:
        problem("empty", "the file is empty (0 bytes)")
    elif r.status == "empty":
        problem("empty", "; ".join(r.problems) or "no data")
    elif r.status not in ("ok", "partial"):
        said = "; ".join(r.problems) or r.status
        problem("no-access" if "Permission denied" in said else "unreadable", said)
    aid = r.artifact_id
    if e.problems or aid is None:
        e.valid, e.what = False, "nothing read"
        return
    a = {"a": aid}
    if e.source in ("nsys", "pytorch-profiler", "sampled-stacks"):
        kernels = _one(store, "SELECT count(*) FROM kernels WHERE artifact_id=$a", aid)
        summary = len(kernel_summary(store, aid))
        samples = sampled.rows_held(store, aid)
        if r.kind == "nsys-stats":
            e.what = f"{summary:,} kernel summary rows (no timeline)"
            if not summary:
                problem("no-kernel-summary", "no cuda_gpu_kern_sum rows in this export")
        elif e.source == "sampled-stacks":
            e.what = f"{samples:,} stack samples" + (f", {kernels:,} kernels" if kernels
                                                     else "")
            if not samples:
                problem("no-samples", "no stack samples")
        else:
            e.what = f"{kernels:,} GPU kernels" + (f", {samples:,} CPU samples" if samples
                                                   else "")
            if not kernels:
                problem("no-gpu-events", "the trace holds no GPU kernel")
    elif e.source == "ncu":
        n = _one(store, "SELECT count(*) FROM profiled_launches WHERE artifact_id=$a", aid)
        e.what = f"{n:,} profiled kernel launch(es)"
        if not n:
            problem("no-kernels", "no kernel launch in this Nsight Compute capture")
    elif e.source in ("gpu-counters", "serving-metrics", "host-cpu"):
        n, lo, hi = store.sql("SELECT count(*), min(ts_ns), max(ts_ns) FROM metric_samples"
                              " WHERE artifact_id=$a", a).fetchall()[0]
        e.what = f"{int(n or 0):,} metric samples"
        if e.source == "host-cpu":
            e.what, cores = _host_what(store, aid)
            if n and not cores:
                e.notes.append("no per-core samples (sampler older than core_util_pct): a "
                               "pinned single core cannot be told from spread load")
        start, end = (_epoch_ns(bundle.capture.get(k)) for k in ("started", "ended"))
        slack_ns = int(float(kb.table("capture_window_slack_s")) * 1e9)
        tw = trace_window.check(store, aid, int(lo), int(hi)) if n and lo is not None else None
        if not n:
            problem("empty", "no metric samples")
        elif tw is not None and tw.checked:
            # the trace's own clock is known: judge against the traced steps, not bundle.yaml
            if tw.outside:
                e.problems.append(CaptureProblem("outside-window", tw.outside, kb.capture_fix(
                    "outside-trace-window", e.source)))
            e.notes += tw.notes
        elif start and end and lo is not None and (
                hi < start - slack_ns or lo > end + slack_ns):
            problem("outside-window",
                    f"samples span {datetime.fromtimestamp(lo / 1e9).isoformat()} … "
                    f"{datetime.fromtimestamp(hi / 1e9).isoformat()} (UTC epoch), none "
                    f"inside {bundle.capture.get('started')} … {bundle.capture.get('ended')}")
    elif e.source == "bench":
        n = bench.trial_count(store, aid)
        e.what = f"{n:,} benchmark trial(s)"
    if r.status == "partial":  # read in part: listed with what it holds, never a valid source
        problem("partial", "; ".join(r.problems) or "read in part")
    e.valid = not e.problems


def take(bundle: Bundle, gpu: str | None = None) -> Inventory:
    """Read every artifact of the bundle once (one Store) and validate each."""
    store = Store()
    reports = read_all(bundle.files, store)
    stdlib.ensure(store)  # the inventory, reconcile.py and bundle_context read named views
    named = None
    name = gpu or bundle.context.gpu or bundle.context.hardware
    if name and any(r.status in ("ok", "partial") for r in reports):
        try:
            how = "--gpu" if gpu else "bundle.yaml"
            if name_devices(store, str(name), how):
                named = f"{name} ({how})"
        except UsageError as err:
            if gpu:
                raise
            bundle.warnings.append(f"bundle.yaml names the GPU {name!r}, which has no "
                                   f"ceilings: {err}")
    entries = []
    for r in reports:
        facts = bundle.facts_of(r.path)
        e = Entry(bundle.rel(r.path), r.kind, "unknown", "none", False, False, facts.phase,
                  facts.phase_from, "", notes=list(r.notes), artifact_id=r.artifact_id)
        if r.artifact_id is not None:
            e.source, e.tier, e.counts, _what = _classify(store, r)
        else:
            e.source = kb.table("sources").get(r.kind, {}).get("source", r.kind)
        _validate(store, bundle, r, e)
        if r.status == "ok" and r.problems:
            e.notes += r.problems
            e.warnings = list(r.problems)
        entries.append(e)
    entries.sort(key=lambda x: x.path)
    read = {e.path for e in entries}
    # crossview's own outputs (marked, or listed in .crossview-outputs) are not "other files"
    others = sorted(p for p in (bundle.rel(f) for f in guard.walk(bundle.root)
                                if f.is_file() and not outputs.is_own_output(f))
                    if p not in read and p != "bundle.yaml" and not p.startswith("findings/"))
    views, findings = None, []
    if any(e.valid for e in entries):
        views = Views(store, resolve(store, Filter()), defaults())
        findings = decide(views)
    return Inventory(bundle, entries, others, store, views, findings, named)

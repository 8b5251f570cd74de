"""`crossview ab`: group benchmark trials into a baseline and a variant arm, check that they are
comparable (conventions.md §7), and give each metric a verdict.

Decision rule (architecture.md "A/B"): a metric is a `win`/`loss` only when BOTH
  1. the exact permutation (Mann-Whitney) test gives p ≤ α (default 0.10: the smallest p 3 vs 3
     can reach, i.e. complete separation of the arms), and
  2. the bootstrap CI of the ratio of medians lies entirely beyond 1 ± noise on that side.
Otherwise `null` (no change beyond noise shown); `insufficient (why)` when it cannot be judged.
Condition 1 bounds the false-positive rate by α; condition 2 only makes it smaller.
"""

from __future__ import annotations

import math
import re
import statistics
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

from crossview.errors import InputError, UsageError
from crossview.experiments import capture_trials, cold
from crossview.experiments.ab_stats import Comparison, compare
from crossview.knowledge.loader import load_yaml
from crossview.knowledge.thresholds import defaults
from crossview.sources.registry import read_all
from crossview.store.store import Store
from crossview.views.workload import bench

_BENCH_KINDS = ("vllm-bench", "bench-generic")
# Context fields that describe one run, not the setup: never a reason to refuse
_PER_RUN = ("date", "isl_measured_mean", "osl_measured_mean")
_NODE = ("hostname", "gpu_uuids", "gpu")  # the node identity, checked first


@dataclass
class Arm:
    name: str  # baseline | variant
    paths: list[str]
    values: dict[str, list[float]] = field(default_factory=dict)  # metric → one value/trial
    units: dict[str, str] = field(default_factory=dict)
    contexts: list[dict[str, object]] = field(default_factory=list)
    # per trial, in order: (file, trial number), its metrics, and the cold flag (None = warm)
    trial_ids: list[tuple[str, int]] = field(default_factory=list)
    trials: list[dict[str, float]] = field(default_factory=list)
    cold: list[str | None] = field(default_factory=list)
    excluded: list[int] = field(default_factory=list)  # trial indexes left out (cold)
    first_ttft: list[tuple[float, float] | None] = field(default_factory=list)  # (first, median)
    kind: str = "benchmark"  # benchmark | captures (experiments/capture_trials.py)


@dataclass
class MetricResult:
    metric: str
    unit: str
    direction: str | None  # higher | lower | None (unknown)
    n_base: int
    n_var: int
    verdict: str  # win | loss | null | insufficient
    reason: str
    cmp: Comparison | None = None


@dataclass
class ABResult:
    baseline: Arm
    variant: Arm
    metrics: list[MetricResult]
    refusals: list[str]
    notes: list[str]
    noise_pct: float
    alpha: float
    ci_level: float


@cache
def _directions() -> tuple[dict[str, str], list[tuple[re.Pattern[str], str]]]:
    data = load_yaml("metric_direction.yaml")
    names = {n: d for d in ("higher", "lower") for n in data[d].get("names", [])}
    pats = [(re.compile(p), d) for d in ("higher", "lower") for p in data[d].get("patterns", [])]
    return names, pats


def direction(metric: str, higher: set[str], lower: set[str]) -> str | None:
    if metric in higher:
        return "higher"
    if metric in lower:
        return "lower"
    names, pats = _directions()
    if metric in names:
        return names[metric]
    return next((d for p, d in pats if p.match(metric)), None)


def load_arm(name: str, paths: list[Path]) -> Arm:
    """Read one arm's result files; any unreadable or non-benchmark file is an InputError.
    An arm of profiler captures (every file a Kineto / nsys timeline) is read as capture
    trials (experiments/capture_trials.py)."""
    if not paths:
        raise UsageError(f"--{name}: no result files given")
    captures = [capture_trials.is_capture(p) for p in paths]
    if all(captures):
        got = capture_trials.load(name, paths)
        arm = Arm(name, [str(p) for p in paths], contexts=got.contexts,
                  trial_ids=got.trial_ids, trials=got.trials,
                  first_ttft=[None] * len(got.trials), kind="captures")
        for t in got.trials:
            for m, v in t.items():
                arm.values.setdefault(m, []).append(v)
                arm.units[m] = "ms"
        return arm
    if any(captures):
        raise UsageError(f"--{name}: mixes profiler captures and benchmark results: an arm's "
                         "trials are all captures or all benchmark files")
    store = Store()
    arm = Arm(name, [str(p) for p in paths])
    for rep in read_all(paths, store):
        if rep.kind not in _BENCH_KINDS:  # another tool's file, or a capture, not trials
            raise InputError(rep.path, "not a benchmark result crossview reads (a `vllm bench "
                             "serve --save-result` JSON or a metric,value CSV/JSONL)"
                             + (f": {rep.problems[0]}" if rep.problems else ""))
        if rep.status != "ok" or rep.problems:
            # an A/B trial with a skipped row (NaN, a malformed line) is not a trial to trust
            raise InputError(rep.path, "; ".join(rep.problems) or rep.status)
    rows = bench.trial_values(store)
    if not rows:
        raise InputError(", ".join(arm.paths), f"{name} arm: no benchmark trials found", "empty")
    keys: dict[tuple[int, str, int], int] = {}
    for aid, arm_name, trial, metric, value, unit, path in rows:
        if not math.isfinite(value):
            raise InputError(", ".join(arm.paths), f"{name} arm: {metric} is {value}")
        i = keys.setdefault((aid, arm_name, trial), len(keys))
        if i == len(arm.trials):
            arm.trial_ids.append((str(path), int(trial)))
            arm.trials.append({})
        arm.trials[i][metric] = float(value)
        arm.values.setdefault(metric, []).append(float(value))
        arm.units.setdefault(metric, unit or "")
    # per-request TTFTs (--save-detailed): the first request's and the trial's median, seconds
    firsts = bench.request_ttfts(store)
    arm.first_ttft = [firsts.get(k) for k in keys]
    arm.contexts = [c.context for c in bench.trial_contexts(store)]
    store.close()
    return arm


def _field_values(arm: Arm, key: str) -> set[str]:
    return {str(c.get(key, "unknown")) for c in arm.contexts}


def preconditions(a: Arm, b: Arm, allow: set[str]) -> tuple[list[str], list[str]]:
    """(refusals, notes): refusals name the field and both values; unknown is reported."""
    refusals: list[str] = []
    notes: list[str] = []
    for key in _NODE:
        va, vb = _field_values(a, key), _field_values(b, key)
        if "unknown" in va | vb:
            where = " and ".join(n for n, v in (("baseline", va), ("variant", vb))
                                 if "unknown" in v)
            notes.append(f"{key} unknown (not recorded) in {where} trials: "
                         "same node not verified on it")
        elif va != vb and key not in allow:
            refusals.append(f"different nodes: {key} baseline {'/'.join(sorted(va))}, "
                            f"variant {'/'.join(sorted(vb))}")
    keys = sorted({k for c in a.contexts + b.contexts for k in c}
                  - set(_PER_RUN) - set(_NODE) - {"metadata"})
    for arm in (a, b):
        within = [k for k in keys if len(_field_values(arm, k)) > 1]
        if within:
            refusals.append(f"{arm.name} trials differ among themselves in: " + ", ".join(
                f"{k} ({'/'.join(sorted(_field_values(arm, k)))})" for k in within))
    differ = [k for k in keys if _field_values(a, k) != _field_values(b, k)]
    lever = [k for k in differ if k in allow]
    if lever:
        notes.append("lever (allowed to differ): " + ", ".join(
            f"{k} {'/'.join(sorted(_field_values(a, k)))} → "
            f"{'/'.join(sorted(_field_values(b, k)))}" for k in lever))
    other = [k for k in differ if k not in allow]
    if other:
        refusals.append("contexts differ beyond the lever in: " + ", ".join(
            f"{k} (baseline {'/'.join(sorted(_field_values(a, k)))}, variant "
            f"{'/'.join(sorted(_field_values(b, k)))})" for k in other)
            + " — rerun with the same setup, or name the lever with --allow-diff FIELD")
    return refusals, notes


def verdict(c: Comparison, d: str, noise_pct: float, alpha: float) -> tuple[str, str]:
    lo, hi = c.ci
    band = noise_pct / 100
    if abs(c.delta_pct) < noise_pct:
        return "null", f"within noise (Δ {c.delta_pct:+.2f} % inside ± {noise_pct:g} %)"
    if c.p > alpha:
        return "null", f"not significant (p {c.p:.3g} > α {alpha:g})"
    if lo > 1 + band:
        return ("win" if d == "higher" else "loss"), "CI above 1 + noise"
    if hi < 1 - band:
        return ("win" if d == "lower" else "loss"), "CI below 1 − noise"
    return "null", f"CI [{lo:.4f}, {hi:.4f}] reaches into 1 ± {noise_pct:g} %"


def mark_cold(arm: Arm, hi_set: set[str], lo_set: set[str], exclude: bool) -> list[str]:
    """Flag cold trials (experiments/cold.py); leave them out only when `exclude`."""
    arm.cold = cold.flags(arm.trials, lambda m: direction(m, hi_set, lo_set), arm.first_ttft)
    notes = []
    for i, why in enumerate(arm.cold):
        if why:
            path, trial = arm.trial_ids[i]
            notes.append(f"{arm.name} trial {trial} of {path} flagged cold — {why}; "
                         + ("left out (--exclude-cold)" if exclude else
                            "kept (leave it out with --exclude-cold)"))
    if exclude and any(arm.cold):
        arm.excluded = [i for i, w in enumerate(arm.cold) if w]
        arm.values = {}
        for i, t in enumerate(arm.trials):
            if i not in arm.excluded:
                for m, v in t.items():
                    arm.values.setdefault(m, []).append(v)
    return notes


def run_ab(baseline: list[Path], variant: list[Path], metrics: list[str] | None = None,
           noise_pct: float | None = None, alpha: float | None = None,
           allow_diff: set[str] | None = None, higher: set[str] | None = None,
           lower: set[str] | None = None, exclude_cold: bool = False) -> ABResult:
    th = defaults()
    noise = th.ab_noise_pct if noise_pct is None else noise_pct
    a_level = th.ab_alpha if alpha is None else alpha
    hi_set, lo_set = higher or set(), lower or set()
    a, b = load_arm("baseline", baseline), load_arm("variant", variant)
    if a.kind != b.kind:
        raise UsageError(f"--baseline holds {a.kind} trials, --variant {b.kind}: compare "
                         "captures with captures, benchmark results with benchmark results")
    refusals, notes = preconditions(a, b, allow_diff or set())
    for arm in (a, b):
        notes += mark_cold(arm, hi_set, lo_set, exclude_cold)
    if metrics:
        names = list(dict.fromkeys(metrics))
    else:  # every metric with a known direction that either arm recorded
        names = [m for m in sorted(set(a.values) | set(b.values))
                 if direction(m, hi_set, lo_set)]
    out: list[MetricResult] = []
    for m in names:
        xa, xb = a.values.get(m, []), b.values.get(m, [])
        d = direction(m, hi_set, lo_set)
        r = MetricResult(m, a.units.get(m) or b.units.get(m, ""), d, len(xa), len(xb),
                         "insufficient", "")
        if not xa or not xb:
            r.reason = f"not recorded in the {'baseline' if not xa else 'variant'} arm"
        elif min(len(xa), len(xb)) < th.ab_min_trials:
            r.reason = f"fewer than {th.ab_min_trials} trials per arm (n {len(xa)} vs {len(xb)})"
        elif statistics.median(xa) == 0:
            r.reason = "baseline median is 0: no ratio"
        else:
            r.cmp = compare(xa, xb, th.ab_ci_level, th.ab_bootstrap_resamples)
            if refusals:
                r.reason = "refused: " + "; ".join(refusals)
            elif d is None:
                r.reason = "direction unknown (add it with --higher-is-better/--lower-is-better)"
            else:
                r.verdict, r.reason = verdict(r.cmp, d, noise, a_level)
        out.append(r)
    return ABResult(a, b, out, refusals, notes, noise, a_level, th.ab_ci_level)

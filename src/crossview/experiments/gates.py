"""The VERDICT gate (issue 17): an A/B promotes a ledger lever from DRAFT to VERDICT only when
  - arms:    the arms are comparable with each other (`ab.preconditions` refused nothing),
  - node:    both arms ran on one node, known by hostname AND GPU UUIDs,
  - trials:  ≥ ab_min_trials trials per arm on the isolating metric,
  - metric:  an isolating metric matches the lever's phase / target (ab_gates.yaml), and
  - context: the arms' model, GPU, engine, parallelism and workload shape match the bundle's
             Context the lever came from, except the fields the lever changes.
Every gate is recorded with what it checked; a failed gate keeps the row DRAFT. Pure: the
inputs are the A/B result, the ledger row, the bundle Context and the user's node claim."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from typing import Any

from crossview.experiments.ab import ABResult, Arm, MetricResult
from crossview.experiments.bundle_context import near_bundle
from crossview.knowledge import hardware
from crossview.knowledge.loader import load_yaml
from crossview.knowledge.thresholds import defaults

UNKNOWN = "unknown"
_HF_CACHE = re.compile(r"models--([^/]+?)--([^/]+)")


@dataclass(frozen=True)
class Gate:
    name: str  # arms | node | trials | metric | context
    passed: bool
    detail: str

    def to_dict(self) -> dict[str, object]:
        return {"gate": self.name, "passed": self.passed, "detail": self.detail}


@dataclass(frozen=True)
class NodeClaim:
    """Node identity the user states for trials that recorded none (--node / --gpu-uuid)."""

    hostname: str | None = None
    gpu_uuids: str | None = None


@cache
def table() -> dict[str, Any]:
    return load_yaml("ab_gates.yaml")


def _norm(key: str, v: object) -> str:
    """A comparable spelling of one Context value (ids, GPU names, numbers, UUID lists)."""
    if v is None or str(v) == UNKNOWN or v == "" or v == []:
        return UNKNOWN
    if key == "gpu_uuids":
        items = v if isinstance(v, list) else re.split(r"[,\s]+", str(v))
        # nvidia-smi / NVML write "GPU-<uuid>", nsys TARGET_INFO_GPU the bare uuid
        return ",".join(sorted(str(x).strip().lower().removeprefix("gpu-") for x in items
                               if str(x).strip()))
    if key == "model":
        s = str(v).strip().rstrip("/")
        m = _HF_CACHE.search(s)  # a Hugging Face cache path names the repo id
        return (f"{m.group(1)}/{m.group(2)}" if m else s).lower()
    if key in ("gpu", "hardware"):
        spec = hardware.match(str(v))
        return spec.hw_key if spec else str(v).strip().lower()
    if isinstance(v, bool):
        return str(v).lower()
    try:
        f = float(str(v))
    except ValueError:
        return str(v).strip().lower()
    return str(int(f)) if f.is_integer() else repr(f)


def _same_model(got: set[str], want: str) -> bool:
    """A local weights folder (`/models/DeepSeek-OCR`) names the same model as the repo id
    `deepseek-ai/DeepSeek-OCR` when its last component is the repo's name."""
    def local(m: str) -> bool:
        return m.startswith(("/", "./", "~"))
    last = {m.rstrip("/").rsplit("/", 1)[-1] for m in got | {want}}
    return len(last) == 1 and any(local(m) for m in got | {want})


def arm_node(arm: Arm, key: str, claim: str | None) -> tuple[set[str], str]:
    """(values, where): the arm's recorded node identity for one field and its origin."""
    known = {_norm(key, c.get(key)) for c in arm.contexts} - {UNKNOWN}
    missing = any(_norm(key, c.get(key)) == UNKNOWN for c in arm.contexts)
    where = "the trials' metadata"
    if missing:
        near = {_norm(key, near_bundle(p).get(key)) for p in arm.paths}
        if UNKNOWN not in near:
            known |= near
            where = "bundle.yaml next to the trials"
        elif claim:
            known.add(_norm(key, claim))
            where = "the command line"
        else:
            known.add(UNKNOWN)
    return known, where


def node_gate(a: Arm, b: Arm, claim: NodeClaim) -> Gate:
    fails, seen = [], []
    for key in table()["node_fields"]:
        c = getattr(claim, key, None)
        va, wa = arm_node(a, key, c)
        vb, wb = arm_node(b, key, c)
        if UNKNOWN in va | vb:
            where = " and ".join(n for n, v in (("baseline", va), ("variant", vb))
                                 if UNKNOWN in v)
            opt = "--node HOST" if key == "hostname" else "--gpu-uuid UUID"
            fails.append(f"{key} unknown in the {where} trials (record it with "
                         f"`--metadata {key}=…` or state it with {opt})")
        elif len(va) > 1 or len(vb) > 1 or va != vb:
            fails.append(f"{key} differs: baseline {'/'.join(sorted(va))}, variant "
                         f"{'/'.join(sorted(vb))}")
        elif c and _norm(key, c) not in va:
            fails.append(f"{key}: trials record {'/'.join(sorted(va))}, the command line "
                         f"says {c}")
        else:
            seen.append(f"{key} {next(iter(va))} (from {wa if wa == wb else wa + ' / ' + wb})")
    if fails:
        return Gate("node", False, "same node not verified: " + "; ".join(fails))
    return Gate("node", True, "same node: " + ", ".join(seen))


def target_of(row: dict[str, Any]) -> str | None:
    if row.get("target") in table()["lever_metrics"]:
        return str(row["target"])
    raw = row.get("subject")
    subject: dict[str, Any] = raw if isinstance(raw, dict) else {}
    if subject.get("target") in table()["lever_metrics"]:
        return str(subject["target"])
    phase = subject.get("phase")
    return table()["target_by_phase"].get(phase) if phase else None


def isolating(res: ABResult, target: str | None) -> list[MetricResult]:
    if target is None:
        return []
    pats = [re.compile(p) for p in table()["lever_metrics"][target]["patterns"]]
    return [m for m in res.metrics if any(p.match(m.metric) for p in pats)]


def metric_gate(res: ABResult, row: dict[str, Any]) -> Gate:
    target = target_of(row)
    compared = ", ".join(m.metric for m in res.metrics) or "none"
    if target is None:
        return Gate("metric", False, "the lever names no phase or target (ledger row "
                    "`subject.phase` or `target:` prefill|decode|throughput|step): the isolating "
                    f"metric is unknown (compared: {compared})")
    words = table()["lever_metrics"][target]["words"]
    iso = isolating(res, target)
    if not iso:
        return Gate("metric", False, f"a {target} lever is judged on {words}; compared: "
                    f"{compared} — rerun with --metric naming it")
    return Gate("metric", True, f"{target} lever judged on {', '.join(m.metric for m in iso)}"
                + (f" (also compared, not used for the verdict: "
                   f"{', '.join(m.metric for m in res.metrics if m not in iso)})"
                   if len(iso) < len(res.metrics) else ""))


def trials_gate(res: ABResult, row: dict[str, Any]) -> Gate:
    need = defaults().ab_min_trials
    ms = isolating(res, target_of(row)) or res.metrics
    if not ms:
        return Gate("trials", False, "no metric compared")
    short = [f"{m.metric} n {m.n_base} vs {m.n_var}" for m in ms
             if min(m.n_base, m.n_var) < need]
    if short:
        return Gate("trials", False, f"fewer than {need} trials per arm: " + ", ".join(short))
    return Gate("trials", True, f"≥ {need} trials per arm (" + ", ".join(
        f"{m.metric} n {m.n_base}+{m.n_var}" for m in ms) + ")")


def context_gate(res: ABResult, bundle_ctx: dict[str, Any] | None, changes: set[str]) -> Gate:
    if not bundle_ctx:
        return Gate("context", False, "the ledger carries no bundle Context (pass the "
                    "synthesis JSON `crossview synthesize` wrote as --ledger): the arms "
                    "cannot be matched to the workload the lever came from")
    cfg = table()["context_gate"]
    fails: list[str] = []
    unverified: list[str] = []
    ok: list[str] = []
    for key in [*cfg["identity"], *cfg["when_known"]]:
        if key in changes:
            continue
        want = _norm(key, bundle_ctx.get(key))
        if key == "gpu" and want == UNKNOWN:
            want = _norm(key, bundle_ctx.get("hardware"))
        got = {_norm(key, c.get(key) if key != "gpu" or _norm(key, c.get(key)) != UNKNOWN
                     else c.get("hardware"))
               for c in res.baseline.contexts + res.variant.contexts}
        if want == UNKNOWN or UNKNOWN in got:
            side = "bundle" if want == UNKNOWN else "trials"
            (fails if key in cfg["identity"] else unverified).append(
                f"{key} unknown in the {side}")
        elif got != {want} and not (key == "model" and _same_model(got, want)):
            fails.append(f"{key}: trials {'/'.join(sorted(got))}, bundle {want}")
        else:
            ok.append(f"{key} {want}")
    tail = (f"; not verified (unknown): {', '.join(unverified)}" if unverified else "")
    if fails:
        return Gate("context", False, "arms do not match the bundle's Context: "
                    + "; ".join(fails) + tail)
    return Gate("context", True, "matches the bundle on " + (", ".join(ok) or "nothing")
                + (f" (lever changes: {', '.join(sorted(changes))})" if changes else "") + tail)


def evaluate(res: ABResult, row: dict[str, Any], bundle_ctx: dict[str, Any] | None,
             claim: NodeClaim, allow: set[str]) -> list[Gate]:
    changes = allow | {str(c) for c in row.get("changes") or []}
    arms = (Gate("arms", False, "; ".join(res.refusals)) if res.refusals
            else Gate("arms", True, "arms comparable (same setup but the lever)"))
    return [arms, node_gate(res.baseline, res.variant, claim), trials_gate(res, row),
            metric_gate(res, row), context_gate(res, bundle_ctx, changes)]

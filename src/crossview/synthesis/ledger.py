"""The ranked lever ledger (conventions.md §6): one row per addressable lever, ranked by the
recoverable time the data supports. Every row cites artifacts of the bundle; engine-src and
kernel rows without `source_refs` in bundle.yaml are kept but marked non-actionable."""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import Any

from crossview.core.finding import Finding
from crossview.core.measurement import Measurement
from crossview.identity import kernel_key as normalize
from crossview.knowledge import synthesis as kb
from crossview.synthesis import contradictions
from crossview.synthesis.bundle import SourceRef, phase_words, window_words
from crossview.synthesis.inventory import Inventory
from crossview.synthesis.kernel_effect import LABEL, kernel_saving
from crossview.synthesis.prediction_check import check
from crossview.synthesis.reconcile import FamilyRow, KernelJoin, Reconciliation
from crossview.units import duration

TYPES = ("config", "engine-src", "kernel")


@dataclass
class Lever:
    id: str  # stable across re-synthesis (persist.py keeps VERDICT / tried-null by id)
    lever: str
    type: str  # config | engine-src | kernel
    template: str  # kernel | fusion | copies | finding (experiment arms, synthesis.yaml)
    subject: dict[str, str]  # kernel / family / phase / fix, for the experiment templates
    recoverable: Measurement  # ns
    window_share: Measurement  # % of the window it is taken from
    basis: str  # how the number was derived
    evidence_artifacts: list[str]
    sol_rigor: str
    source_refs: list[SourceRef] = field(default_factory=list)
    rubric: dict[str, dict[str, str]] | None = None
    confidence: str = "DRAFT"
    ab: dict[str, object] | None = None
    rank: int = 0
    # how `recoverable` was predicted: "replay" (the replayed median step, replay/), "roofline"
    # (kernel time at a fraction of its roofline ceiling), "removed" (the copies' whole kernel
    # time), "fused" (runs of back-to-back one-op kernels each fused at its longest kernel,
    # views/device/fusion_runs.py), "bound" (≤, a finding's share),
    # None: not predicted (`basis` says what is missing); ranking follows the prediction
    effect: str | None = "bound"
    # why the expected effect could not be sized (kept, never dropped: issue 17), e.g. no
    # GPU named for the ceilings; the row then ranks after every sized row
    unsized: str | None = None
    # `crossview diff BEFORE AFTER --lever NAME --ledger …`: the replay's prediction beside the
    # measured twin and its error (synthesis/ledger_replay.py), carried by id (persist.py)
    replay_checks: list[Any] = field(default_factory=list)

    @property
    def actionable(self) -> bool:
        return self.type == "config" or bool(self.source_refs)

    def expected_effect(self) -> str:
        return self._effect() + (f"; {self.subject['per_token']}"
                                 if self.subject.get("per_token") else "")

    def _effect(self) -> str:
        if self.unsized:
            return (f"{self.unsized} (upper bound ≤ {self.recoverable.text()}, "
                    f"{self.window_share.text()} of {self.subject.get('window', 'the window')})")
        window = f"{self.window_share.text()} of {self.subject.get('window', 'the window')}"
        if self.effect is None:
            return f"not predicted: {self.basis}"
        if self.effect == "roofline":
            return (f"{self.recoverable.text()} kernel time saved at "
                    f"{self.subject['roofline_fraction']} of its roofline ceiling ({window}; "
                    f"{LABEL})")
        if self.effect == "replay":
            return f"{self.recoverable.text()} per step saved ({window}; {self.basis})"
        if self.effect == "removed":
            return f"{self.recoverable.text()} kernel time removed ({window}; {LABEL})"
        if self.effect == "fused":
            return f"{self.recoverable.text()} kernel time saved ({window}; {self.basis})"
        return f"≤ {self.recoverable.text()} recoverable ({window})"

    def measured_effect(self) -> str | None:
        """A VERDICT row's measured change (A/B median delta with its CI) next to the
        prediction and its error; None when no gated A/B measured it (issue 17)."""
        ab = self.ab or {}
        m, predicted = ab.get("measured"), ab.get("predicted")
        p: dict[str, Any] = predicted if isinstance(predicted, dict) else {}
        if self.confidence not in ("VERDICT", "tried-null") or not isinstance(m, dict):
            return None
        lo, hi = m["ci_pct"]
        pred = p.get("delta_pct")
        err = ab.get("prediction_error_pct_points")
        return (f"measured {m['delta_pct']:+.2f} % {m['metric']} (median {m['baseline_median']:.4g}"
                f" → {m['variant_median']:.4g} {m['unit']}, {100 * m['ci_level']:g} % CI "
                f"[{lo:+.2f}, {hi:+.2f}] %, n {m['n'][0]}+{m['n'][1]}); "
                + (f"predicted {pred:+.1f} % ({p.get('expected_effect')}), error "
                   f"{err:+.2f} points"
                   if isinstance(pred, int | float) and isinstance(err, int | float)
                   else f"no predicted change to compare ({p.get('expected_effect')})"))

    def to_dict(self) -> dict[str, object]:
        return {"id": self.id, "rank": self.rank, "lever": self.lever, "type": self.type,
                "expected_effect": self.expected_effect(),
                "measured_effect": self.measured_effect(),
                "recoverable": self.recoverable.to_dict(),
                "window_share": self.window_share.to_dict(), "basis": self.basis,
                "effect": self.effect,
                "evidence_artifacts": self.evidence_artifacts,
                "source_refs": [r.to_dict() for r in self.source_refs],
                "actionable": self.actionable,
                "non_actionable_reason": None if self.actionable else (
                    "source_refs missing: add `source_refs: [{lever: " + self.id +
                    ", repository, commit, file, delivery}]` to bundle.yaml"),
                "sol_rigor": self.sol_rigor, "confidence": self.confidence,
                "unsized": self.unsized,
                "rubric": self.rubric, "ab": self.ab, "subject": self.subject,
                "prediction_check": self.prediction_check(),
                **({"replay_checks": self.replay_checks} if self.replay_checks else {})}

    def prediction_check(self) -> list[dict[str, object]]:
        """Measured vs predicted change per A/B metric, with the error ([] before an A/B)."""
        return check(self.ab, self.window_share.value, self.effect is not None)


def _refs(inv: Inventory, *keys: str) -> list[SourceRef]:
    return [r for r in inv.bundle.source_refs if r.lever in keys]


def _window(rec: Reconciliation, phase: str, artifact: str) -> Measurement:
    return rec.phase_totals[(phase, artifact)]


def _rubric(inv: Inventory, j: KernelJoin) -> dict[str, dict[str, str]]:
    k = j.ncu
    regime = inv.bundle.extra.get("regime", "unknown")
    r = "R3 production engine serving" if regime == "serving" else (
        "R2 production engine offline (the profiled run)")
    h = {True: "H1 tensor cores (H2 not separable from these counters)",
         False: "H0 CUDA cores (tensor counters 0)", None: "unknown (no tensor counter)"}
    pr = j.pct_roofline()
    return {"baseline": {"K": k.family, "R": r, "H": h[k.tensor_cores],
                         "P": (f"{pr.text()} of roofline under ncu replay [{pr.evidence}]"
                               if pr else "unknown"), "A": "baseline",
                         "name": f"`{j.kernel}` as captured"},
            "candidate": {"K": k.family, "R": "to be measured at ≥ the baseline's R",
                          "H": "≥ the baseline's H (a win over a lower H/R stays DRAFT)",
                          "P": "to be measured with ncu", "A": "not run"}}


def _kernel_levers(inv: Inventory, rec: Reconciliation, min_share: float) -> list[Lever]:
    out: list[Lever] = []
    for j in rec.joins:
        t = j.trace
        if t is None or j.ncu.at_roofline or t.share.value < min_share or j.ratio is None:
            if t is not None and t.share.value >= min_share and j.ratio is None:
                why = (j.mixed if j.mixed else j.duration_cmp.reason() if j.duration_cmp
                       else "no ncu duration to compare")  # nothing silently dropped (17)
                inv.bundle.warnings.append(
                    f"lever kernel:{j.kernel}:{t.phase} not built — ncu and trace durations "
                    f"not comparable ({why}): see the not-comparable contradiction")
            continue
        win = _window(rec, t.phase, t.artifact)
        sv = kernel_saving(j, t.time.value, t.time.text(), t.count)
        if sv is None:
            _unsized_kernel(inv, rec, j, out)
            continue
        rec_ns = sv.saved_ns
        ctx = t.time.context
        ev = f"{t.artifact} + {j.ncu_artifacts[0]}"
        lid = f"kernel:{j.kernel}:{t.phase}"
        out.append(Lever(
            lid, f"faster {j.identity_text()} ({j.family}, {phase_words(t.phase)}): reach "
            f"{sv.fraction:.0%} of its roofline (now {j.ncu.bound}, tensor cores "
            f"{'on' if j.ncu.tensor_cores else 'off'})",
            "kernel", "kernel", {"kernel": j.kernel, "kernel_name": j.ncu.name,
                                 "launch": j.identity_text(), "family": j.family,
                                 "phase": t.phase,
                                 "window": f"{window_words(t.phase)} ({win.text()})",
                                 "roofline_fraction": f"{sv.fraction:.0%}"},
            Measurement(rec_ns, "ns", ev, ctx),
            Measurement(100 * rec_ns / win.value, "%", ev, ctx),
            sv.basis, sorted({t.artifact, *j.ncu_artifacts}), "L4",
            _refs(inv, lid, j.kernel, j.family), _rubric(inv, j), effect="roofline"))
    return out


def _unsized_kernel(inv: Inventory, rec: Reconciliation, j: KernelJoin,
                    out: list[Lever]) -> None:
    """A hot kernel whose roofline time needs a ceiling nobody named: kept with the reason
    and the option that fixes it, and a warning (nothing silently dropped)."""
    t = j.trace
    assert t is not None
    k = j.ncu
    why = ("ceiling unknown: pass --gpu (e.g. --gpu \"RTX 5090\"): the capture does not "
           "name its GPU" if not k.peak_dram_bytes_per_s and not k.peak_flops_per_s else
           "ceiling unknown: the ncu launch has no DRAM bytes or FLOP counters to time "
           "against the roofline")
    win = _window(rec, t.phase, t.artifact)
    ev = f"{t.artifact} + {j.ncu_artifacts[0]}"
    lid = f"kernel:{j.kernel}:{t.phase}"
    inv.bundle.warnings.append(f"lever {lid} not sized — {why}")
    out.append(Lever(
        lid, f"faster {j.identity_text()} ({j.family}, {phase_words(t.phase)}): reach its "
        "roofline",
        "kernel", "kernel", {"kernel": j.kernel, "kernel_name": j.ncu.name,
                                 "launch": j.identity_text(), "family": j.family,
                                 "phase": t.phase,
                             "window": f"{window_words(t.phase)} ({win.text()})"},
        Measurement(t.time.value, "ns", ev, t.time.context),
        Measurement(t.share.value, "%", ev, t.share.context),
        f"not sized ({why}); the bound shown is the kernel's whole trace time "
        f"{t.time.text()} over {t.count:,} launches", sorted({t.artifact, *j.ncu_artifacts}),
        "L4", _refs(inv, lid, j.kernel, j.family), _rubric(inv, j), unsized=why))


def _family_levers(inv: Inventory, rec: Reconciliation) -> list[Lever]:
    cfg = kb.table("ledger")
    fams = cfg["fusion_families"]
    phased = {f.artifact for f in rec.families if f.phase in ("prefill", "decode")}
    out = []
    for f in rec.families:
        if f.family not in fams or f.share.value < cfg["fusion_min_share_pct"]:
            continue
        if phased and f.artifact not in phased:
            continue  # per-phase exports exist: levers from them, the all-stage is context
        tpl = fams[f.family]
        whole = f.time
        if tpl == "copies":
            copies = _copies(rec, f, cfg)
            if copies is None:
                continue
            f = copies
        win = _window(rec, f.phase, f.artifact)
        lid = f"{tpl}:{f.family}:{f.phase}"
        kind = "engine-src" if tpl == "copies" else "config"
        what = ("remove the dtype/layout copies" if tpl == "copies"
                else "fuse the kernels into their producers (compile)")
        out.append(Lever(
            lid, f"{f.family} in {phase_words(f.phase)}: {what} — {f.count:,} launches, top "
            f"`{f.top_kernel}`", kind, tpl,
            {"family": f.family, "phase": f.phase, "kernel": f.top_kernel,
             "kernel_name": f.top_name,
             "window": f"{window_words(f.phase)} ({win.text()})"},
            # fusion: not predicted (effect None); the family's time stays as its upper bound
            Measurement(f.time.value, "ns", f.time.evidence, f.time.context),
            Measurement(f.share.value, "%", f.share.evidence, f.share.context),
            f"the casts' and layout copies' whole kernel time ({f.time.text()} of the "
            f"{f.family} family's {whole.text()}: concatenations, gathers, scatters and fills "
            "are left out): removing a copy removes its launch and its bytes"
            if tpl == "copies" else
            f"no ncu measurement of the {f.family} kernels (top `{f.top_kernel}`) to place "
            "them against a roofline: fusion removes DRAM round trips and launches, not the "
            f"arithmetic, so its share of the family's {f.time.text()} is for the A/B to "
            "measure",
            [f.artifact], "L2",
            _refs(inv, lid, f.family), effect="removed" if tpl == "copies" else None))
    return out


def _copies(rec: Reconciliation, f: FamilyRow, cfg: dict[str, Any]) -> FamilyRow | None:
    """The memory family row cut to its casts and layout copies (synthesis.yaml
    `copy_kernels`, not `copy_kernels_exclude`): what a copies lever can remove. None when
    none is left or they fall under `fusion_min_share_pct` of the phase."""
    keep = re.compile(cfg["copy_kernels"], re.IGNORECASE)
    drop = re.compile(cfg["copy_kernels_exclude"], re.IGNORECASE)
    ks = [k for k in rec.kernels if (k.phase, k.artifact, k.family) == (f.phase, f.artifact,
          f.family) and keep.search(k.name) and not drop.search(k.name)]
    t = sum(k.time.value for k in ks)
    if not ks or not f.time.value:
        return None
    share = f.share.value * t / f.time.value
    if share < cfg["fusion_min_share_pct"]:
        return None
    top = max(ks, key=lambda k: k.time.value)
    return replace(f, time=replace(f.time, value=t), share=replace(f.share, value=share),
                   count=sum(k.count for k in ks), top_kernel=normalize(top.name),
                   top_name=top.name)


def _finding_levers(inv: Inventory, findings: list[Finding]) -> list[Lever]:
    v = inv.views
    if v is None or not v.metrics.devices:
        return []
    span = v.metrics.kernel_span_ns
    drivers = {inv.bundle.rel(p): d for p, d in contradictions.drivers(inv).items()}
    out = []
    for f in findings:
        if "replay_same_as" in f.details:
            continue  # its lever is the row of the finding it names
        if f.severity == "info" or not f.fix:
            continue  # a note says what is not the problem: no change to try (even replayed)
        rp = f.details.get("replay")  # replay/findings.py: the replayed median step
        # a replay pinned by launch → start delays it cannot move (decision 0764) is a lower
        # bound, not a prediction: the finding's own bound makes the row
        arts = _timelines_first(inv, f, drivers)
        if (isinstance(rp, dict) and f.fix and "pinned_ns" not in rp
                and rp["measured_step_ns"] > rp["predicted_step_ns"]):
            if arts:
                out.append(_replayed(inv, f, rp, arts))
            continue
        if f.share <= 0:
            continue
        runs = f.details.get("fusion_runs")  # unfused-elementwise: an estimate, not a bound
        if arts and isinstance(runs, dict) and runs["saving_ns"] > 0:
            out.append(_fused(inv, f, runs, arts, span))
            continue
        if not arts:
            inv.bundle.warnings.append(f"finding {f.pattern} not a lever: its evidence is "
                                       "not a file of the bundle")
            continue
        # a share of kernel time (op and kernel findings) is time of the kernels, not of
        # the span: 19.8% of Qwen's 45.43 ms of kernels is 8.99 ms, of its 49.65 ms span 9.83
        base, of = ((v.metrics.kernel_time_ns, "kernel time") if f.share_of == "kernel_time"
                    else (span, "kernel span"))
        out.append(_row(inv, f, arts, f"the trace's {of} ({base / 1e6:,.2f} ms)",
                        f.share * base, 100 * f.share,
                        f"the {f.pattern} finding's share of the {of} × the {of} "
                        f"({f.observation})", "bound"))
    return out


def _timelines_first(inv: Inventory, f: Finding, drivers: dict[str, int]) -> list[str]:
    """The bundle files a finding cites, timelines (L2) first: a row's step, span, replay and
    kernel numbers come from the trace, so its measurements cite the trace, not a counters
    file the finding also names. `drivers`: bundle file → its driver's CUDA version."""
    tier = {e.path: e.tier for e in inv.entries}
    arts = {inv.bundle.rel(e.artifact) for e in f.evidence if inv.entry(e.artifact) is not None}
    out = sorted(arts, key=lambda a: (tier.get(a) != "L2", a))
    # files recorded under another GPU driver than the lead file are another run (the
    # different-runs contradiction): not this row's evidence
    lead = drivers.get(out[0]) if out else None
    return [a for a in out if lead is None or drivers.get(a, lead) == lead]


def _row(inv: Inventory, f: Finding, arts: list[str], window: str, saved_ns: float,
         pct: float, basis: str, effect: str) -> Lever:
    """A finding's ledger row: its fix as the lever, the saving cited to `arts[0]`."""
    ctx = {"model": str(inv.bundle.context.model or "unknown"), "phase": "all",
           "tool": "trace"}
    lid = f"finding:{f.pattern}"
    outer = f.details.get("within")  # verdict/owners.py: its time is part of another's
    if isinstance(outer, str):
        basis += (f"; part of `finding:{outer}`'s saving (the same kernels or host time), "
                  "not in addition to it")
    return Lever(
        lid, f"{f.title} — {f.fix}", "config", "finding",
        {"fix": f.fix, "pattern": f.pattern, "phase": "all", "window": window},
        Measurement(saved_ns, "ns", arts[0], ctx), Measurement(pct, "%", arts[0], ctx),
        basis, arts, f.rigor, _refs(inv, lid, f.pattern), effect=effect)


def _fused(inv: Inventory, f: Finding, runs: dict[str, int], arts: list[str], span: int
           ) -> Lever:
    """unfused-elementwise's lever sized by its runs of back-to-back one-op kernels, each fused
    into one kernel as long as its longest (views/device/fusion_runs.py)."""
    return _row(inv, f, arts, f"the trace's kernel span ({span / 1e6:,.2f} ms)",
                runs["saving_ns"], 100 * runs["saving_ns"] / span,
                f"{runs['runs']:,} runs of back-to-back one-op kernels "
                f"({runs['run_ns'] / 1e6:,.2f} ms) each fused into one kernel as long as its "
                f"longest ({runs['fused_ns'] / 1e6:,.2f} ms stays); bound: the families' "
                f"{runs['kernel_ns'] / 1e6:,.2f} ms", "fused")


def _replayed(inv: Inventory, f: Finding, rp: dict, arts: list[str]) -> Lever:
    """A finding whose lever was replayed (issue 16): the predicted saving per median step."""
    meas, pred = float(rp["measured_step_ns"]), float(rp["predicted_step_ns"])
    return _row(inv, f, arts, f"the median step ({meas / 1e6:,.2f} ms)", meas - pred,
                100 * (meas - pred) / meas,
                f"replay: `crossview whatif --lever {rp['lever']}` predicts the median step "
                f"{meas / 1e6:,.2f} → {pred / 1e6:,.2f} ms (self-check "
                f"{rp['selfcheck_max_step_error']:.2%})", "replay")


def _folded(inv: Inventory, family_rows: list[Lever], found: list[Lever]) -> list[Lever]:
    """Family rows whose kernels a finding's row already covers (unfused-elementwise: its
    `details.families`, same trace) are that row's lever, not another: one change (fusion)
    addresses both, and two rows would count the same kernel time twice — ranked by
    kernel time, the copies of a Qwen forward (10.18 ms) outranked the replayed fusion
    (−4.35 ms per step) they are part of. The finding row's basis names what it holds."""
    by_pattern = {f.pattern: f for f in inv.findings}
    covered: dict[tuple[str, str], Lever] = {}
    for row in found:
        f = by_pattern.get(row.subject.get("pattern", ""))
        fams = f.details.get("families") if f is not None else None
        if isinstance(fams, dict):
            for fam in fams:
                for art in row.evidence_artifacts:
                    covered[(fam, art)] = row
    kept = []
    for r in family_rows:
        owner = next((covered[k] for k in ((r.subject["family"], a)
                                           for a in r.evidence_artifacts) if k in covered), None)
        if owner is None:
            kept.append(r)
            continue
        what = ("casts and layout copies" if r.template == "copies"
                else f"{r.subject['family']} kernels")
        owner.basis += (f"; holds `{r.id}` ({what} {r.recoverable.text()}, the same "
                        "kernels: not a separate row)")
    return kept


def _step_targets(inv: Inventory, rows: list[Lever]) -> None:
    """A bundle whose engine is no serving engine (synthesis.yaml experiments.commands: a
    training loop, a Hugging Face forward) and no prefill / decode window has no output
    tokens to count: its whole-capture levers are judged on the step time (ab_gates.yaml
    lever_metrics.step)."""
    engine = str(inv.bundle.context.engine or "").lower()
    serving = set(kb.table("experiments")["commands"]) - {"default"}
    # prefill / decode windows in the bundle: a generation workload, judged per token
    if engine in serving or any(r.subject.get("phase") in ("prefill", "decode") for r in rows):
        return
    for r in rows:
        if r.subject.get("phase", "all") == "all":
            r.subject["target"] = "step"


def _int(v: object) -> int | None:
    try:
        return int(str(v)) if v is not None else None
    except ValueError:
        return None


def _per_token(inv: Inventory, rows: list[Lever]) -> None:
    """Decode levers sized in kernel time over the decode window, also per output token when
    the bundle says how many the window holds: one request at a time (concurrency 1),
    `num_prompts` of them, `osl` tokens each. A decode lever is judged on TPOT (ab_gates.yaml),
    so its kernel time is put in those terms. (The RTX 5090 DeepSeek-OCR decode window runs
    its argmax 64 times for osl 64: every output token, the first included; TPOT averages over
    osl − 1, a 1.6% difference at 64.)"""
    c = inv.bundle.context
    osl, n, conc = _int(c.osl), _int(c.num_prompts), _int(c.concurrency)
    if osl is None or osl < 1 or n is None or n < 1 or conc != 1:
        return
    steps = n * osl
    for r in rows:
        if r.subject.get("phase") != "decode" or r.effect not in ("roofline", "removed",
                                                                   "fused"):
            continue
        per = r.recoverable.value / steps
        share = r.window_share.value / 100  # the window: kernel time the lever is part of
        of = (f" of the window's {duration(int(r.recoverable.value / share / steps))}"
              if share > 0 else "")
        r.subject["per_token"] = (
            f"{duration(int(per))}{of} per output token ({r.recoverable.text()} over {steps:,} "
            f"output tokens: {n:,} prompt{'s' if n > 1 else ''} × osl {osl}, concurrency 1): "
            "TPOT falls by at most that, less where the host or launches set the decode pace")


def build(inv: Inventory, rec: Reconciliation) -> list[Lever]:
    cfg = kb.table("ledger")
    found = _finding_levers(inv, inv.findings)
    rows = (_kernel_levers(inv, rec, float(cfg["kernel_min_share_pct"]))
            + _folded(inv, _family_levers(inv, rec), found) + found)
    # every cited artifact must be a file of the bundle (the explainability contract)
    files = {e.path for e in inv.entries}
    for r in rows:
        if not r.evidence_artifacts or not set(r.evidence_artifacts) <= files:
            inv.bundle.warnings.append(f"lever {r.id} left out: it cites "
                                       f"{r.evidence_artifacts or 'no artifact'}, not files of "
                                       "the bundle")
    rows = [r for r in rows if r.evidence_artifacts and set(r.evidence_artifacts) <= files]
    _step_targets(inv, rows)
    _per_token(inv, rows)
    # unsized rows after every sized one (issue 17); then by predicted saving (ns of kernel
    # or step time); then upper bounds (a finding's share of the span: not a prediction);
    # levers with no prediction last
    order = {"replay": 0, "roofline": 0, "removed": 0, "fused": 0, "bound": 1, None: 2}
    rows.sort(key=lambda r: (r.unsized is not None, order[r.effect], -r.recoverable.value,
                             r.id))
    for i, r in enumerate(rows, 1):
        r.rank = i
    return rows

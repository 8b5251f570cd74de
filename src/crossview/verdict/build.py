"""Each finding built once, from its case: the pattern's phrasing of its claim, what the
verdict decided (severity, saving, replay, ownership), the fix that fits the capture, and the
evidence. The only place a Finding is made (tests/test_verdict_only.py walks the code)."""

from __future__ import annotations

import msgspec

from crossview.core import inert
from crossview.core.claim import FixPart
from crossview.core.finding import Evidence, Finding
from crossview.detectors import host_cpu
from crossview.verdict import prose
from crossview.verdict.cases import Case
from crossview.verdict.fixes import Fitter
from crossview.verdict.severity import path_holds, rules


def _next_fix(c: Case) -> tuple[FixPart, ...]:
    """The change the replay shows is needed next (About.next_fix): when the lever hands the
    predicted step to a cause the claim's fix does not touch."""
    r = c.replay
    top = r.top if r is not None else None
    if top is None:
        return ()
    key = dict(c.about.next_fix).get(top[0])
    if key is None or top[1] < rules().next_fix_min_share:
        return ()
    return (FixPart(key=key, fill=(("share", f"{top[1]:.0%}"),)),)


def finding(c: Case, fit: Fitter, readings: list[host_cpu.Reading]) -> Finding:
    claim = c.claim
    if c.share != claim.share:  # kernels another claim owns: the phrasing says the rest
        claim = msgspec.structs.replace(claim, share=c.share)
    said = c.decl.phrase(claim)
    details: dict[str, object] = {}
    if claim.owns.causes and c.how_held != "cause":
        details["claims"] = list(claim.owns.causes)
    details.update(said.details)
    observation = said.observation + prose.observation_after(c)
    effect = prose.effect(c, said.effect, said.ab)
    # one stall in a capture of one step: say so first (verdict.yaml caveat one-occurrence)
    first = (FixPart(key="one-occurrence"),) if "one-occurrence" in c.caveats else ()
    fix, fit_details = fit.text(claim, _next_fix(c), first)
    details.update(fit_details)
    evidence: list[Evidence] = [prose.cite(x) for x in claim.cites]
    if "host-cpu" in c.about.corroborated_by:
        for h in readings:
            observation = f"{observation.rstrip()} {host_cpu.reading_text(h)}"
            evidence.append(prose.cite(host_cpu.cite(h)))
            details["host_cpu"] = host_cpu.reading_details(h)
    if c.held_by is not None:
        details["within"] = c.held_by.pattern
        sentence = prose.held_sentence(c)
        effect = f"{effect} {sentence}" if effect else sentence
    if c.parts:
        details["parts"] = [p.pattern for p in c.parts]
    if c.overlap is not None:
        details["overlap"] = {"with": c.overlap[0], "share": c.overlap[1]}
    r = c.replay
    if r is not None:
        rep: dict[str, object] = {
            "lever": r.lever, "measured_step_ns": r.measured_ns,
            "predicted_step_ns": r.predicted_ns, "selfcheck_max_step_error": r.selfcheck,
            "bound_after": [{"cause": cause, "ns": ns} for cause, ns in r.bound_after[:3]]}
        if r.held and r.pinned is not None:
            rep["pinned_ns"] = r.pinned.pinned_ns
        rep["predicts_fix"] = r.predicts_fix
        if r.ranks is not None:
            rep["all_ranks_on_time_ns"] = r.ranks.everyone_ns
            rep["late_ranks_on_time_ns"] = r.ranks.alone_ns
            rep["host_stalls_ns"] = r.ranks.stalls_ns
        if c.refuted:
            rep["short_of_claim"] = True
        details["replay"] = rep
    if c.same_as is not None:
        details["replay_same_as"] = c.same_as[0]
    if c.path is not None:
        details["kernel_path_share"] = c.path.on
        if path_holds(c):
            details["path_top"] = {"cause": c.path.top[0], "share": c.path.top[1]}
    details["saving"] = c.saving.to_dict()
    # one paragraph each: a name quoted in the prose (as it was read) cannot break a line of
    # the recap (core/inert.py, decision 0890)
    one = inert.name
    return Finding(
        pattern=claim.pattern, severity=c.severity, title=one(said.title),
        observation=one(observation), fix=one(fix), share=claim.share,
        evidence=[Evidence(one(e.artifact), one(e.what)) for e in evidence], rigor=claim.rigor,
        confidence="DRAFT (partial: ranks missing)" if claim.partial else "DRAFT",
        actionable=claim.actionable, expected_effect=one(effect), details=details,
        share_of=claim.basis)


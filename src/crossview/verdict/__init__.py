"""The verdict: claims + views + replay results → the final findings, each built once
(issue 37; docs/decisions/0820).

    claims   detectors' declarations: typed claims, no prose, no severity
    owners   one owner per nanosecond (time-account causes, kernels), parts, start-up only
    replayed the what-if replay of each claim's lever, or the critical path of its kernels
    severity severity and rank from the predicted saving; ≤ max_red 🔴, ≤ max_yellow 🟡
    build    the finding: the pattern's phrasing, the fix that fits the capture, evidence

Called once per analysis (crossview.analysis); nothing else decides a finding's severity,
fix, title or expected effect (tests/test_verdict_only.py).
"""

from __future__ import annotations

from crossview.core.finding import Finding
from crossview.detectors import declarations, host_cpu
from crossview.verdict import build, owners, replayed, severity
from crossview.verdict.cases import Case
from crossview.verdict.fixes import Fitter
from crossview.views.views import Views


def claims(v: Views) -> list[Case]:
    """Every declaration's claims on these views, as cases (declaration order)."""
    out: list[Case] = []
    for d in declarations():
        for c in d.detect(v):
            out.append(Case(claim=c, decl=d, about=d.about_of(c.pattern), share=c.share,
                            tier=c.tier, caveats=list(c.caveats)))
    return out


def decide(v: Views, replay: bool = True) -> list[Finding]:
    """The findings of one analysis, ranked (red, yellow, then notes; larger saving first).
    `replay`: replay the claims' levers on the capture's timeline (off: the claims' own
    bounds rank them)."""
    cases = claims(v)
    owners.resolve(v, cases)
    if replay:
        replayed.run(v.store, cases)
        replayed.run_ranks(v, cases)
    severity.judge(v, cases)
    ranked = severity.rank(cases, v.limits)
    fit = Fitter(v)
    readings = host_cpu.readings(v)
    return [build.finding(c, fit, readings) for c in ranked]

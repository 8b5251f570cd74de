"""Severity and rank from the predicted saving of steady-state step time (conventions §3).

A claim's saving is the replay's where its lever models the whole fix and nothing pins the
step (Replayed.predicts_fix), else the bound the claim proves: its share of the steady step
(kernel-time claims: × the busy-kernel fraction of the step), and for a kernel-side claim no
more than the GPU kernels' share of the step's critical path. Severity starts from the cut-off
the claim crossed (top → 🔴, mention → 🟡, note → note) and then:

- a replay that predicts the fix sets it: ≥ verdict.yaml red_saving is 🔴 (whatever the
  claim's own cut: the lever the tool predicts is the top issue), ≥ yellow_saving 🟡, less a
  note;
- a near-null replay of a refutable claim (the lever replays the whole cause) or a kernel-side
  claim whose kernels are off the critical path is no 🔴 (verdict.yaml refute_realized), nor
  is a claim whose own bound (no replay predicting it) is under red_saving;
- caveats cap it (verdict.yaml caveats), a note's time is another claim's (held), and a claim
  on third-party frames only is never 🔴;
- at most max_red 🔴 and max_yellow 🟡 (thresholds.yaml), the larger savings first.
"""

from __future__ import annotations

from typing import cast

from crossview.core.finding import Severity
from crossview.knowledge.loader import load_typed
from crossview.knowledge.schemas import Verdict
from crossview.knowledge.thresholds import Thresholds
from crossview.verdict.cases import Case, Saving
from crossview.views.views import Views

_ORDER: dict[Severity, int] = {"red": 0, "yellow": 1, "info": 2}
_LEVEL: dict[str, Severity] = {"top": "red", "consider": "yellow", "note": "info"}


def rules() -> Verdict:
    r: Verdict = load_typed("verdict.yaml")
    return r


def _min(a: Severity, b: Severity) -> Severity:
    return a if _ORDER[a] >= _ORDER[b] else b


def _busy_fraction(v: Views) -> float | None:
    acc = v.account
    if acc is None or not acc.steady_state:
        return None
    return sum(c.share_of_step for c in acc.steady_state if not c.idle)


def saving(v: Views, c: Case) -> Saving:
    rep = c.replay
    if rep is not None and rep.predicts_fix:
        return Saving(rep.saved, "replay", "the replayed median step (`crossview whatif "
                      f"--lever {rep.lever}`)", rep.saved)
    share, basis = c.share, "the claim's share of the steady step"
    if c.claim.basis == "requests":  # a serving metric: its own cut-off, no step to weigh
        return Saving(share, "bound", "the share of the engine's requests it holds (a serving "
                      "metric: no step-time saving)", share)
    if c.claim.basis == "kernel_time":
        busy = _busy_fraction(v)
        if busy is not None:
            share, basis = share * busy, ("its share of kernel time × the GPU kernels' share "
                                          "of the steady step")
        else:
            basis = "its share of kernel time (no steady step to weigh it against)"
    bound = share
    if c.path is not None and c.about.kernel_side and c.path.on < share:
        share, basis = c.path.on, "the GPU kernels' share of the replayed step's " \
                                      "critical path"
    return Saving(share, "bound", basis, bound)


def judge(v: Views, cases: list[Case]) -> None:
    r = rules()
    for c in cases:
        c.saving = saving(v, c)
        sev = _LEVEL[c.tier or c.claim.tier]
        if c.held_by is not None:
            sev = "info"
        rep = c.replay
        if sev != "info" and rep is not None and not rep.held:
            if rep.predicts_fix:
                sev = ("red" if rep.saved >= r.red_saving else
                       "yellow" if rep.saved >= r.yellow_saving else "info")
            elif rep.saved >= r.red_saving:
                sev = "red"  # a lower bound at the red saving already is one
            if (c.about.refutable and rep.caveat is None and c.claim.share > 0
                    and rep.saved < r.refute_realized * c.claim.share):
                c.refuted = True
                sev = _min(sev, "yellow")
        if sev != "info" and c.path is not None and c.about.kernel_side \
                and c.claim.share > 0 and c.path.on < c.claim.share:
            c.off_path = c.path.on < r.refute_realized * c.claim.share
            if c.off_path:
                c.off_path_demoted = sev == "red"
                sev = _min(sev, "yellow")
        if sev == "red" and c.saving.source == "bound" and c.saving.share < r.red_saving \
                and c.claim.basis != "requests":
            sev = "yellow"  # the most the claim can save is under a 🔴's saving
        replayed_red = rep is not None and rep.predicts_fix and rep.saved >= r.red_saving
        for cav in c.caveats:
            cap = r.caveats[cav].cap
            if replayed_red and cav not in ("summary", "startup-only"):
                continue  # the replay outweighs a caveat on the claim's own share
            sev = _min(sev, cast(Severity, cap))
        if not c.claim.actionable:
            sev = _min(sev, "yellow")
        c.severity = sev


def path_holds(c: Case) -> bool:
    """The step's critical path holds the claim back: GPU kernels hold at least
    verdict.yaml path_gap_min less of it than the claim's share."""
    return c.path is not None and c.claim.share - c.path.on >= rules().path_gap_min


def _key(c: Case) -> tuple[int, float, float]:
    return _ORDER[c.severity], -c.saving.share, -c.saving.bound


def rank(cases: list[Case], lim: Thresholds) -> list[Case]:
    """At most max_red 🔴 and max_yellow 🟡, largest predicted saving first; the rest demoted
    one level."""
    out = sorted(cases, key=_key)
    for sev, limit, demote in (("red", lim.max_red, "yellow"), ("yellow", lim.max_yellow, "info")):
        kept = 0
        for c in out:
            if c.severity == sev:
                kept += 1
                if kept > limit:
                    c.severity = cast(Severity, demote)
        out.sort(key=_key)
    reds = [c.pattern for c in out if c.severity == "red"]
    for c in out:
        if c.refuted or c.off_path:
            c.others_red = tuple(p for p in reds if p != c.pattern)[:2]
    return out

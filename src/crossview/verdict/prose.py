"""The verdict's own sentences, from its typed decisions: the replayed effect, the step's
critical path, a refuting replay, a claim whose time is another's, start-up only, and the
evidence citations (knowledge/evidence.yaml). A pattern's own sentences are its declaration's
`phrase`; this module adds what the verdict decided about it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from crossview.core.claim import Cite
from crossview.core.finding import Evidence
from crossview.knowledge import evidence_tables
from crossview.knowledge.loader import load_yaml
from crossview.units import duration
from crossview.verdict.cases import Case, OnPath, Replayed
from crossview.verdict.severity import path_holds, rules

if TYPE_CHECKING:
    from crossview.replay.rank_findings import Bound, RankLevers

STARTUP_NOTE = (" Measured in start-up (this capture has no steady-state step): first launches"
                " load modules and compile, so this says nothing about the steady state.")


def cite(c: Cite) -> Evidence:
    row = load_yaml("evidence.yaml")[c.read]
    what = str(row["text"]).format(**dict(c.fill))
    if row.get("tables", True):
        what += evidence_tables.cite(c.kind, what)
    return Evidence(c.artifact, what)


def replay_effect(r: Replayed) -> str:
    """Replay (`crossview whatif --lever X`): median step A → B ms (…). Then …"""
    if r.ranks is not None:
        return ranks_effect(r.ranks)
    meas, pred = r.measured_ns, r.predicted_ns
    d = pred - meas
    sign = "+" if d >= 0 else "−"
    return (f"Replay (`crossview whatif --lever {r.lever}`): median step {meas / 1e6:.2f} → "
            f"{pred / 1e6:.2f} ms ({sign}{abs(d) / 1e6:.2f} ms, {sign}{abs(d) / meas:.1%}; "
            f"self-check {r.selfcheck:.2%}).") + then(r) + (f" {r.caveat}" if r.caveat else "")


def _step(meas: float, pred: float) -> str:
    d = pred - meas
    sign = "+" if d >= 0 else "−"
    return (f"{duration(meas)} → {duration(pred)} ({sign}{duration(abs(d))}, "
            f"{sign}{abs(d) / meas:.1%})" if meas else duration(pred))


def _bound(b: Bound | None) -> str:
    if b is None:
        return ""
    return (f"; the step is then bound by rank {b.rank} ({b.share:.0%} of its critical path, "
            f"{b.cause} {b.cause_share:.0%} of that)")


def ranks_effect(r: RankLevers) -> str:
    """The job step replayed across its ranks with each rank lever (replay/rank_findings)."""
    # lazy: only a replayed job phrases this, and its replay loaded the module (issue 38)
    from crossview.replay.rank_levers import ALL_ON_TIME

    who = ("rank " if len(r.named) == 1 else "ranks ") + " and ".join(map(str, r.named))
    text = (f"Replay across the {r.ranks} ranks (`crossview whatif {r.folder} --lever "
            f"{ALL_ON_TIME}`; self-check {r.selfcheck:.2%}, the worst rank): the job step "
            f"{_step(r.measured_ns, r.everyone_ns)} with every rank on time"
            f"{_bound(r.everyone_bound)}; with {who} alone on time "
            f"{_step(r.measured_ns, r.alone_ns)}.")
    if r.stalls_ns is not None:
        text += (" Every rank's stalled host ops at their median (`--lever host-stalls`, what "
                 f"giving each rank its cores removes): {_step(r.measured_ns, r.stalls_ns)}"
                 f"{_bound(r.stalls_bound)}.")
    if r.everyone_ns > rules().late_alone_barely * r.measured_ns:
        text += (" Lateness alone barely moves the step: the other ranks' own work (their "
                 "hosts, here) holds it next, so the fix must shorten that on every rank.")
    return text


def then(r: Replayed) -> str:
    """What holds the step once the lever is pulled (what the next lever must move)."""
    top = r.top
    if top is None:
        return ""
    cause, share = top
    # lazy: only a replayed lever phrases this, and its replay loaded the module (issue 38)
    from crossview.replay.measure import BEFORE_FIRST_OP

    if cause == BEFORE_FIRST_OP:  # nothing recorded there: no cause to name
        return (f" Then {share:.0%} of the step's critical path lies before the first op the "
                "capture records on its lane: this capture does not say what holds it.")
    return f" Then the step is bound by {cause} ({share:.0%} of its critical path)."


def effect(c: Case, own: str, ab: tuple[str, str] | None) -> str:
    """The expected effect: the replay's prediction (with the claim's own bound where the
    replay is a lower bound), else the claim's bound, with the critical path's limit on a
    kernel-side claim."""
    r = c.replay
    if c.same_as is not None:
        return f"The same replay as `{c.same_as[0]}` (--lever {c.same_as[1]})."
    if ab is not None:  # the A/B sentence holds only while the kernels are the step
        on_path = not path_holds(c)
        own = f"{own} {ab[0] if on_path else ab[1]}".strip()
    if r is None:
        text = own
    else:
        text = replay_effect(r)
        if r.held and r.pinned is not None:
            text += " " + (r.pinned.text() if r.pinned_first else r.pinned.again())
        if own and (r.held or r.caveat):
            # the lever models only part of the fix: the claim's own bound stays
            text += f" The capture's bound: {own}"
    if c.path is not None and path_holds(c):
        text += " " + path_sentence(c.path)
    return text.strip()


def path_sentence(p: OnPath) -> str:
    cause, share = p.top
    return (f"Today GPU kernels are {p.on:.0%} of the median step's critical path "
            f"(the capture's replay; {share:.0%} is {cause}): faster kernels shorten the step "
            "by at most that much until the work ahead of them is cut.")


def _first(others: tuple[str, ...]) -> str:
    return ("fix the other 🔴 issues first (" + ", ".join(f"`{o}`" for o in others)
            + ") and re-capture")


def observation_after(c: Case) -> str:
    """Sentences the verdict adds to the observation: a refuting replay, a kernel-side claim
    off the critical path, start-up only, kernels another claim owns."""
    out = ""
    r = c.replay
    if c.refuted and r is not None:
        first = f" — {_first(c.others_red)}" if c.others_red else ""
        out += (f" The replay does not bear this out today: the lever moves the median "
                f"step by {r.saved:.1%}, not the {c.claim.share:.1%} this finding "
                f"covers{first}.")
    if c.off_path_demoted and c.path is not None:
        cause, share = c.path.top
        out += (f" Not what the step waits on today: GPU kernels are {c.path.on:.0%} of its "
                "critical path — " + (_first(c.others_red) + "." if c.others_red else
                                      f"{cause} holds {share:.0%} of it: that work, not the "
                                      "kernels, sets the step's pace."))
    if "startup-only" in c.caveats:
        out += STARTUP_NOTE
    if "one-occurrence" in c.caveats:
        out += (" One occurrence, in a capture of one step: whether it repeats every step is "
                "not in this capture.")
    if c.overlap is not None:
        other, held = c.overlap
        out += (f" {100 * held:.1f}% of kernel time here is also among the `{other}` "
                "finding's kernels and is counted there.")
    return out


def held_sentence(c: Case) -> str:
    """Why a claim whose time is another's is a note, said in its expected effect."""
    o = c.held_by
    if o is None:
        return ""
    if c.how_held == "within":
        return (f"Its time lies inside the `{o.pattern}` finding's (host time in the wait "
                "that finding charges): part of that saving, not in addition to it.")
    if c.how_held == "overlap":
        return (f"Its kernels are the `{o.pattern}` finding's (counted there): part of that "
                "finding's saving, not in addition to it.")
    return (f"The same time-account causes are charged by the larger `{o.pattern}` finding: "
            "part of that saving, not in addition to it.")

"""Markdown: the step table and the time account (scope/step_detect.py, views/device/account.py).

Format only: every number comes from the views; cut-offs from steps.yaml / account.yaml.
"""

from __future__ import annotations

from pathlib import Path

from crossview.core import inert
from crossview.knowledge import causes
from crossview.knowledge.fixes import fix_for
from crossview.knowledge.steps_rules import rules as step_rules
from crossview.render.md_text import code, cut
from crossview.scope.step_detect import Step, source_phrase
from crossview.units import duration as _ms
from crossview.views.device.account import Account, CauseSlice
from crossview.views.views import Views


def _families(x: Step, n: int = 3) -> str:
    top = sorted(x.kernel_ns_by_family.items(), key=lambda kv: -kv[1])[:n]
    return ", ".join(f"{f} {_ms(t)}" for f, t in top) or "—"


def step_lines(v: Views) -> list[str]:
    s = v.steps
    if not s.steps:
        return []
    summ = s.summary()
    n = len([x for x in s.steps if x.steady])
    out = [f"\n**Steps** ({len(s.steps)} from {source_phrase(s.source)}; "
           + (f"{n} steady)" if n else "none steady: the time account covers all of them)")]
    if summ is not None:
        what = ("all steps (none is steady)" if s.steady_fallback else
                f"{summ.n} steady step{'s' if summ.n != 1 else ''}")
        out.append(f"- Wall time over {what}: median {_ms(summ.median_ns)}, p90 "
                   f"{_ms(summ.p90_ns)}, min {_ms(summ.min_ns)}, max {_ms(summ.max_ns)}.")
    rows = s.steps if len(s.steps) <= step_rules().step_rows else \
        [x for x in s.steps if not x.steady]
    if rows:
        out += ["", "| step | wall | GPU busy (of the step) | kernel time by family (top 3) "
                "| kept out because |",
                "|---|---:|---:|---|---|"]
        for x in rows:
            busy = f"{_ms(x.gpu_busy_ns)} ({x.gpu_busy_ns / x.wall_ns:.0%})" if x.wall_ns \
                else "—"
            why = "; ".join(f"{f}: {r}" for f, r in zip(x.flags, x.reasons, strict=True))
            out.append(f"| {_name(x)} | {_ms(x.wall_ns)} | {busy} | {_families(x)} | "
                       f"{why or 'steady'} |")
    return out


def _name(x: Step) -> str:
    name = inert.name(x.name)
    return code(name if len(name) <= 48 else f"…{name[-47:]}")


def _frames(c: CauseSlice) -> str:
    return "; ".join(f"{code(cut(f.frame, 60))} {_ms(f.ns)}" for f in c.top_frames) or "—"


def account_lines(v: Views) -> list[str]:
    acc: Account | None = v.account
    if acc is None:
        return []
    per = (f"mean over {acc.steady_steps} step×device rows" if acc.steady_steps > 1
           else "one step")
    head = ("all steps: none is steady" if acc.steady_fallback else "steady state")
    out = [f"\n**Time account — {head}** (per step: {_ms(acc.steady_wall_ns)} wall, {per}; "
           "busy rows are kernel time by family, idle rows say what the launching host "
           "thread was doing)", "",
           "| cause | ms / step | % of step | top frames | evidence |", "|---|---:|---:|---|---|"]
    floor = causes.rules().recap_min_share
    shown = [c for c in acc.steady_state if c.share_of_step >= floor]
    for c in shown:
        # start-up / step-boundary time: said in the steady table, never a lever there
        tag = " (start-up / boundary: not a steady-state lever)" if c.startup else ""
        out.append(f"| {c.label}{tag} | {c.ns / 1e6:,.2f} ms | {c.share_of_step:.1%} | "
                   f"{_frames(c)} | {c.evidence} |")
    rest = [c for c in acc.steady_state if c.share_of_step < floor]
    if rest:
        out.append(f"| {len(rest)} more rows under {floor:.1%} each (JSON `account`) | "
                   f"{sum(c.ns for c in rest) / 1e6:,.2f} ms | "
                   f"{sum(c.share_of_step for c in rest):.1%} | | |")
    regime = ("start-up only: no verdict on a steady state" if acc.steady_fallback else
              "the host never got ahead: launch/dispatch-bound" if acc.launch_bound else
              "the queue is deep between a few long host stalls: not launch-bound")
    out.append(f"\n- Launch queue: empty at {acc.empty_queue_share:.0%} of kernel launches in "
               f"these steps → {regime}.")
    out.extend(_gap_lines(v, acc))
    out.extend(_startup_lines(v, acc))
    return out


def _gap_lines(v: Views, acc: Account) -> list[str]:
    steady = {(x.artifact, x.number) for x in v.steps.steady}
    rows = [(d, s) for d in acc.per_device for s in d.steps if (d.artifact, s.step) in steady]
    if not rows:
        return []
    # the step whose idle time is the median of the steady steps: a typical one
    rows.sort(key=lambda r: r[1].idle_ns)
    dev, st = rows[len(rows) // 2]
    if not st.top_gaps:
        return []
    out = [f"- Longest idle gaps of a typical step (step {st.step}, "
           f"{inert.name(Path(dev.artifact).name)} device {dev.device}, idle "
           f"{_ms(st.idle_ns)}):"]
    labels = {c.id: c.label for c in causes.rules().causes}
    for g in st.top_gaps:
        calls = "; ".join(
            f"{code(cut(c.frame, 70))} {_ms(c.ns)}"
            + (f" (called from {code(inert.name(c.calling)[:60])})" if c.calling else "")
            for c in g.calls)
        at = g.start_ns - _step_start(v, dev.artifact, st.step)
        cause = (", ".join(f"{labels.get(c, c)} {_ms(n)}" for c, n in g.causes)
                 if g.causes else labels.get(g.cause, g.cause))
        out.append(f"  - {_ms(g.dur_ns)} at {_ms(at)} into the step — "
                   f"{cause}: {calls or 'no host call'}")
    return out


def _step_start(v: Views, artifact: str, number: int) -> int:
    return next((x.start_ns for x in v.steps.steps
                 if x.artifact == artifact and x.number == number), 0)


def _startup_lines(v: Views, acc: Account) -> list[str]:
    out: list[str] = []
    flagged = [x for x in v.steps.steps if not x.steady]
    if flagged and not acc.steady_fallback:
        out.append("- Kept out of the steady state: " + "; ".join(
            f"{_name(x)} ({', '.join(x.reasons)})" for x in flagged) + ".")
    if acc.startup:
        out.append("- Start-up / boundary time outside the steady state: " + "; ".join(
            f"{c.label} {_ms(c.ns)}" for c in acc.startup) + ".")
    if acc.steady_fallback:
        out.append("- Every step is warm-up, JIT or start-up ("
                   + "; ".join(f"{_name(x)}: {', '.join(x.reasons)}" for x in flagged)
                   + "), so the table above is start-up, not a steady state. "
                   + fix_for("steady-state-capture", {"engine": v.engine}))
    return out

"""The head of `crossview diff`'s Markdown: the summary it leads with, the prediction checked
against the measured twin (`--lever`), the regression gate, comparability and the host ops
matched across runs. Formats experiments/ results; computes nothing."""

from __future__ import annotations

from crossview.experiments.comparable import Comparability
from crossview.experiments.lever_check import LeverCheck
from crossview.experiments.op_match import OpMatch
from crossview.experiments.regression import Gate
from crossview.units import duration


def _signed(ns: float) -> str:
    return ("+" if ns > 0 else "") + duration(ns) if ns else "0 ns"


def _cell(text: str, width: int = 70, head: bool = False) -> str:
    """Escaped for a table; a long text keeps its end (a frame's function), or its head."""
    text = text.replace("|", "\\|")
    if len(text) <= width:
        return text
    return text[:width - 1] + "…" if head else "…" + text[-(width - 1):]


def summary(lines: list[str]) -> list[str]:
    return ["## Summary", ""] + [f"- {x}" for x in lines] + [""] if lines else []


def _held(rows: list[tuple[str, float]], step_ns: float) -> str:
    top = rows[:3]
    return "; ".join(f"{k} {duration(v)} ({v / step_ns:.0%})" for k, v in top) if (
        top and step_ns) else "—"


def lever(c: LeverCheck) -> list[str]:
    out = ["## Prediction checked", "",
           f"`crossview whatif {c.before} --lever {' --lever '.join(c.levers)}` predicts "
           "BEFORE's median steady step; AFTER's capture measures it (the time account's "
           "steps, the same definition on both sides).", ""]
    out += [f"- {x}" for x in c.changes] + [""]
    if c.predicted_ns is None:
        return out + [f"- {n}" for n in c.notes] + [""]
    err = c.error_pct
    rng = (f" (range {duration(c.low_ns)} … {duration(c.high_ns)})"
           if c.low_ns is not None and c.high_ns is not None else "")
    out += ["| | median step | what held the step (critical path, largest first) |",
            "|---|---|---|",
            f"| BEFORE, measured | {duration(c.before_measured_ns)} | |",
            f"| BEFORE, predicted with the lever | **{duration(c.predicted_ns)}**{rng} | "
            f"{_held(c.predicted_held, c.predicted_ns)} |",
            f"| AFTER, measured ({c.after_steady} steady of {c.after_steps} steps) | "
            f"**{duration(c.measured_ns)}** | {_held(c.measured_held, c.measured_ns)} |", "",
            f"Prediction error: **{err:+.1f}%** (predicted − measured, over measured)"
            + (f"; AFTER's measured step is {'inside' if c.inside else 'OUTSIDE'} the "
               "predicted range" if c.inside is not None else "")
            + f". Over all {c.after_steps} of AFTER's steps (median "
            f"{duration(c.measured_all_ns)}, not-steady steps included) the error is "
            f"{c.error_all_pct:+.1f}%.", ""]
    if c.after_unsteady:
        out += ["AFTER's steps left out as not steady: " + "; ".join(
            f"{k} ({v})" for k, v in c.after_unsteady.items()) + ".", ""]
    if c.unknowns:
        out += ["The range replays the levers at the bounds of what they cannot know:", ""]
        out += [f"- {u}" for u in c.unknowns] + [""]
    out += [f"Self-check (unchanged replay vs the capture, largest step error): BEFORE "
            f"{c.selfcheck[0]:.2%}, AFTER {c.selfcheck[1]:.2%}.", ""]
    return out + [f"- {n}" for n in c.notes] + ([""] if c.notes else [])


def gate(g: Gate) -> list[str]:
    mark = {"regressed": "**REGRESSED**", "pass": "pass", "undecided": "**undecided**"}
    return ["## Regression gate", "",
            f"`--fail-on-regression {g.threshold_pct:g}` on {g.metric}: {mark[g.verdict]} — "
            f"{g.why}.", ""]


def comparability(c: Comparability) -> list[str]:
    out = ["## Comparability", "", "| what | A | B | status | detail |", "|---|---|---|---|---|"]
    out += [f"| {x.what} | {_cell(x.a, 60)} | {_cell(x.b, 60)} | {x.status} | "
            f"{_cell(x.detail, 90)} |" for x in c.checks]
    return out + [""]


def ops(m: OpMatch, top: int) -> list[str]:
    shown = [r for r in m.rows if r.delta_ns][:top]
    out = ["## Host ops per steady step", "",
           f"Matched across the runs by (normalized stack, name, input shapes), then by name: "
           f"{m.summary()}. Time is the op's own duration, children included.", ""]
    if not shown:
        return out + ["No host op changed its time per step.", ""]
    out += ["| op | shapes | matched by | A calls | A time | B calls | B time | Δ time |",
            "|---|---|---|---|---|---|---|---|"]
    out += [f"| `{_cell(r.op, 60)}` | {_cell(r.shapes, 30, head=True) or '—'} | {r.matched_by} | "
            f"{r.a_calls:,.1f} | {duration(r.a_ns)} | {r.b_calls:,.1f} | {duration(r.b_ns)} | "
            f"{_signed(r.delta_ns)} |" for r in shown]
    return out + [""]

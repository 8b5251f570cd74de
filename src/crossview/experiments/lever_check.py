"""`crossview diff BEFORE AFTER --lever NAME` (issue 39 item 5, decision 0853): the replay's
prediction for BEFORE beside AFTER's measured steps. Both sides are measured the same way: the
time account's steps (replay/steps.py), the median of the steady ones; the prediction carries
its range (replay/bounds.py) and what held the predicted step, AFTER's measured median step is
walked back through AFTER's own (unchanged) replay for what held it. Error = (predicted −
measured) ÷ measured."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from statistics import median
from typing import Any

from crossview.errors import UsageError
from crossview.replay import whatif


@dataclass
class LeverCheck:
    levers: list[str]
    before: str
    after: str
    changes: list[str]  # what each lever changed in BEFORE's graph
    predicted_ns: float | None  # BEFORE's predicted median step (None: self-check failed)
    low_ns: float | None
    high_ns: float | None
    unknowns: list[str]
    before_measured_ns: float  # BEFORE's own median step, as captured
    measured_ns: float  # AFTER's median steady step
    measured_all_ns: float  # AFTER's median over every step (warm-up, flush included)
    after_steps: int
    after_steady: int
    after_unsteady: dict[str, str]
    selfcheck: tuple[float, float]  # BEFORE's and AFTER's unchanged-replay errors
    predicted_held: list[tuple[str, float]]  # critical path of the predicted median step
    measured_held: list[tuple[str, float]]  # … of AFTER's measured median step
    notes: list[str] = field(default_factory=list)

    @property
    def error_pct(self) -> float | None:
        if self.predicted_ns is None or not self.measured_ns:
            return None
        return 100 * (self.predicted_ns - self.measured_ns) / self.measured_ns

    @property
    def error_all_pct(self) -> float | None:
        if self.predicted_ns is None or not self.measured_all_ns:
            return None
        return 100 * (self.predicted_ns - self.measured_all_ns) / self.measured_all_ns

    @property
    def inside(self) -> bool | None:
        if self.low_ns is None or self.high_ns is None:
            return None
        return self.low_ns <= self.measured_ns <= self.high_ns

    def to_dict(self) -> dict[str, Any]:
        return {
            "levers": self.levers, "before": self.before, "after": self.after, "units": "ns",
            "changes": self.changes, "predicted_step_ns": self.predicted_ns,
            "range_ns": None if self.low_ns is None else [self.low_ns, self.high_ns],
            "unknowns": self.unknowns, "before_measured_step_ns": self.before_measured_ns,
            "measured_step_ns": self.measured_ns, "measured_all_steps_ns": self.measured_all_ns,
            "after_steps": self.after_steps, "after_steady_steps": self.after_steady,
            "after_not_steady": self.after_unsteady, "error_pct": self.error_pct,
            "error_vs_all_steps_pct": self.error_all_pct, "measured_inside_range": self.inside,
            "selfcheck_max_step_error": {"before": self.selfcheck[0],
                                         "after": self.selfcheck[1]},
            "held_predicted": [{"cause": k, "ns": v} for k, v in self.predicted_held],
            "held_measured": [{"cause": k, "ns": v} for k, v in self.measured_held],
            "notes": self.notes}


def check(before: Path | list[Path], after: Path | list[Path], specs: list[str]
          ) -> LeverCheck:
    """Replay BEFORE with the levers (and their bounds) and AFTER unchanged (a side: one
    capture, or the paths that hold it)."""
    before, after = ([p] if isinstance(p, Path) else list(p) for p in (before, after))
    pred = whatif.run(before, specs, ranges=True)
    meas = whatif.run(after, [])
    if not isinstance(pred, whatif.WhatIf) or not isinstance(meas, whatif.WhatIf):
        raise UsageError("diff --lever checks one timeline per side; the ranks of a job are "
                         "predicted together by `crossview whatif FOLDER --lever …`")
    m = meas.medians()
    rng = pred.range_ns() if pred.selfcheck_ok else None
    steps = [s.measured_ns for s in meas.baseline]
    held = meas.bound_by() if meas.selfcheck_ok else []
    out = LeverCheck(
        pred.levers, ", ".join(map(str, before)), ", ".join(map(str, after)), pred.changes,
        pred.medians()["predicted_step_ns"] if pred.selfcheck_ok else None,
        rng[0] if rng else None, rng[1] if rng else None, pred.unknowns,
        pred.medians()["measured_step_ns"], m["measured_step_ns"],
        float(median(steps)) if steps else 0.0, len(meas.baseline),
        int(m["steps"]), dict(meas.unsteady),
        (pred.selfcheck_max_error, meas.selfcheck_max_error),
        pred.bound_by() if pred.selfcheck_ok else [], held, list(pred.notes))
    if not pred.selfcheck_ok:
        out.notes.append(f"prediction withheld: BEFORE's unchanged replay is off by "
                         f"{pred.selfcheck_max_error:.2%} (limit {pred.selfcheck_limit:.0%})")
    return out

"""A finding's share from its own slice of the time account (views/device/account.py).

Shares are of the mean steady-state step's wall time, so no two findings charge the same
nanoseconds when each owns different causes (detectors/declare.py)."""

from __future__ import annotations

from dataclasses import dataclass

from crossview.views.device.account import CauseSlice, FrameNs
from crossview.views.views import Views


@dataclass(frozen=True)
class Slice:
    causes: tuple[str, ...]
    ns: int  # per mean steady step
    share: float  # of the mean steady step's wall time
    wall_ns: int  # the mean steady step
    steps: int  # step×device rows averaged
    top_frames: list[FrameNs]
    rows: list[CauseSlice]


def slice_of(v: Views, *causes: str) -> Slice | None:
    """The account's rows for these causes, summed; None without an account."""
    acc = v.account
    if acc is None:
        return None
    rows = [c for c in acc.steady_state if c.cause in causes]
    frames = sorted((f for c in rows for f in c.top_frames), key=lambda f: -f.ns)[:3]
    return Slice(causes, sum(c.ns for c in rows), sum(c.share_of_step for c in rows),
                 acc.steady_wall_ns, acc.steady_steps, frames, rows)


def claims(*causes: str) -> dict[str, object]:
    """The `details` entry naming the causes a finding charges."""
    return {"claims": list(causes)}


def per_step(v: Views) -> str:
    """How a sentence about the account's per-step rows opens: "Per steady step", or, when
    every step is warm-up / JIT / start-up (the rows summarize those), says so."""
    acc = v.account
    return ("Per step (none is steady: start-up)" if acc is not None and acc.steady_fallback
            else "Per steady step")

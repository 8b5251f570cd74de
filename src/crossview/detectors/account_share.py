"""A claim's share from its own slice of the time account (views/device/account.py).

Shares are of the mean steady-state step's wall time, so no two claims charge the same
nanoseconds when each owns different causes (detectors/declare.py)."""

from __future__ import annotations

from dataclasses import dataclass

from msgspec import Struct

from crossview.core.claim import Count, Ns, Share
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
    startup_only: bool  # every step is warm-up / JIT / start-up: the rows summarize those


def slice_of(v: Views, *causes: str) -> Slice | None:
    """The account's rows for these causes, summed; None without an account."""
    acc = v.account
    if acc is None:
        return None
    rows = [c for c in acc.steady_state if c.cause in causes]
    frames = sorted((f for c in rows for f in c.top_frames), key=lambda f: -f.ns)[:3]
    return Slice(causes, sum(c.ns for c in rows), sum(c.share_of_step for c in rows),
                 acc.steady_wall_ns, acc.steady_steps, frames, rows, acc.steady_fallback)


class FrameTime(Struct, frozen=True):
    frame: str
    ns: Ns


class CauseRow(Struct, frozen=True):
    cause: str
    label: str  # account.yaml's label
    ns: Ns
    share: Share


class AccountSlice(Struct, frozen=True, kw_only=True):
    """A slice of the time account as claim facts (typed, per mean steady step)."""

    ns: Ns
    share: Share
    wall_ns: Ns
    steps: Count
    top: tuple[FrameTime, ...] = ()
    rows: tuple[CauseRow, ...] = ()
    startup_only: bool = False


def facts(sl: Slice) -> AccountSlice:
    return AccountSlice(
        ns=sl.ns, share=sl.share, wall_ns=sl.wall_ns, steps=sl.steps,
        top=tuple(FrameTime(f.frame, f.ns) for f in sl.top_frames),
        rows=tuple(CauseRow(r.cause, r.label, r.ns, r.share_of_step) for r in sl.rows),
        startup_only=sl.startup_only)


def mean_of(s: AccountSlice) -> str:
    """(phrasing) "mean of 6 steps", or "one step"."""
    return "one step" if s.steps == 1 else f"mean of {s.steps} steps"


def per_step(s: AccountSlice | bool) -> str:
    """(phrasing) How a sentence about the account's per-step rows opens: "Per steady step",
    or, when every step is warm-up / JIT / start-up (the rows summarize those), says so."""
    startup = s if isinstance(s, bool) else s.startup_only
    return "Per step (none is steady: start-up)" if startup else "Per steady step"

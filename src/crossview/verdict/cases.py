"""A claim on its way to a finding: what the verdict decided about it, step by step.

One `Case` per claim: its declaration and pattern facts, the share it owns once overlaps are
resolved, the caveats that cap it, the replay's result for its lever (or the critical path
its kernel time is on), the predicted saving that ranks it, and its severity. Only
verdict/build.py turns a case into a Finding, once.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from crossview.core.claim import Claim
from crossview.core.finding import Severity
from crossview.detectors.declare import About, Declaration

if TYPE_CHECKING:  # the replay's results, named only: a capture with nothing to replay
    # loads no replay module (verdict/replayed.py imports them when it runs, issue 38)
    from crossview.replay.rank_findings import RankLevers
    from crossview.replay.whatif import Pinned


@dataclass(frozen=True)
class Replayed:
    """The replay of a claim's lever (verdict/replayed.py)."""

    lever: str
    measured_ns: float
    predicted_ns: float
    selfcheck: float  # the unchanged replay's largest step error
    bound_after: tuple[tuple[str, float], ...]  # the predicted step's critical path, largest
    pinned: Pinned | None  # unexplained launch → start delays hold the step (a lower bound)
    pinned_first: bool  # the first replay that says so (later ones refer to it)
    caveat: str | None  # what the lever leaves out of the fix (replay.yaml lever_caveats)
    ranks: RankLevers | None = None  # a job's ranks replayed together (the late-ranks claim)

    @property
    def held(self) -> bool:
        return self.pinned is not None and self.pinned.binds

    @property
    def predicts_fix(self) -> bool:
        """The lever models the whole fix and nothing pins the step: the replayed saving is
        the prediction; else it is a lower bound beside the claim's own bound."""
        return not self.held and self.caveat is None

    @property
    def saved(self) -> float:
        """The share of the measured median step the lever removes (≥ 0)."""
        if not self.measured_ns:
            return 0.0
        return max(self.measured_ns - self.predicted_ns, 0.0) / self.measured_ns

    @property
    def top(self) -> tuple[str, float] | None:
        """The largest cause on the predicted step's critical path and its share."""
        total = sum(ns for _, ns in self.bound_after)
        return (self.bound_after[0][0], self.bound_after[0][1] / total) \
            if self.bound_after and total > 0 else None


@dataclass(frozen=True)
class OnPath:
    """A kernel-side claim against the unchanged replay's critical path: the GPU kernels'
    share of it, and the largest cause on it."""

    on: float
    top: tuple[str, float]


@dataclass(frozen=True)
class Saving:
    """What ranks a finding: the share of the steady step its fix is predicted to save."""

    share: float
    source: str  # replay | bound
    basis: str  # what the share is of, in words
    bound: float = 0.0  # the claim's own bound before the critical path caps it (ties)

    def to_dict(self) -> dict[str, object]:
        return {"share_of_step": self.share, "from": self.source, "basis": self.basis}


@dataclass
class Case:
    claim: Claim
    decl: Declaration
    about: About
    share: float  # the share it owns (its claim's, less kernel time another claim owns)
    tier: str = ""  # the cut it crosses with the share it owns (its claim's unless narrowed)
    caveats: list[str] = field(default_factory=list)
    held_by: Case | None = None  # its time is another claim's (a note naming it)
    how_held: str = ""  # cause | within | overlap
    overlap: tuple[str, float] | None = None  # (pattern, share) of its kernels owned elsewhere
    parts: list[Case] = field(default_factory=list)  # claims whose time lies inside its own
    replay: Replayed | None = None
    same_as: tuple[str, str] | None = None  # (pattern, lever) of the replay that says it
    path: OnPath | None = None
    refuted: bool = False  # a near-null replay of the whole cause
    off_path: bool = False  # kernel-side: the step's critical path holds little of it
    off_path_demoted: bool = False  # … and that took a 🔴 away
    saving: Saving = Saving(0.0, "bound", "")
    severity: Severity = "info"
    others_red: tuple[str, ...] = ()  # the reds that stood when it was demoted

    @property
    def pattern(self) -> str:
        return self.claim.pattern

"""What each detector claims, and everything the verdict needs to know about its patterns: the
only home of a pattern's facts (issue 37).

A declaration names its pattern ids, `detect` (views → claims: typed, no prose) and `phrase`
(a claim → its sentences, from the claim's typed fields only), the account causes it owns,
the thresholds and fix keys it reads, and per pattern (`About`): which side a top finding of
it says limits throughput, the replay levers that model its fix, whether a near-null replay
refutes it, whether its saving is GPU kernel time, which patterns own overlapping kernel time
before it, which corroborating evidence speaks to it, and the change a replay shows is needed
next. `run` registers detectors from these declarations; tests check every declared threshold
exists in thresholds.yaml (or the named knowledge file), every fix key in fixes.yaml, every
lever in replay/levers, and that no two detectors own the same account cause.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

from crossview.core.claim import Claim, Phrasing
from crossview.views.views import Views

Side = Literal["host", "communication", "GPU kernel", "capture", "workload"]


@dataclass(frozen=True)
class About:
    """A pattern's facts (the verdict reads them; nothing else lists them)."""

    side: Side = "GPU kernel"
    # replay levers (replay/levers) that model the fix, the first the capture supports wins
    levers: tuple[str, ...] = ()
    # the lever replays the whole cause the finding claims: a near-null replay refutes it
    refutable: bool = False
    # the saving is GPU kernel time (faster or fewer kernels): bounded by the GPU kernels on
    # the replayed step's critical path
    kernel_side: bool = False
    # patterns ("pattern" or "pattern/form") that own overlapping kernel time first: this
    # claim keeps the rest (verdict/owners.py)
    yields_to: tuple[str, ...] = ()
    # other evidence that speaks to it: "host-cpu" (host CPU samples, verdict/build.py)
    corroborated_by: tuple[str, ...] = ()
    # after its lever's replay, the cause holding the predicted step (replay/measure.py label)
    # → the fixes.yaml key of the change needed next
    next_fix: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Declaration:
    patterns: tuple[str, ...]
    detect: Callable[[Views], list[Claim]]
    phrase: Callable[[Claim], Phrasing]
    causes: tuple[str, ...] = ()  # account causes (views/device/account.py) whose time it charges
    thresholds: tuple[str, ...] = ()  # thresholds.yaml keys, or "file.yaml:key"
    fix_keys: tuple[str, ...] = ()  # fixes.yaml keys
    # causes owned only in one launch-queue regime (the other regime's owner is named):
    # cpu_dispatch is kernel-launch-bound's when the queue is empty, else host-python's
    shared: dict[str, str] = field(default_factory=dict)
    # causes whose time it restates ("*": every idle cause): with a time account it is a
    # summary (a note), the owners of those causes carry the severity
    summarizes: tuple[str, ...] = ()
    about: About = About()  # the facts of every pattern it declares …
    per_pattern: dict[str, About] = field(default_factory=dict)  # … unless given here

    def about_of(self, pattern: str) -> About:
        return self.per_pattern.get(pattern, self.about)

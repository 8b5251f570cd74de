"""What each detector claims: its pattern ids, the account causes it owns, the thresholds and
fix keys it reads. `run_all` registers detectors from these declarations; a test checks every
declared threshold exists in thresholds.yaml (or the named knowledge file) and every fix key
in fixes.yaml, and that no two detectors own the same account cause."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from crossview.core.finding import Finding
from crossview.views.views import Views


@dataclass(frozen=True)
class Declaration:
    patterns: tuple[str, ...]
    detect: Callable[[Views], list[Finding]]
    causes: tuple[str, ...] = ()  # account causes (views/device/account.py) whose time it charges
    thresholds: tuple[str, ...] = ()  # thresholds.yaml keys, or "file.yaml:key"
    fix_keys: tuple[str, ...] = ()  # fixes.yaml keys
    # causes owned only in one launch-queue regime (the other regime's owner is named):
    # cpu_dispatch is kernel-launch-bound's when the queue is empty, else host-python's
    shared: dict[str, str] = field(default_factory=dict)
    # causes whose time it restates ("*": every idle cause): with a time account it is a
    # summary (info), the owners of those causes carry the severity
    summarizes: tuple[str, ...] = ()

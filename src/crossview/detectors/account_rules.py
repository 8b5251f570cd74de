"""Rules that keep findings consistent with the time account (views/device/account.py):

- a detector that only summarizes account causes (gpu-gap, low-gpu-utilization, sync-memcpy,
  …) is a note (info): the owners of those causes carry the severity;
- no two 🔴/🟡 findings charge the same cause: the larger keeps it, the other becomes a note;
- when the capture holds no steady state (every step warm-up / JIT / start-up), only the
  start-up finding keeps a severity; steady-state causes measured in start-up are notes.
"""

from __future__ import annotations

from crossview.core.finding import Finding
from crossview.detectors.declare import Declaration
from crossview.knowledge import causes
from crossview.views.device.account import Account

STARTUP_NOTE = (" Measured in start-up (this capture has no steady-state step): first launches"
                 " load modules and compile, so this says nothing about the steady state.")


def apply(acc: Account, found: list[Finding], decl_of: dict[int, Declaration]) -> None:
    startup = causes.rules().startup_causes
    for f in found:
        d = decl_of.get(id(f))
        if d is not None and d.summarizes and f.severity != "info":
            f.severity = "info"
    taken: set[str] = set()
    for f in sorted(found, key=lambda f: -f.share):
        if f.severity == "info":
            continue
        claimed = set(_claims(f))
        if claimed & taken:
            f.severity = "info"
            continue
        taken |= claimed
        if acc.steady_fallback and claimed and not claimed <= startup:
            f.severity = "info"  # measured in start-up: says nothing about the steady state
            f.observation += STARTUP_NOTE


def _claims(f: Finding) -> list[str]:
    c = f.details.get("claims") if isinstance(f.details, dict) else None
    return [str(x) for x in c] if isinstance(c, list) else []

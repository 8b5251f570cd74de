"""Step boundaries for the replay, in ONE function so the time-account's steps (issue 15) can
replace it: ProfilerStep#N ops, else repeated top-level NVTX/annotation ranges named like a
step, else the whole capture as one step."""

from __future__ import annotations

import re
from dataclasses import dataclass

from crossview.store.store import Store

_STEP_NAME = re.compile(r"(?i)\b(step|iteration|iter|train_batch|batch)\b")


@dataclass(frozen=True)
class Step:
    name: str
    lane: str  # "T pid/tid" of the host thread the step range is on; "" for the whole capture
    start_ns: int
    end_ns: int

    @property
    def dur_ns(self) -> int:
        return self.end_ns - self.start_ns


def step_windows(store: Store, artifact_id: int) -> tuple[str, list[Step]]:
    """(how the steps were found, the steps in time order)."""
    rows = store.sql(
        "SELECT name, pid, tid, start_ns, start_ns + dur_ns FROM host_ops "
        "WHERE artifact_id = ? AND depth = 0 AND kind IN ('op', 'annotation', 'other') "
        "AND regexp_matches(name, '^ProfilerStep#\\d+$') ORDER BY start_ns",
        [artifact_id]).fetchall()
    if rows:
        return "ProfilerStep#N ranges", [Step(n, f"T {p}/{t}", s, e) for n, p, t, s, e in rows]
    rows = store.sql(
        "SELECT name, pid, tid, start_ns, start_ns + dur_ns FROM host_ops "
        "WHERE artifact_id = ? AND depth = 0 AND kind = 'annotation' ORDER BY start_ns",
        [artifact_id]).fetchall()
    named: dict[str, list[Step]] = {}
    for n, p, t, s, e in rows:
        if _STEP_NAME.search(n or ""):
            named.setdefault(re.sub(r"\d+", "N", n), []).append(Step(n, f"T {p}/{t}", s, e))
    best = max(named.values(), key=len, default=[])
    if len(best) >= 2:
        return "NVTX/annotation ranges named like a step", best
    row = store.sql(
        "SELECT min(start_ns), max(start_ns + dur_ns) FROM host_ops WHERE artifact_id = ?",
        [artifact_id]).fetchone()
    if row is None or row[0] is None:
        return "none", []
    return "the whole capture (no step ranges)", [Step("capture", "", row[0], row[1])]


def unsteady(store: Store, artifact_id: int) -> dict[str, str]:
    """Step name → why it is not steady state (warm-up, JIT, outlier), from the time
    account's step detection (views/device/steps.py), for steps of this artifact."""
    from crossview.views.device.steps import detect

    out = {}
    for st in detect(store, "all").steps:
        if st.artifact_id == artifact_id and st.flags:
            out[st.name] = "; ".join(st.reasons) or ", ".join(st.flags)
    return out

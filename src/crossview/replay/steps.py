"""Step boundaries for the replay: the time account's steps (scope/step_detect.py), so a
replayed step is the step the recap's steps table and time account measure (decision 0806):
each on the host thread holding its range, ending at its GPU tail when its kernels finish
after the range does."""

from __future__ import annotations

from dataclasses import dataclass

from crossview.scope.step_detect import detect, source_phrase
from crossview.store.store import Store
from crossview.views import replay_rows

# how a step's end reaches past its host range (measure.py reads it)
TAIL_NONE, TAIL_LAUNCHED, TAIL_ALL = "", "launched", "all"


@dataclass(frozen=True)
class Step:
    name: str
    lane: str  # "T pid/tid" of the host thread the step starts on; "" for the whole capture
    start_ns: int
    end_ns: int
    range_end_ns: int | None = None  # the host range's end on `lane` (None: end_ns)
    # TAIL_LAUNCHED: the step lasts until the last kernel launched inside its range ends
    # (capped at the next step's start); TAIL_ALL: until the capture's last kernel ends
    tail: str = TAIL_NONE

    @property
    def dur_ns(self) -> int:
        return self.end_ns - self.start_ns

    @property
    def host_end_ns(self) -> int:
        return self.end_ns if self.range_end_ns is None else self.range_end_ns


def step_windows(store: Store, artifact_id: int) -> tuple[str, list[Step]]:
    """(how the steps were found, the steps in time order)."""
    how, steps, _ = windows(store, artifact_id)
    return how, steps


def windows(store: Store, artifact_id: int) -> tuple[str, list[Step], dict[str, str]]:
    """(how the steps were found, the steps in time order, step name → why it is not steady
    state: warm-up, JIT, outlier), from one step detection of the artifact."""
    found = detect(store, [artifact_id])
    steps = [s for s in found.steps if s.artifact_id == artifact_id]
    flagged = {s.name: "; ".join(s.reasons) or ", ".join(s.flags) for s in steps if s.flags}
    if not steps:
        return "none", [], {}
    out = []
    for s in steps:
        range_end = s.end_ns if s.range_end_ns is None else s.range_end_ns
        lane = _lane(store, artifact_id, s.start_ns,
                     None if found.source == "capture" else s.name)
        if found.source == "capture":
            out.append(Step(s.name, lane, s.start_ns, s.end_ns, None, TAIL_ALL)
                       if lane else Step(s.name, "", s.start_ns, s.end_ns))
        elif s.end_ns > range_end:
            out.append(Step(s.name, lane, s.start_ns, s.end_ns, range_end, TAIL_LAUNCHED))
        else:
            out.append(Step(s.name, lane, s.start_ns, s.end_ns))
    return source_phrase(found.source), out, flagged


def _lane(store: Store, artifact_id: int, start_ns: int, name: str | None) -> str:
    """The host thread of the step's range op (`name`), or for a whole-capture step the
    thread whose first op starts it (scope/step_detect `_one_unit`): "" when none does."""
    t = replay_rows.thread_at(store, artifact_id, start_ns, name)
    return f"T {t[0]}/{t[1]}" if t else ""


def marks(steps: list[Step]) -> dict[str, set[int]]:
    """Per host lane, the times the graph cuts its thread at (each step's start and range
    end): a step range nested in Python frames (Qwen's ProfilerStep at depth 10) starts and
    ends on graph nodes like a top-level one."""
    out: dict[str, set[int]] = {}
    for s in steps:
        if s.lane:
            out.setdefault(s.lane, set()).update(
                (s.start_ns,) if s.tail == TAIL_ALL else (s.start_ns, s.host_end_ns))
    return out


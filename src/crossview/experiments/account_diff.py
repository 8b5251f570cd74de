"""`crossview diff` through the time account (issue 16 item 6): per cause, time per steady
step on each side and its change; the step-time change; the CPU-side change (host self time
by frame per step) next to the GPU-side one. The "share of change" column is filled only when
the net step-time change exceeds the step-to-step noise (the larger standard deviation of
the two sides' steady step walls), known only with at least `noise.min_steady_steps` steady
steps on each side (knowledge/diff.yaml): with fewer it is unknown and no change is called
one. Host frames are matched by identity.frame_key (addresses, step numbers… replaced).
Under the machine's drift (experiments/drift.py) each busy cause's change beyond the GPU's
factor is B − A × factor; idle causes are compared as they are."""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from crossview.identity import frame_key
from crossview.knowledge.loader import load_yaml
from crossview.views.host import by_name

if TYPE_CHECKING:
    from crossview.analysis import Analysis


@dataclass
class CauseDelta:
    cause: str
    label: str
    a_ns: int  # per steady step
    b_ns: int
    idle: bool  # an idle cause (else busy: kernel family / exposed comm)
    share_of_change: float | None = None
    beyond_drift_ns: int | None = None  # busy: B − A × the GPU's factor (drift named only)

    @property
    def delta_ns(self) -> int:
        return self.b_ns - self.a_ns

    def to_dict(self) -> dict[str, object]:
        return {"cause": self.cause, "label": self.label, "a_ns": self.a_ns,
                "b_ns": self.b_ns, "delta_ns": self.delta_ns, "idle": self.idle,
                "share_of_change": self.share_of_change,
                "beyond_drift_ns": self.beyond_drift_ns}


@dataclass
class FrameDelta:
    frame: str
    a_ns: int  # host self time per steady step
    b_ns: int

    @property
    def delta_ns(self) -> int:
        return self.b_ns - self.a_ns

    def to_dict(self) -> dict[str, object]:
        return {"frame": self.frame, "a_ns": self.a_ns, "b_ns": self.b_ns,
                "delta_ns": self.delta_ns}


@dataclass
class AccountDiff:
    a_steps: int
    b_steps: int
    a_step_ns: int  # mean wall of a steady step (the account's: its causes sum to it)
    b_step_ns: int
    # step-to-step noise: the larger stdev of steady step walls; None: unknown (too few steps)
    noise_ns: int | None
    causes: list[CauseDelta]
    cpu_frames: list[FrameDelta] = field(default_factory=list)
    drift_factor: float | None = None  # the GPU's factor when drift is named

    @property
    def step_delta_ns(self) -> int:
        return self.b_step_ns - self.a_step_ns

    @property
    def noise_known(self) -> bool:
        return self.noise_ns is not None

    @property
    def beyond_noise(self) -> bool:
        """False when the noise is unknown: no change is called one without it."""
        return self.noise_ns is not None and abs(self.step_delta_ns) > self.noise_ns

    @property
    def main_change(self) -> CauseDelta | None:
        return max(self.causes, key=lambda c: abs(c.delta_ns), default=None)

    def to_dict(self) -> dict[str, object]:
        main = self.main_change
        return {"a_steady_steps": self.a_steps, "b_steady_steps": self.b_steps,
                "a_step_ns": self.a_step_ns, "b_step_ns": self.b_step_ns,
                "step_delta_ns": self.step_delta_ns, "noise_ns": self.noise_ns,
                "noise": "known" if self.noise_known else "unknown",
                "beyond_noise": self.beyond_noise if self.noise_known else None,
                "drift_factor": self.drift_factor,
                "main_change": main.cause if main else None,
                "causes": [c.to_dict() for c in self.causes],
                "cpu_frames": [f.to_dict() for f in self.cpu_frames]}


def _walls(r: Analysis) -> list[int]:
    assert r.views is not None
    return [s.wall_ns for s in r.views.steps.steady]


def _host_self(r: Analysis) -> dict[str, int]:
    """Host self time by frame per steady step (all host threads)."""
    assert r.views is not None
    steps = r.views.steps.steady
    if not steps:
        return {}
    rows = by_name.self_time_in(r.views.store, [(s.start_ns, s.end_ns) for s in steps])
    out: dict[str, int] = {}
    for n, t in rows:  # one frame across runs: `at 0x…`, ProfilerStep#16 / #21 (identity.py)
        key = frame_key(n)
        out[key] = out.get(key, 0) + t
    return {k: v // len(steps) for k, v in out.items()}


def noise(wa: list[int], wb: list[int]) -> int | None:
    """The larger stdev of the two sides' steady step walls; None with fewer than
    `noise.min_steady_steps` steps on a side."""
    least = int(load_yaml("diff.yaml")["noise"]["min_steady_steps"])
    if min(len(wa), len(wb)) < least:
        return None
    return int(max(statistics.pstdev(wa), statistics.pstdev(wb)))


def explain(a: Analysis, b: Analysis, drift_factor: float | None = None) -> AccountDiff | None:
    """None when either side has no time account (no kernels) or no steps. `drift_factor`:
    the GPU's factor when the machine's drift was named (busy causes then get their change
    beyond it)."""
    if a.views is None or b.views is None:
        return None
    acc_a, acc_b = a.views.account, b.views.account
    wa, wb = _walls(a), _walls(b)
    if acc_a is None or acc_b is None or not wa or not wb:
        return None
    rows_a = {c.cause: c for c in acc_a.steady_state}
    rows_b = {c.cause: c for c in acc_b.steady_state}
    causes = []
    for key in sorted(set(rows_a) | set(rows_b)):
        ca, cb = rows_a.get(key), rows_b.get(key)
        any_ = ca or cb
        assert any_ is not None
        c = CauseDelta(key, any_.label, ca.ns if ca else 0, cb.ns if cb else 0, any_.idle)
        if drift_factor is not None and not c.idle:
            c.beyond_drift_ns = int(c.b_ns - c.a_ns * drift_factor)
        causes.append(c)
    d = AccountDiff(len(wa), len(wb), acc_a.steady_wall_ns, acc_b.steady_wall_ns,
                    noise(wa, wb), sorted(causes, key=lambda c: -abs(c.delta_ns)),
                    drift_factor=drift_factor)
    if d.beyond_noise and d.step_delta_ns:
        for c in d.causes:
            c.share_of_change = c.delta_ns / d.step_delta_ns
    top = int(load_yaml("replay.yaml")["diff"]["cpu_frames"])
    ha, hb = _host_self(a), _host_self(b)
    frames = [FrameDelta(f, ha.get(f, 0), hb.get(f, 0)) for f in set(ha) | set(hb)]
    d.cpu_frames = sorted(frames, key=lambda f: (-abs(f.delta_ns), f.frame))[:top]
    return d

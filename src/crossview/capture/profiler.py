"""The torch.profiler side of a capture: record_shapes + with_stack, a wait/warmup/active
schedule that skips warm-up, one gzipped Kineto trace per active window.

Step boundaries come from `Capture.step()` / `crossview.capture.step()`. In script mode
(`optimizer_steps=True`) every `optimizer.step()` also ends a step (a global post-hook), so a
training script needs no edit; the hook runs inside torch's `Optimizer.step` annotation, so the
step marks nest oddly there and the hook is dropped at the first explicit step. `whole=True`
drops the schedule and records from start to stop (for a workload without step boundaries).
Imports torch only when started.
"""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

TRACE_DIR = "traces"


@dataclass(frozen=True)
class Schedule:
    wait: int = 1
    warmup: int = 1
    active: int = 3
    repeat: int = 1
    whole: bool = False  # no schedule: record everything between start and stop

    def describe(self) -> str:
        if self.whole:
            return "whole run (no schedule)"
        return (f"wait {self.wait}, warmup {self.warmup}, active {self.active}, "
                f"repeat {self.repeat} (steps)")

    def to_env(self) -> str:
        return "whole" if self.whole else f"{self.wait},{self.warmup},{self.active},{self.repeat}"

    @staticmethod
    def from_env(text: str) -> Schedule:
        if text == "whole":
            return Schedule(whole=True)
        w, u, a, r = (int(x) for x in text.split(","))
        return Schedule(w, u, a, r)


@dataclass
class TorchProfiler:
    bundle: Path
    schedule: Schedule = field(default_factory=Schedule)
    steps: int = 0
    files: list[str] = field(default_factory=list)  # bundle-relative trace paths
    problems: list[str] = field(default_factory=list)
    gpu: bool = False  # CUDA activity recorded
    optimizer_steps: bool = False  # optimizer.step() ends a step until an explicit step()
    _prof: Any = None
    _hook: Any = None

    def _export(self, prof: Any) -> None:
        rel = (f"{TRACE_DIR}/{socket.gethostname()}_{os.getpid()}"
               f".{len(self.files)}.pt.trace.json.gz")
        path = self.bundle / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        prof.export_chrome_trace(str(path))
        self.files.append(rel)

    def start(self) -> TorchProfiler:
        # lazy: optional dependency (torch: extra `capture`)
        import torch
        from torch.optim.optimizer import register_optimizer_step_post_hook
        from torch.profiler import ProfilerActivity, profile, schedule

        acts = [ProfilerActivity.CPU]
        if torch.cuda.is_available():
            acts.append(ProfilerActivity.CUDA)
            self.gpu = True
        s = self.schedule
        sched = None if s.whole else schedule(wait=s.wait, warmup=s.warmup, active=s.active,
                                              repeat=s.repeat)
        self._prof = profile(activities=acts, record_shapes=True, with_stack=True,
                             schedule=sched, on_trace_ready=self._export)
        self._prof.start()
        if self.optimizer_steps:
            self._hook = register_optimizer_step_post_hook(lambda *_: self._advance())
        global _ACTIVE
        _ACTIVE = self
        return self

    def step(self) -> None:
        """An explicit step boundary: from now on optimizer.step() no longer counts."""
        if self._hook is not None:
            self._hook.remove()
            self._hook = None
        self._advance()

    def _advance(self) -> None:
        if self._prof is not None:
            self._prof.step()
            self.steps += 1

    def stop(self) -> None:
        global _ACTIVE
        if self._prof is None:
            return
        if self._hook is not None:
            self._hook.remove()
            self._hook = None
        try:
            self._prof.stop()
        finally:
            self._prof = None
            if _ACTIVE is self:
                _ACTIVE = None
        s = self.schedule
        if s.whole:
            return
        need = s.wait + s.warmup + s.active
        if not self.files:
            self.problems.append(
                f"no trace written: {self.steps} step boundar{'y' if self.steps == 1 else 'ies'}"
                f" seen, the schedule ({s.describe()}) records from step {s.wait + s.warmup + 1}"
                " — call crossview.capture.step() once per iteration, lower"
                " --wait/--warmup, or record the whole run (--whole)")
        elif self.steps < need:
            self.problems.append(f"stopped inside the active window: {self.steps} step(s) of "
                                 f"{need} scheduled, the last trace is partial")


_ACTIVE: TorchProfiler | None = None


def step() -> None:
    """Mark a step boundary for the capture running in this process (no-op when none)."""
    if _ACTIVE is not None:
        _ACTIVE.step()

"""Step-detection rules (steps.yaml), typed."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache

from crossview.knowledge.loader import load_yaml


@dataclass(frozen=True)
class StepRules:
    profiler_step: re.Pattern[str]
    engine_steps: dict[str, re.Pattern[str]]
    repeat_min: int
    repeat_min_cover_share: float
    warmup_ratio: float
    outlier_ratio: float
    jit_step_share: float
    startup_step_share: float
    step_rows: int
    flag_min_steps: int


@cache
def rules() -> StepRules:
    d = load_yaml("steps.yaml")
    return StepRules(
        re.compile(d["profiler_step"]),
        {e: re.compile("|".join(f"(?:{p})" for p in ps)) for e, ps in d["engine_steps"].items()},
        int(d["repeat_min"]), float(d["repeat_min_cover_share"]), float(d["warmup_ratio"]),
        float(d["outlier_ratio"]), float(d["jit_step_share"]),
        float(d["startup_step_share"]), int(d["step_rows"]), int(d["flag_min_steps"]),
    )

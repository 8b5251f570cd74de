"""The batch each step ran, as a serving engine's own step annotation states it.

vLLM names every model-runner step after its batch (knowledge/steps.yaml `engine_batch`):
prefill requests and tokens, decode requests and tokens. The fixes that depend on the batch
size (which CUDA graph, if any, can cover the step) read it from here, never from a guess.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache

from crossview.knowledge.loader import load_yaml
from crossview.scope.step_detect import Step
from crossview.views.views import Views


@dataclass(frozen=True)
class StepBatch:
    step_index: int
    annotation: str
    prefill_reqs: int
    prefill_tokens: int
    decode_reqs: int
    decode_tokens: int

    @property
    def tokens(self) -> int:
        return self.prefill_tokens + self.decode_tokens


@cache
def _patterns(engine: str) -> tuple[re.Pattern[str], ...]:
    return tuple(re.compile(p) for p in
                 (load_yaml("steps.yaml").get("engine_batch") or {}).get(engine) or ())


def batches(v: Views, engine: str | None, steps: list[Step]) -> list[StepBatch]:
    """One entry per step that overlaps the engine's batch annotation (the first one; the
    annotation can enclose the step's python frame)."""
    pats = _patterns(engine) if engine else ()
    if not pats or not steps:
        return []
    rows = v.store.sql(
        "SELECT h.artifact_id, h.start_ns, h.start_ns + h.dur_ns, h.name FROM host_ops h"
        " WHERE h.kind = 'annotation' AND (" + " OR ".join(
            "regexp_full_match(h.name, ?)" for _ in pats) + ") ORDER BY 1, 2",
        [p.pattern for p in pats]).fetchall()
    out: list[StepBatch] = []
    for s in steps:
        for aid, start, end, name in rows:
            m = next((m for p in pats if (m := p.match(str(name)))), None)
            if aid == s.artifact_id and int(start) < s.end_ns and int(end) > s.start_ns and m:
                g = {k: int(v) for k, v in m.groupdict().items()}
                out.append(StepBatch(s.index, str(name), g["prefill_reqs"],
                                     g["prefill_tokens"], g["decode_reqs"], g["decode_tokens"]))
                break
    return out


def vllm_graph_size(tokens: int) -> int:
    """The capture size vLLM would pad a step of this many tokens to (sizes above 256 step by
    `step_above_256`, steps.yaml vllm_graph_sizes)."""
    step = int(load_yaml("steps.yaml")["vllm_graph_sizes"]["step_above_256"])
    return -(-tokens // step) * step


def vllm_default_max_graph() -> int:
    return int(load_yaml("steps.yaml")["vllm_graph_sizes"]["default_max"])

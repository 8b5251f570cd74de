"""Operator performance models: FLOPs and minimal DRAM bytes of one host-op call from its
recorded input shapes and dtypes (Kineto `record_shapes=True`).

One module per family (matmul, conv, attention, norm, softmax, elementwise, embedding); each
model is a small function whose docstring states its formulas. Which op uses which model is
data: knowledge/op_models.yaml. `cost(name, dims, types, concrete)` is the one entry point.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable
from functools import cache

from crossview.knowledge.loader import load_yaml
from crossview.opmodels.dtypes import TABLE
from crossview.opmodels.inputs import OpCost, OpInputs

Model = Callable[[OpInputs], "OpCost | None"]


def _resolve(ref: str) -> Model:
    module, func = ref.rsplit(".", 1)
    fn = getattr(importlib.import_module(f"crossview.opmodels.{module}"), func)
    return fn


@cache
def _tables() -> tuple[dict[str, Model], tuple[tuple[re.Pattern[str], Model], ...]]:
    data = load_yaml(TABLE)
    ops = {str(k): _resolve(str(v)) for k, v in data["ops"].items()}
    pats = tuple((re.compile(p["match"]), _resolve(p["model"])) for p in data["patterns"])
    return ops, pats


def model_for(name: str) -> Model | None:
    """The model of an op name (exact entry first, then the first matching pattern)."""
    ops, pats = _tables()
    if name in ops:
        return ops[name]
    return next((m for rx, m in pats if rx.search(name)), None)


def modeled(names: list[str]) -> list[str]:
    """The names among `names` that have a model."""
    return [n for n in names if model_for(n) is not None]


@cache
def cost(name: str, dims: str | None, types: str | None, concrete: str | None
         ) -> OpCost | None:
    """One call's cost from the op_args JSON texts, or None (no model, or the recorded inputs
    do not determine it). Cached: a trace repeats few distinct (op, shapes) many times."""
    model = model_for(name)
    if model is None or dims is None:
        return None
    try:
        return model(OpInputs.from_json(name, dims, types, concrete))
    except (TypeError, ValueError, IndexError, ZeroDivisionError):
        return None  # hostile or odd recorded values: unmodeled, never a crash


__all__ = ["OpCost", "OpInputs", "cost", "model_for", "modeled"]

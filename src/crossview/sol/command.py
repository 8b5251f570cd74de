"""The `crossview sol` use case: load the model and the GPU, bound, rate a benchmark arm.
Reading the benchmark file (analysis) and rendering (render/sol.py) stay in the shells."""

from __future__ import annotations

from crossview.core.bench_arm import BenchArm
from crossview.errors import UsageError
from crossview.knowledge import hardware
from crossview.sol import llm as llm_sol
from crossview.sol.bench import BenchSol, compare, setup_from
from crossview.sources import model_config


def gpu(name: str) -> hardware.HwSpec:
    """A sol_ceilings.yaml key or a device name; unknown → stated, never guessed."""
    hw = hardware.by_key(name) or hardware.match(name)
    if hw is None:
        raise UsageError(f"--hardware {name!r}: not in sol_ceilings.yaml (known keys: "
                         + ", ".join(sorted(hardware.specs())) + ")")
    return hw


def bound(model: str, hw_name: str, *, dtype: str, kv_dtype: str, tp: int | None,
          batch: int | None, isl: int | None, osl: int | None, arm: BenchArm | None
          ) -> tuple[llm_sol.SolResult, BenchSol | None, list[str]]:
    """The bounds, the benchmark arm rated against them (when given) and the notes on which
    setup values were read from the arm or defaulted. The shells (cli/sol.py, the MCP
    `sol_bounds` tool) read the arm (analysis.bench_arms) and render the answer."""
    shape = model_config.load(model)
    hw = gpu(hw_name)
    setup, notes = setup_from(arm, dtype=dtype, kv_dtype=kv_dtype, tp=tp, batch=batch,
                              isl=isl, osl=osl)
    try:
        result = llm_sol.solve(shape, hw, setup)
    except llm_sol.SolError as e:
        raise UsageError(str(e)) from None
    rated: BenchSol | None = compare(arm, result) if arm else None
    if not arm:
        notes = [n for n in notes if "default" in n]
    return result, rated, notes

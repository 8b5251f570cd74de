"""The `crossview sol` use case: load the model and the GPU, bound, rate a benchmark, render.
Kept out of cli.py so the CLI stays a thin shell."""

from __future__ import annotations

from pathlib import Path

from crossview.errors import InputError, UsageError
from crossview.knowledge import hardware, model_config
from crossview.sol import llm as llm_sol
from crossview.sol.bench import BenchSol, compare, setup_from
from crossview.views.workload.bench import BenchArm


def gpu(name: str) -> hardware.HwSpec:
    """A sol_ceilings.yaml key or a device name; unknown → stated, never guessed."""
    hw = hardware.by_key(name) or hardware.match(name)
    if hw is None:
        raise UsageError(f"--hardware {name!r}: not in sol_ceilings.yaml (known keys: "
                         + ", ".join(sorted(hardware.specs())) + ")")
    return hw


def bench_arms(path: Path) -> list[BenchArm]:
    from crossview.analysis import analyze

    a = analyze([path])
    if a.rejected:
        r = a.rejected[0]
        raise InputError(r.path, "; ".join(r.problems))
    arms = a.views.gpu_metrics.bench if a.views else []
    if not arms:
        raise InputError(path, "no benchmark result (vllm bench / generic trials) in this file")
    return arms


def run(model: str, hw_name: str, *, dtype: str, kv_dtype: str, tp: int | None,
        batch: int | None, isl: int | None, osl: int | None, bench: Path | None,
        as_json: bool) -> str:
    from crossview.render import sol as out

    shape = model_config.load(model)
    hw = gpu(hw_name)
    arm = bench_arms(bench)[0] if bench else None
    setup, notes = setup_from(arm, dtype=dtype, kv_dtype=kv_dtype, tp=tp, batch=batch,
                              isl=isl, osl=osl)
    try:
        result = llm_sol.solve(shape, hw, setup)
    except llm_sol.SolError as e:
        raise UsageError(str(e)) from None
    rated: BenchSol | None = compare(arm, result) if arm else None
    if not arm:
        notes = [n for n in notes if "default" in n]
    return out.render_json(result, rated, notes) if as_json else out.render(result, rated,
                                                                            notes)

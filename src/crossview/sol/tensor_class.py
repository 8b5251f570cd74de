"""Tensor-core class of one ncu-profiled kernel (issue 17): is it a tensor-core kernel, how
busy was its tensor pipe, and which ceiling judges its FLOP/s. A kernel whose tensor pipe ran
is never judged on the FP32 ceiling: with its tensor operations counted it is judged on the
ceiling of their datatype (sol/roofline.py), without them on nothing — the datatype's
ceiling is named when the kernel name gives it, else stated unknown. Tables: ncu_metrics.yaml."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache

from crossview.knowledge.hardware import HwSpec
from crossview.knowledge.loader import load_yaml
from crossview.sol.kernel_inputs import KernelInputs

TENSOR_KEYS_SUFFIX = "_tensor"


@dataclass(frozen=True)
class TensorClass:
    compute_class: str  # tensor-core | cuda-core | not collected
    pipe_pct: float | None  # tensor pipe utilization, % of peak (when collected)
    pipe_evidence: str
    ceiling_key: str | None  # sol_ceilings precision key that judges it
    ceiling_flops_per_s: float | None
    note: str  # one line: the class, its evidence and what judges it
    judge_fp32: bool  # False: FP32/FP16-pipe FLOP/s must not be its roofline %


@cache
def _tables() -> tuple[re.Pattern[str], tuple[tuple[re.Pattern[str], tuple[str, ...]], ...]]:
    t = load_yaml("ncu_metrics.yaml")
    return (re.compile(t["tensor_pipe_pct"]),
            tuple((re.compile(h["pattern"]), tuple(h["ceilings"]))
                  for h in t["tensor_name_hints"]))


def pipe_pct(inp: KernelInputs) -> tuple[float | None, str]:
    pat, _ = _tables()
    seen = [(m, v) for m, v in inp.matching(pat) if v is not None]
    if not seen:
        return None, ""
    m, v = max(seen, key=lambda mv: mv[1].value)
    return v.value, v.cite()


def classify(name: str, tensor_cores: bool | None, tensor_how: str, inp: KernelInputs,
             flops: dict[str, float], spec: HwSpec | None) -> TensorClass:
    pct, pct_how = pipe_pct(inp)
    if tensor_cores is None:
        return TensorClass("not collected", None, "", None, None,
                           "tensor-core use not collected (no sm__pipe_tensor_* / "
                           "sm__inst_executed_pipe_tensor* / sm__ops_path_tensor_* metric)",
                           True)
    if tensor_cores is False:
        return TensorClass("cuda-core", pct, pct_how, None, None,
                           f"CUDA cores: {tensor_how}", True)
    counted = [k for k in flops if k.endswith(TENSOR_KEYS_SUFFIX) and flops[k] > 0]
    key: str | None
    if counted:
        key = max(counted, key=lambda k: flops[k])
        peak = spec.peak_flops(key) if spec else None
        return TensorClass("tensor-core", pct, pct_how, key, peak,
                           f"tensor cores ({tensor_how}); judged on the {key} ceiling", False)
    _, hints = _tables()
    keys = next((ks for rx, ks in hints if rx.search(name)), None)
    if keys:
        key = next((k for k in keys if spec and spec.peak_flops(k) is not None), keys[0])
        peak = spec.peak_flops(key) if spec else None
        ceiling = (f"the {key} ceiling ({peak / 1e12:,.4g} TFLOP/s, datatype from the kernel "
                   "name)" if peak else f"the {key} ceiling (datatype from the kernel name; "
                   "value unknown for this GPU)")
    else:
        key, peak, ceiling = None, None, "a tensor ceiling of unknown datatype"
    return TensorClass(
        "tensor-core", pct, pct_how, key, peak,
        f"tensor cores ({tensor_how}) but their operations were not counted "
        f"(sm__ops_path_tensor_*): judged on {ceiling}, achieved tensor FLOP/s unknown — "
        "never on FP32 FLOP/s", False)

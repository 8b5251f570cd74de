"""kernel-launch-bound on a step that torch.compile already runs without CUDA graphs.

hta_v100_ddp_training records AOTAutograd's `CompiledFunction` / `CompiledFunctionBackward`
ops and no `cudaGraphLaunch` (counted in the test from the raw JSON), so "use torch.compile"
is not the fix. None of its 19,370 kernels is a Triton kernel (Inductor's), so the backend is
not Inductor: the fix says to compile with Inductor (fusion) and then mode="reduce-overhead"
(graphs), quoting the kernel counts read from the raw JSON. (A compiled capture with Triton
kernels gets the `compiled` variant: no shared capture has one.)
hta_a100_ddp_resnet_nccl records neither: the default fix stays.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

import oracle
from conftest import SHARED_DATA, SHARED_DATA_ABSENT
from crossview.analysis import analyze

V100 = SHARED_DATA / "kineto" / "hta_v100_ddp_training.json.gz"
A100 = SHARED_DATA / "kineto" / "hta_a100_ddp_resnet_nccl.json.gz"
pytestmark = pytest.mark.skipif(not V100.exists(), reason=SHARED_DATA_ABSENT)


def _names(path: Path) -> Counter[str]:
    return Counter(e.get("name", "") for e in oracle.complete_events(path))


def test_compiled_step_without_graphs_is_told_reduce_overhead() -> None:
    names = _names(V100)
    assert names["CompiledFunction"] > 0 and names["CompiledFunctionBackward"] > 0
    assert names["cudaGraphLaunch"] == 0
    (f,) = [f for f in analyze([V100]).findings if f.pattern == "kernel-launch-bound"]
    assert f.severity == "red"
    kernels = [e for e in oracle.complete_events(V100) if e.get("cat") == "kernel"]
    assert not [k for k in kernels if k["name"].startswith("triton")]
    assert f.fix.startswith("The step runs through torch.compile")
    assert f"none of its {len(kernels):,} kernels is Inductor's" in f.fix
    assert "`torch.compile(model)` (Inductor)" in f.fix and 'mode="reduce-overhead"' in f.fix


def test_uncompiled_step_keeps_the_default_fix() -> None:
    names = _names(A100)
    assert not any(n.startswith(("CompiledFunction", "Torch-Compiled Region")) for n in names)
    (f,) = [f for f in analyze([A100]).findings if f.pattern == "kernel-launch-bound"]
    assert f.fix.startswith("Fuse and batch the small kernels")

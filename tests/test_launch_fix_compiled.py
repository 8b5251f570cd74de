"""kernel-launch-bound on a step that torch.compile already runs without CUDA graphs.

hta_v100_ddp_training records AOTAutograd's `CompiledFunction` / `CompiledFunctionBackward`
ops and no `cudaGraphLaunch` (counted in the test from the raw JSON), so "use torch.compile"
is not the fix: compiling with mode="reduce-overhead" (graphs) and removing graph breaks is.
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
    assert f.fix.startswith("The step already runs through torch.compile")
    assert 'mode="reduce-overhead"' in f.fix and "TORCH_LOGS=graph_breaks" in f.fix


def test_uncompiled_step_keeps_the_default_fix() -> None:
    names = _names(A100)
    assert not any(n.startswith(("CompiledFunction", "Torch-Compiled Region")) for n in names)
    (f,) = [f for f in analyze([A100]).findings if f.pattern == "kernel-launch-bound"]
    assert f.fix.startswith("Fuse and batch the small kernels")

"""The capture context (views/capture_context.py, issue 37) on the real captures: what kind of
program each shows, with the evidence each fact stands on. Expected values read by hand from
the traces (module names, recorded arguments, frames) and written down per case."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import SHARED_DATA, shared_file
from crossview.knowledge.thresholds import defaults
from crossview.scope.filter import Filter
from crossview.scope.resolve import resolve
from crossview.sources.registry import read_all
from crossview.store.store import Store
from crossview.views.capture_context import CaptureContext
from crossview.views.views import Views


def _context(rel: str) -> CaptureContext:
    path = shared_file(SHARED_DATA / rel)
    st = Store()
    read_all([Path(path)], st)
    return Views(st, resolve(st, Filter()), defaults()).context


# (capture, frameworks, phase, engine, models, generation, code)
CASES = [
    # ResNet-50 training: conv kernels, backward ops, torchvision/DataLoader frames of the script
    ("kineto/kineto_v100_resnet50_workers0.pt.trace.json.gz", ("pytorch",), "training", None,
     ("conv-net",), "volta"),
    # HF transformers Qwen2 forward: SDPA recorded with is_causal=True
    ("kineto/tracelens_h100_hf_qwen1.5_0.5b_forward.json.gz", ("pytorch",), "inference",
     "transformers", ("causal-decoder",), "hopper"),
    # vLLM serving gpt-oss (GptOssForCausalLM, FusedMoE) on B200
    ("kineto/tracelens_b200_vllm_eager_prefill_tp8.json.gz", ("pytorch", "triton"), "inference",
     "vllm", ("causal-decoder", "moe"), "blackwell"),
    # DDP training, no model-kind markers (no conv share, no attention, no model class name)
    ("kineto/hta_v100_ddp_training.json.gz", ("pytorch",), "training", None, (), "volta"),
    # JACC.jl: sampled Julia runtime frames, no CUDA traced
    ("nsys/jacc_a100_cpu_sampling_nsys2026.2.sqlite", ("julia",), None, None, (), "ampere"),
    # plain CUDA ncu report: no framework frames
    ("ncu/cudacode_rtx2080ti_two_kernels.ncu-rep", (), None, None, (), "turing"),
]


@pytest.mark.parametrize(("rel", "frameworks", "phase", "engine", "models", "generation"),
                         CASES, ids=[c[0].split("/")[-1] for c in CASES])
def test_context_of_real_captures(rel: str, frameworks: tuple[str, ...], phase: str | None,
                                  engine: str | None, models: tuple[str, ...],
                                  generation: str) -> None:
    c = _context(rel)
    assert c.framework_names == frameworks
    assert (c.phase.value if c.phase else None) == phase
    assert (c.engine.value if c.engine else None) == engine
    assert c.model_names == models
    assert c.generation == generation
    for f in (*c.frameworks, *c.models, *([c.phase] if c.phase else [])):
        assert f.evidence, f"{rel}: {f.value} stands on no evidence"


def test_unknown_is_unmet() -> None:
    """A fact the capture does not show is None (unknown), so a requirement on it is unmet."""
    c = _context("ncu/cudacode_rtx2080ti_two_kernels.ncu-rep")
    assert c.has("framework", "pytorch") is None and c.has("model", "causal-decoder") is None
    assert c.has("engine", "vllm") is None and c.has("phase", "training") is None
    q = _context("kineto/tracelens_h100_hf_qwen1.5_0.5b_forward.json.gz")
    assert q.has("framework", "pytorch") is True and q.has("framework", "jax") is False
    assert q.has("model", "causal-decoder") is True and q.has("model", "encoder") is False
    # the causal decoder is shown by the recorded attention argument, not assumed
    assert "is_causal=True" in q.models[0].evidence
    # H100 states FP8 tensor cores; the V100 (Volta) does not state BF16
    assert q.has("dtype", "fp8") is True
    v = _context("kineto/kineto_v100_resnet50_workers0.pt.trace.json.gz")
    assert v.has("dtype", "bf16") is False and v.has("dtype", "fp16") is True

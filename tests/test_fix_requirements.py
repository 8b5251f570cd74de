"""Fix variants declare what they require of the capture (fixes.yaml `requires`, issue 37):
a fix that only PyTorch (or a model kind, a dtype) can take is printed only where the capture
shows it. These checks read the YAML: a variant whose text names a PyTorch-only API must
require the PyTorch framework (or a serving engine, which runs on it); one that sets
`is_causal=True` must require a causal decoder; one that moves to FP8 must require a GPU that
states FP8 (or say that condition). A key with no variant that fits prints no fix at all, never
another program's: tests/eval/cases.yaml forbids torch phrases in the recaps of the plain-CUDA
and Julia captures."""

from __future__ import annotations

import re

from crossview.knowledge.loader import load_typed
from crossview.knowledge.schemas import FixVariant

# names only PyTorch programs have (the CUDA runtime calls and nsys options are neutral)
TORCH_ONLY = re.compile(r"torch\.|`torch|DataLoader\(|DataLoader `|autocast|Hugging Face|"
                        r"pin_memory|non_blocking|\.item\(\)|nn\.Module|num_workers|"
                        r"model\.to\(|from_pretrained|optimize_ddp|broadcast_buffers|"
                        r"mode=\\?\"reduce-overhead|scaled_dot_product_attention")
ENGINES = {"vllm", "sglang", "trtllm", "transformers", "triton-server", "dynamo"}


def _all() -> list[tuple[str, FixVariant]]:
    return [(k, v) for k, vs in load_typed("fixes.yaml").items() for v in vs]


def test_pytorch_only_fixes_require_pytorch() -> None:
    bad = [f"{k}/{v.name}: {TORCH_ONLY.search(v.text).group(0)!r}"  # type: ignore[union-attr]
           for k, v in _all() if TORCH_ONLY.search(v.text)
           and v.requires.framework != "pytorch" and v.requires.engine not in ENGINES]
    assert not bad, "PyTorch-only fixes without a PyTorch requirement: " + "; ".join(bad)


def test_causal_mask_requires_a_causal_decoder() -> None:
    bad = [f"{k}/{v.name}" for k, v in _all()
           if "is_causal=True" in v.text and v.requires.model != "causal-decoder"]
    assert not bad, bad


def test_fp8_requires_fp8() -> None:
    """A variant that moves to FP8 requires a GPU that states FP8 tensor cores, or says the
    condition in its text (an engine's FP8 options run on GPUs without FP8 math: vLLM stores
    FP8 weights / KV and computes in 16 bits there)."""
    conditional = re.compile(r"no FP8|where the GPU has FP8|on Hopper|only where|→ fp8|ncu")
    bad = [f"{k}/{v.name}" for k, v in _all()
           if re.search(r"\bfp8\b", v.text, re.I) and v.requires.dtype != "fp8"
           and v.requires.engine is None and not conditional.search(v.text)]
    assert not bad, bad

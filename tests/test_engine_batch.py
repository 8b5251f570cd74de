"""The batch a vLLM step ran, read from vLLM's own step annotation, and the launch-bound fix
that depends on it (a step above vLLM's default largest CUDA-graph size runs eager even with
graphs on, so "drop --enforce-eager" alone cannot help it).

Every expected number is read here from the raw trace JSON (tests/oracle.py, no crossview):
the annotation's name, split by hand. Skips with a reason when ../shared/data is absent.
"""

from __future__ import annotations

import pytest

from conftest import SHARED_DATA, SHARED_DATA_ABSENT
from crossview.analysis import analyze
from crossview.views.host import engine_batch
from oracle import complete_events

KINETO = SHARED_DATA / "kineto"
B200 = KINETO / "tracelens_b200_vllm_eager_prefill_tp8.json.gz"
MI300X = KINETO / "tracelens_mi300x_vllm_decode_full_graph.json.gz"


def need(path):  # type: ignore[no-untyped-def]
    if not path.exists():
        pytest.skip(SHARED_DATA_ABSENT)
    return path


def _annotations(path, prefix: str) -> list[str]:  # type: ignore[no-untyped-def]
    return [e["name"] for e in complete_events(path)
            if e["cat"] == "user_annotation" and e["name"].startswith(prefix)]


def test_b200_step_is_one_888_token_prefill_and_the_fix_sizes_the_graph_to_it() -> None:
    """`execute_context_1(888_788544)_generation_0(0)`: 1 prefill request of 888 tokens (the
    second number is Σ tokens² = 888² = 788,544), no decode. 888 > vLLM's default largest
    capture size 512, so the fix adds 896 (888 rounded up to vLLM's step of 16 above 256)."""
    (name,) = _annotations(need(B200), "execute_context_")
    ctx, gen = name.removeprefix("execute_context_").split("_generation_")
    reqs, rest = ctx.split("(")
    tokens, squares = rest.rstrip(")").split("_")
    assert (int(reqs), int(tokens), int(squares)) == (1, 888, 888 ** 2)
    assert gen == "0(0)"
    a = analyze([B200])
    v = a.views
    assert v is not None and v.engine == "vllm"
    (b,) = engine_batch.batches(v, v.engine, v.steps.steady)
    assert (b.prefill_reqs, b.prefill_tokens, b.decode_reqs, b.decode_tokens) == (1, 888, 0, 0)
    assert engine_batch.vllm_graph_size(888) == 896  # 888 rounded up to a multiple of 16
    (f,) = [f for f in a.findings if f.pattern == "kernel-launch-bound"]
    assert f"annotation `{name}` states it: 888 tokens (888 prefill in 1 request" in f.observation
    assert "this step carries 888 tokens" in f.fix
    assert '"cudagraph_capture_sizes": [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 896]' in f.fix
    assert "`--max-num-batched-tokens 512`" in f.fix
    (g,) = [f for f in a.findings if f.pattern == "cuda-graphs-missing"]
    assert "a step of 888 tokens is above vLLM's default largest capture size" in g.fix


def test_mi300x_decode_annotation_of_the_other_format_is_read() -> None:
    """`execute_32_context_0(sq0sk0…)_generation_32(sq32sk55086…)`: 32 decode requests with
    32 query tokens (sq) over 55,086 KV tokens (sk); no prefill. 32 tokens fit a graph."""
    (name,) = _annotations(need(MI300X), "execute_")
    gen = name.split("_generation_")[1]
    assert name.startswith("execute_32_context_0(sq0sk0") and gen.startswith("32(sq32sk55086")
    a = analyze([MI300X])
    v = a.views
    assert v is not None
    (b,) = engine_batch.batches(v, v.engine, v.steps.steady)
    assert (b.prefill_reqs, b.prefill_tokens, b.decode_reqs, b.decode_tokens) == (0, 0, 32, 32)
    assert not any("capture sizes" in f.fix for f in a.findings)

"""LLM speed-of-light calculator: bounds checked against hand computations from the configs.

Model configs are the shipped data files (values of the public HF config.json); the bench
result is a small synthetic `vllm bench serve` JSON written here (no public sample shipped).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from crossview.cli import app
from crossview.errors import InputError
from crossview.knowledge import hardware
from crossview.sol import llm as llm_sol
from crossview.sources import model_config

runner = CliRunner()
H200_BW = 4.8e12  # sol_ceilings.yaml h200-sxm hbm_tb_s
H200_BF16 = 989.5e12  # sol_ceilings.yaml h200-sxm tflops.bf16_tensor


def _sol(args: list[str]) -> dict:
    r = runner.invoke(app, ["sol", *args, "--format", "json"])
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)


def test_llama8b_decode_batch1_is_weight_bytes_over_bandwidth() -> None:
    # by hand from Llama-3.1-8B config: h 4096, 32 layers, 32 heads, 8 KV heads, d 128,
    # MLP 14336, vocab 128256, untied. Per layer: q+o 2·4096² = 33,554,432; k+v
    # 2·4096·1024 = 8,388,608; MLP 3·4096·14336 = 176,160,768; norms 8,192 → 218,112,000.
    per_layer = 33_554_432 + 8_388_608 + 176_160_768 + 8_192
    streamed = 32 * per_layer + 4096 + 128256 * 4096  # + final norm + lm_head (not embedding)
    assert streamed == 7_504_924_672
    total = streamed + 128256 * 4096
    assert total == 8_030_261_248  # the published 8.03 B
    out = _sol(["--model", "Llama-3.1-8B", "--hardware", "h200-sxm", "--batch", "1",
                "--isl", "1024", "--osl", "128"])
    w_bytes = streamed * 2  # bf16
    kv_tok = 2 * 32 * 8 * 128 * 2  # 131,072 B per token
    ctx = 1024 + 128 / 2
    assert out["decode_step_s"] >= w_bytes / H200_BW  # 3.127 ms
    assert out["decode_step_s"] == pytest.approx((w_bytes + ctx * kv_tok) / H200_BW, rel=1e-12)
    assert out["decode_step_s"] == pytest.approx(3.1568e-3, rel=1e-4)
    assert out["bound_by"]["decode"] == "HBM bandwidth"
    assert out["tpot_s"] == out["decode_step_s"]
    assert out["output_tokens_per_s"] == pytest.approx(1 / out["decode_step_s"])
    # prefill 1×1024: 2·(N_active − lm_head)·S + 2·lm_head (logits of the last position
    # only) + 2·layers·heads·d·S², N_active = streamed − norms
    n_active = streamed - 32 * 8192 - 4096
    head = 128256 * 4096
    flops = 2 * (n_active - head) * 1024 + 2 * head + 2 * 32 * 32 * 128 * 1024 ** 2
    assert out["prefill_s"] == pytest.approx(flops / H200_BF16, rel=1e-12)  # 14.72 ms
    assert out["bound_by"]["prefill"] == "tensor FLOP/s"
    assert out["ttft_s"] == out["prefill_s"]
    assert out["inputs"] == {**out["inputs"], "model": "Llama-3.1-8B", "hardware": "h200-sxm",
                             "dtype": "bf16", "kv_dtype": "bf16", "tp": 1, "batch": 1,
                             "isl": 1024, "osl": 128}


def test_mixtral_moe_experts_hit_and_active_params() -> None:
    m = model_config.load("Mixtral-8x7B-v0.1")
    p = llm_sol.params(m)
    expert = 3 * 4096 * 14336  # 176,160,768 per expert
    attn = 2 * 4096 * 4096 + 2 * 4096 * 1024
    router = 8 * 4096
    assert p.total == 32000 * 4096 * 2 + 32 * (attn + 8192 + router + 8 * expert) + 4096
    assert round(p.total / 1e9, 1) == 46.7  # published 46.7 B
    assert p.active == 32 * (attn + router + 2 * expert) + 32000 * 4096  # ~12.75 B
    # batch 1 touches top-2 of 8 experts: 8·(1 − (6/8)^1) = 2 per layer
    assert llm_sol.experts_hit(8, 2, 1) == pytest.approx(2.0)
    # batch 4: 8·(1 − 0.75^4) = 5.46875 experts per layer
    assert llm_sol.experts_hit(8, 2, 4) == pytest.approx(5.46875)
    hw = hardware.by_key("h200-sxm")
    assert hw is not None
    r = llm_sol.solve(m, hw, llm_sol.Setup(batch=4, isl=512, osl=64))
    dense = 32 * (attn + 8192 + router) + 4096 + 32000 * 4096
    w = (dense + 32 * 5.46875 * expert) * 2
    kv = 4 * (512 + 32) * (2 * 32 * 8 * 128 * 2)
    assert r.decode.memory_s == pytest.approx((w + kv) / H200_BW, rel=1e-12)
    assert r.decode.bound_by == "HBM bandwidth"
    assert r.output_tokens_per_s == pytest.approx(4 / r.decode.seconds)


def test_tp_adds_allreduce_over_nvlink() -> None:
    m = model_config.load("Llama-3.1-70B")
    hw = hardware.by_key("h100-sxm")
    assert hw is not None
    r = llm_sol.solve(m, hw, llm_sol.Setup(tp=4, batch=8, isl=1000, osl=100))
    # ring all-reduce: 80 layers × 2 × 2·3/4 × (8 tokens × 8192 × 2 B) / 450 GB/s per direction
    assert r.decode.comm_s == pytest.approx(80 * 2 * 1.5 * 8 * 8192 * 2 / 450e9, rel=1e-12)
    assert r.decode.seconds == pytest.approx(max(r.decode.memory_s, r.decode.compute_s)
                                             + r.decode.comm_s)


def test_bench_result_gets_percent_of_sol(tmp_path: Path) -> None:
    # synthetic `vllm bench serve` result (vLLM's result keys; values made up for the test)
    res = {"date": "20260714-081253", "backend": "vllm", "model_id":
           "meta-llama/Llama-3.1-8B-Instruct", "num_prompts": 64, "request_rate": "inf",
           "max_concurrency": 1, "duration": 60.0, "completed": 64, "failed": 0,
           "total_input_tokens": 64 * 1024, "total_output_tokens": 64 * 128,
           "request_throughput": 1.0, "output_throughput": 200.0,
           "total_token_throughput": 1300.0, "mean_ttft_ms": 40.0, "median_ttft_ms": 31.62,
           "p99_ttft_ms": 60.0, "mean_tpot_ms": 5.0, "median_tpot_ms": 5.0,
           "p99_tpot_ms": 6.0, "mean_itl_ms": 5.0, "median_itl_ms": 5.0, "p99_itl_ms": 6.0}
    path = tmp_path / "vllm-bench.json"
    path.write_text(json.dumps(res))
    out = _sol(["--model", "meta-llama/Llama-3.1-8B-Instruct", "--hardware", "h200-sxm",
                "--bench", str(path)])
    # batch/ISL/OSL from the result: concurrency 1, measured mean 1024 / 128 tokens
    assert (out["inputs"]["batch"], out["inputs"]["isl"], out["inputs"]["osl"]) == (1, 1024, 128)
    rows = {r["metric"]: r for r in out["bench"]["rows"]}
    tpot = rows["median_tpot_ms"]
    assert tpot["pct_of_sol"] == pytest.approx(100 * 3.1568 / 5.0, rel=1e-4)  # 63.1%
    assert rows["median_ttft_ms"]["pct_of_sol"] == pytest.approx(100 * 14.7242 / 31.62,
                                                                  rel=1e-4)  # 46.6%
    assert rows["output_throughput"]["pct_of_sol"] == pytest.approx(200 * 0.31568, rel=1e-4)
    md = runner.invoke(app, ["sol", "--model", "Llama-3.1-8B", "--hardware", "h200-sxm",
                             "--bench", str(path)])
    assert md.exit_code == 0, md.output
    assert "% of SoL" in md.stdout and "meta-llama/Llama-3.1-8B-Instruct" in md.stdout
    assert "concurrency 1" in md.stdout  # the context is printed


def test_config_missing_fields_names_them(tmp_path: Path) -> None:
    cfg = tmp_path / "config.json"
    cfg.write_text(json.dumps({"hidden_size": 4096, "num_attention_heads": 32,
                               "num_local_experts": 8}))
    with pytest.raises(InputError) as e:
        model_config.load(str(cfg))
    msg = str(e.value)
    for f in ("num_hidden_layers", "intermediate_size", "vocab_size", "num_experts_per_tok"):
        assert f in msg
    r = runner.invoke(app, ["sol", "--model", str(cfg), "--hardware", "h200-sxm"])
    assert r.exit_code == 2
    assert r.stderr.startswith("crossview: error: ") and "num_hidden_layers" in r.stderr
    cfg.write_text("{not json")
    r = runner.invoke(app, ["sol", "--model", str(cfg), "--hardware", "h200-sxm"])
    assert r.exit_code == 2 and "not valid JSON" in r.stderr


def test_unknown_gpu_is_stated_not_guessed() -> None:
    r = runner.invoke(app, ["sol", "--model", "Llama-3.1-8B", "--hardware", "Quantum GPU 9000"])
    assert r.exit_code == 2
    assert "not in sol_ceilings.yaml" in r.stderr and r.stdout == ""


def test_missing_ceiling_is_stated() -> None:
    # V100 has no bf16 tensor peak in sol_ceilings.yaml
    r = runner.invoke(app, ["sol", "--model", "Llama-3.1-8B", "--hardware", "v100-sxm2-32gb"])
    assert r.exit_code == 2 and "tflops.bf16_tensor" in r.stderr


def test_sliding_window_layers_and_fp4_without_fp4_tensor_cores(tmp_path: Path) -> None:
    # a synthetic gpt-oss-like config (no public checkpoint config ships with the project):
    # layers alternate sliding (window 8) and full attention, as gpt-oss's `layer_types` do
    cfg = tmp_path / "config.json"
    cfg.write_text(json.dumps({
        "hidden_size": 64, "num_hidden_layers": 4, "num_attention_heads": 4,
        "num_key_value_heads": 2, "head_dim": 16, "intermediate_size": 128, "vocab_size": 1000,
        "tie_word_embeddings": False, "sliding_window": 8,
        "layer_types": ["sliding_attention", "full_attention"] * 2}))
    out = _sol(["--model", str(cfg), "--hardware", "h200-sxm", "--batch", "2", "--isl", "32",
                "--osl", "4"])
    d = out["detail"]
    assert (d["model"]["sliding_window"], d["model"]["sliding_layers"]) == (8, 2)
    # by hand: per layer q,k,v,o 3·64·64 + 2·64·2·16 = 12,288 + MLP 3·64·128 = 24,576; lm_head
    # 1000·64 = 64,000 → active 4·36,864 + 64,000 = 211,456
    assert d["params_active"] == 211_456
    head, rest = 64_000, 211_456 - 64_000
    # prefill pairs: full layers 2 × 32²/2, sliding layers 2 × (8·9/2 + 24·8)
    pairs = 2 * 32 * 32 / 2 + 2 * (36 + 24 * 8)
    assert d["prefill"]["flops"] == 2 * rest * 64 + 2 * head * 2 + 4 * 64 * 2 * pairs
    # decode keys per step: full layers the mean context 34, sliding layers min(32 + i, 8) = 8
    keys = 2 * 34 + 2 * 8
    assert d["decode"]["flops"] == 2 * (2 * 211_456 + 4 * 64 * keys)
    kv_read = 2 * keys * d["kv_bytes_per_token"] / 4
    assert d["decode"]["bytes"] == d["prefill"]["bytes"] + kv_read  # same weights touched
    # MI300X has no FP4 tensor cores: FP4 weights multiply at the 16-bit peak (no error)
    mi = _sol(["--model", str(cfg), "--hardware", "mi300x", "--dtype", "fp4", "--batch", "2",
               "--isl", "32", "--osl", "4"])
    assert mi["detail"]["peak_key"] == "bf16_tensor"

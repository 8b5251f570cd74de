"""Benchmark-result readers. No public `vllm bench serve` result file is in ../shared/data, so
every input here is SYNTHETIC, written from the documented formats: the keys vLLM's
`vllm bench serve --save-result [--save-detailed] --metadata K=V` writes and the
`SERVE-…-BENCH-…/run=N.json` + `summary.json` layout of `vllm bench sweep serve`
(docs/formats.md; vllm/benchmarks/serve.py and vllm/benchmarks/sweep/serve.py), and the
generic CSV/JSONL of docs/input-formats.md."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from crossview.sources.bench import generic, vllm_bench
from crossview.sources.registry import pick_reader, read_all
from crossview.store.store import Store


def vllm_result(**over: object) -> dict[str, object]:
    r: dict[str, object] = {
        "date": "20260714-081253", "endpoint_type": "vllm", "backend": "vllm", "label": None,
        "model_id": "meta-llama/Llama-3.1-8B-Instruct", "tokenizer_id":
        "meta-llama/Llama-3.1-8B-Instruct", "num_prompts": 200,
        "hostname": "gpu-node-7", "gpu": "NVIDIA H200", "arm": "baseline",  # --metadata pairs
        "request_rate": "inf", "burstiness": 1.0, "max_concurrency": 64,
        "duration": 41.5, "completed": 200, "failed": 0, "total_input_tokens": 409600,
        "total_output_tokens": 25600, "request_throughput": 4.82, "request_goodput": None,
        "output_throughput": 616.9, "total_token_throughput": 10487.0,
        "mean_ttft_ms": 812.0, "median_ttft_ms": 640.0, "std_ttft_ms": 300.0, "p99_ttft_ms": 2100.0,
        "mean_tpot_ms": 48.0, "median_tpot_ms": 45.0, "std_tpot_ms": 9.0, "p99_tpot_ms": 80.0,
        "mean_itl_ms": 47.0, "median_itl_ms": 21.0, "std_itl_ms": 60.0, "p99_itl_ms": 310.0,
    }
    r.update(over)
    return r


def test_vllm_result_trials_and_context(tmp_path: Path) -> None:
    path = tmp_path / "vllm-infqps-concurrency64-Llama-3.1-8B-Instruct-20260714-081253.json"
    path.write_text(json.dumps(vllm_result(), indent=2))
    assert pick_reader(path).kind == vllm_bench.KIND
    st = Store()
    rep = vllm_bench.read(path, st)
    assert rep.status == "ok"
    trials = dict((m, (v, u)) for m, v, u in st.sql(
        "SELECT metric, value, unit FROM trials WHERE arm = 'baseline' AND trial = 0").fetchall())
    assert trials["output_throughput"] == (616.9, "tok/s")
    assert trials["p99_itl_ms"] == (310.0, "ms")
    assert trials["request_throughput"] == (4.82, "req/s")
    assert "request_goodput" not in trials  # null in the file: not a number, not stored
    ctx = json.loads(st.sql("SELECT context FROM context").fetchall()[0][0])
    assert ctx["model"] == "meta-llama/Llama-3.1-8B-Instruct"
    assert ctx["concurrency"] == 64 and ctx["request_rate"] == "inf"
    assert ctx["hostname"] == "gpu-node-7" and ctx["gpu"] == "NVIDIA H200"
    assert ctx["isl_measured_mean"] == 2048.0 and ctx["osl_measured_mean"] == 128.0
    assert ctx["isl"] == "unknown" and ctx["tp"] == "unknown"  # not recorded: explicit
    assert ctx["metadata"] == {"hostname": "gpu-node-7", "gpu": "NVIDIA H200",
                               "arm": "baseline"}


def test_vllm_detailed_arrays_become_requests(tmp_path: Path) -> None:
    path = tmp_path / "detailed.json"
    path.write_text(json.dumps(vllm_result(
        input_lens=[2048, 4096, 100], output_lens=[3, 2, 0], ttfts=[0.5, 0.9, 0.0],
        itls=[[0.02, 0.03], [0.3], []], generated_texts=["a", "b", ""],
        errors=["", "", "timeout"])))
    st = Store()
    vllm_bench.read(path, st)
    got = st.sql("SELECT request, input_len, output_len, ttft_s, itl_s, error FROM"
                 " bench_requests ORDER BY request").fetchall()
    assert got == [(0, 2048, 3, 0.5, [0.02, 0.03], None), (1, 4096, 2, 0.9, [0.3], None),
                   (2, 100, 0, 0.0, [], "timeout")]


def test_vllm_sweep_run_files_and_summary(tmp_path: Path) -> None:
    comb = tmp_path / "SERVE--max_num_seqs=64-BENCH--max_concurrency=64"
    comb.mkdir()
    runs = []
    for n, thr in enumerate((600.0, 610.0, 590.0)):
        rec = vllm_result(output_throughput=thr, run_number=n, max_num_seqs=64)
        rec.pop("arm")
        (comb / f"run={n}.json").write_text(json.dumps(rec))
        runs.append(rec)
    (comb / "summary.json").write_text(json.dumps(runs))
    st = Store()
    reps = read_all([comb / "summary.json"], st)
    assert reps[0].status == "ok"
    got = st.sql("SELECT arm, trial, value FROM trials WHERE metric = 'output_throughput'"
                 " ORDER BY trial").fetchall()
    assert got == [(comb.name, 0, 600.0), (comb.name, 1, 610.0), (comb.name, 2, 590.0)]
    ctx = json.loads(st.sql("SELECT context FROM context WHERE trial = 1").fetchall()[0][0])
    assert ctx["max_num_seqs"] == 64
    st2 = Store()
    read_all([comb / "run=2.json"], st2)
    assert st2.sql("SELECT DISTINCT arm, trial FROM trials").fetchall() == [(comb.name, 2)]


def test_generic_csv_and_jsonl(tmp_path: Path) -> None:
    csv = tmp_path / "results.csv"
    csv.write_text("arm,trial,metric,value,unit,model,concurrency,isl,osl,note\n"
                   "base,0,output_throughput,1200.5,tok/s,llama,32,1024,128,warm\n"
                   "base,0,median_itl_ms,11.0,,llama,32,1024,128,warm\n"
                   "base,1,output_throughput,abc,tok/s,llama,32,1024,128,warm\n")
    assert pick_reader(csv).kind == generic.KIND
    st = Store()
    rep = generic.read(csv, st)
    assert rep.problems and "line 4" in rep.problems[0]
    assert st.sql("SELECT metric, value, unit FROM trials ORDER BY metric").fetchall() == [
        ("median_itl_ms", 11.0, "ms"), ("output_throughput", 1200.5, "tok/s")]
    ctx = json.loads(st.sql("SELECT context FROM context").fetchall()[0][0])
    assert (ctx["model"], ctx["concurrency"], ctx["isl"], ctx["osl"]) == ("llama", 32, 1024, 128)
    assert ctx["metadata"]["note"] == "warm"
    jl = tmp_path / "results.jsonl"
    jl.write_text(
        '{"format": "crossview-bench", "version": 1, "context": {"model": "qwen", "gpu": "H200",'
        ' "bench": "genai-perf"}}\n'
        '{"arm": "fp8", "trial": 0, "metrics": {"output_throughput": {"value": 900, "unit":'
        ' "tok/s"}, "p99_ttft_ms": 450.5}, "context": {"concurrency": 16}}\n')
    st = Store()
    generic.read(jl, st)
    assert st.sql("SELECT arm, metric, value, unit FROM trials ORDER BY metric").fetchall() == [
        ("fp8", "output_throughput", 900.0, "tok/s"), ("fp8", "p99_ttft_ms", 450.5, "ms")]
    ctx = json.loads(st.sql("SELECT context FROM context").fetchall()[0][0])
    assert (ctx["model"], ctx["gpu"], ctx["concurrency"], ctx["bench"]) == (
        "qwen", "H200", 16, "genai-perf")


def test_not_a_result_json(tmp_path: Path) -> None:
    path = tmp_path / "other.json"
    path.write_text(json.dumps({"request_throughput": "fast", "model_id": "x"}))
    reps = read_all([path], Store())
    assert reps[0].status != "ok" and reps[0].problems


@pytest.mark.parametrize("body", ["[1, 2", "{\"request_throughput\": 1, \"completed\": "])
def test_truncated_result_json_one_problem(tmp_path: Path, body: str) -> None:
    path = tmp_path / "cut.json"
    path.write_text(body)
    reps = read_all([path], Store())
    assert reps[0].status == "invalid" and len(reps[0].problems) == 1

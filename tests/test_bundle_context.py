"""Context from a bundle's own files, nothing silently dropped, full kernel identities
(issue 17), on the RTX 5090 DeepSeek-OCR captures copied as they are in ../shared/data
(nsys/ with all-stage_cmd.txt, ncu/ with command.yaml) and NO bundle.yaml — what a new user
has. Expected values read here directly from the files with shlex / csv / yaml."""

from __future__ import annotations

import csv
import re
import shlex
import shutil
from pathlib import Path

import pytest
import yaml

from crossview.synthesis import bundle_context, command_arms, synthesize
from crossview.synthesis.frontier import INVENTORY
from crossview.units import duration
from test_synthesis import NCU, NSYS, needs_data


def _bundle(tmp: Path) -> Path:
    b = tmp / "dsocr"
    shutil.copytree(NSYS, b / "nsys")
    shutil.copytree(NCU, b / "ncu")
    return b


@needs_data
def test_context_from_cmd_txt_with_sources_and_plan_runs_the_real_command(
        tmp_path: Path) -> None:
    argv = shlex.split((NSYS / "all-stage_cmd.txt").read_text().splitlines()[0])
    assert argv[:2] == ["nsys", "profile"]
    prog = argv[argv.index("/workspace/code/llm-perf-opt/.pixi/envs/rtx5090/bin/python"):]
    ncu_argv = yaml.safe_load((NCU / "command.yaml").read_text())["launch_command"]
    assert "dataset.sampling.num_samples_per_epoch=1" in ncu_argv

    syn = synthesize.run(_bundle(tmp_path))
    d = syn.to_dict()
    ctx, src = d["context"], d["context_sources"]
    assert ctx["model"] == "deepseek-ai/DeepSeek-OCR"  # from the HF cache path in model.path
    assert src["model"].startswith("nsys/all-stage_cmd.txt (`model.path=/home/igame/.cache/"
                                   "huggingface/hub/models--deepseek-ai--DeepSeek-OCR/")
    assert ctx["osl"] == 64 and "infer.max_new_tokens=64" in src["osl"]
    assert ctx["num_prompts"] == 20 and src["num_prompts"].startswith("nsys/all-stage_cmd.txt")
    assert ctx["dataset"] == "/workspace/datasets/OpenDataLab___OmniDocBench"
    # the ncu run's own workload (1 sample) disagrees: a warning, not an overwrite
    assert any("num_prompts: ncu/command.yaml" in w and "says 1, kept 20" in w
               for w in d["warnings"])
    assert d["command"]["argv"] == prog and d["command"]["source"] == "nsys/all-stage_cmd.txt"
    assert d["command"]["profiler_removed"].startswith("nsys profile --trace=cuda,nvtx,osrt -o")
    # plans re-run the captured command (unprofiled) and show the command-line difference
    p = syn.plans[0]
    assert p.command_source == "nsys/all-stage_cmd.txt"
    assert shlex.join(prog) in p.commands[1] and "nsys profile" not in p.commands[1]
    assert p.command_diff is not None and p.command_diff[0] == f"  {shlex.join(prog)}"
    assert "command line identical in both arms" in p.command_diff[1]


def test_vllm_command_with_the_lever_applied() -> None:
    cmd = bundle_context.Command(shlex.split(
        "vllm serve /models/models--Qwen--Qwen3-8B/snapshots/abc --tensor-parallel-size 2 "
        "--enforce-eager --max-num-seqs 128"), "nsys/serve_cmd.txt", "nsys profile -o x")
    facts = {f.field: f.value for f in bundle_context.facts_of_command(cmd)}
    assert facts == {"tp": 2, "enforce_eager": True, "max_num_seqs": 128, "engine": "vllm",
                     "model": "Qwen/Qwen3-8B"}
    base, var = command_arms.arms(cmd.argv, "vllm", "cuda-graphs") or ([], [])
    assert "--enforce-eager" in base and "--enforce-eager" not in var
    diff = command_arms.diff(base, var, "CUDA graphs on")
    assert diff[0].startswith("- vllm serve") and diff[1].startswith("+ vllm serve")
    base, var = command_arms.arms(cmd.argv, "vllm", "fusion") or ([], [])
    assert var[-2:] == ["--compilation-config", '{"level": 3}']
    assert base[-2:] == ["--compilation-config", '{"level": 0}']
    assert command_arms.arms(cmd.argv, "vllm", "kernel") is None  # code change, not a flag
    argv, wrapper = bundle_context.strip_profiler(
        ["nsys", "profile", "-t", "cuda", "--trace=nvtx", "-o", "r", "vllm", "serve", "m"])
    assert argv == ["vllm", "serve", "m"] and wrapper == "nsys profile -t cuda --trace=nvtx -o r"


@needs_data
def test_gemv_lever_kept_without_gpu_and_sized_with_it(tmp_path: Path) -> None:
    b = _bundle(tmp_path)
    syn = synthesize.run(b)
    d = syn.to_dict()
    gemv = next(r for r in d["ledger"] if r["id"].startswith("kernel:internal::gemvx::kernel"))
    assert gemv["unsized"].startswith("ceiling unknown: pass --gpu")
    assert gemv["expected_effect"].startswith("ceiling unknown: pass --gpu")
    # an upper bound never outranks a sized row
    assert all(r["rank"] < gemv["rank"] for r in d["ledger"] if r["unsized"] is None)
    assert any(w.startswith(f"lever {gemv['id']} not sized — ceiling unknown: pass --gpu")
               for w in d["warnings"])
    sized = synthesize.run(b, "RTX 5090").to_dict()
    g2 = next(r for r in sized["ledger"] if r["id"] == gemv["id"])
    assert g2["unsized"] is None and g2["expected_effect"].endswith(")")
    assert not any("not sized" in w for w in sized["warnings"])


@needs_data
def test_contradictions_and_levers_name_full_kernel_identities(tmp_path: Path) -> None:
    with open(NSYS / "all-stage_cuda_gpu_kern_sum.csv", newline="") as f:
        kernel2 = [r["Name"] for r in csv.DictReader(f) if "cutlass::Kernel2<" in r["Name"]]
    assert len(set(kernel2)) == 16  # one base name, many kernels: the short name is ambiguous
    with open(NCU / "kernel_0003_ncu.details.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    (name, grid, block), = {(r["Kernel Name"], r["Grid Size"], r["Block Size"]) for r in rows}
    assert (grid, block) == ("(152, 4, 1)", "(128, 1, 1)")

    syn = synthesize.run(_bundle(tmp_path), "RTX 5090")
    # the trace row averages launches of many shapes (decision 0804): no ncu ÷ trace ratio,
    # a not-comparable contradiction naming the row's range, and no kernel lever from it
    c = next(c for c in syn.contradictions if c.id.startswith("not-comparable:cutlass"))
    assert f"`{name}` (grid {grid}, block {block})" in c.title
    ident = c.kernels[0]
    assert ident["ncu_name"] == name and ident["grid"] == grid and ident["block"] == block
    assert ident["trace_name"] in kernel2 and "s161616gemm_bf16_32x32_128x2" in str(
        ident["trace_name"])
    with open(NSYS / "all-stage_cuda_gpu_kern_sum.csv", newline="") as f:
        row = next(r for r in csv.DictReader(f) if r["Name"] == ident["trace_name"])
    lo, hi = float(row["Min (ns)"]), float(row["Max (ns)"])
    assert hi / lo > 1.5 and lo <= 23_420 <= hi
    assert f"spans launches of {duration(lo)}–{duration(hi)}" in c.observation
    assert not [x for x in syn.levers if x.id.startswith("kernel:cutlass::Kernel2")]
    assert any("kernel:cutlass::Kernel2" in w and "different shapes" in w
               for w in syn.inv.bundle.warnings)
    fam = next(x for x in syn.levers if x.id == "fusion:elementwise:decode")
    with open(NSYS / "decode_cuda_gpu_kern_sum.csv", newline="") as f:
        names = [r["Name"] for r in csv.DictReader(f)]
    assert fam.subject["kernel_name"] in names  # the full name of the family's top kernel
    assert fam.subject["kernel_name"].startswith("void at::native::vectorized_elementwise_kernel<")
    # a missing tier is evidenced by the inventory, not by an ncu CSV
    for cand in syn.frontier:
        if cand.id.startswith("capture:"):
            assert cand.evidence_artifacts == [INVENTORY]
            assert cand.evidence.startswith("the bundle inventory:")


KINETO = NSYS.parents[1] / "kineto" / "hta_a100_ddp_resnet_nccl.json.gz"
NSYS_SQLITE = NSYS.parent / "nvfuser_h200_nsys2025.1.sqlite"


@pytest.mark.skipif(not KINETO.exists() or not NSYS_SQLITE.exists(), reason="data absent")
def test_context_from_trace_device_distributed_info_and_nsys_target_info(
        tmp_path: Path) -> None:
    """Two unrelated real captures in one bundle: each fills what it knows, citing itself;
    their GPUs disagree, which is a warning (the first reader's value is kept)."""
    import gzip
    import json
    import sqlite3
    with gzip.open(KINETO) as f:
        trace = json.loads(f.read())
    dist, dev = trace["distributedInfo"], trace["deviceProperties"][0]
    con = sqlite3.connect(NSYS_SQLITE)
    host = con.execute("SELECT value FROM TARGET_INFO_SYSTEM_ENV WHERE name='Hostname'"
                       ).fetchone()[0]
    (uuid,), = con.execute("SELECT uuid FROM TARGET_INFO_GPU").fetchall()
    (gpu_nsys,), = con.execute("SELECT name FROM TARGET_INFO_GPU").fetchall()
    con.close()
    b = tmp_path / "mixed"
    b.mkdir()
    shutil.copy(KINETO, b)
    shutil.copy(NSYS_SQLITE, b)
    d = synthesize.run(b).to_dict()
    ctx, src = d["context"], d["context_sources"]
    assert ctx["gpu"] == dev["name"] and src["gpu"].startswith(KINETO.name)
    assert ctx["extra"]["world_size"] == str(dist["world_size"]) == "2"
    assert ctx["extra"]["dist_backend"] == dist["backend"] == "nccl"
    assert ctx["hostname"] == host and src["hostname"] == (
        f"{NSYS_SQLITE.name} (TARGET_INFO_SYSTEM_ENV Hostname)")
    assert ctx["gpu_uuids"] == uuid
    assert any(w.startswith(f"context gpu: {NSYS_SQLITE.name}") and repr(gpu_nsys) in w
               for w in d["warnings"])


VLLM_TRACE = NSYS.parents[1] / "kineto" / "tracelens_b200_vllm_eager_prefill_tp8.json.gz"


@pytest.mark.skipif(not VLLM_TRACE.exists(), reason="data absent")
def test_engine_from_the_trace_python_frames(tmp_path: Path) -> None:
    """The vLLM B200 prefill trace's python_function events run in `vllm/…` files (it also
    calls `transformers/`): the engine is vllm, cited with the frame count."""
    import gzip
    import json
    with gzip.open(VLLM_TRACE) as f:
        events = json.loads(f.read())["traceEvents"]
    n = sum(1 for e in events if e.get("cat") == "python_function"
            and re.search(r"(^|/)vllm/", e.get("name", "")))
    assert n > 1000
    b = tmp_path / "vllm"
    b.mkdir()
    shutil.copy(VLLM_TRACE, b)
    from crossview.synthesis.bundle_context import take_inventory
    inv = take_inventory(b)
    assert inv.bundle.context.engine == "vllm"
    assert inv.bundle.context_sources["engine"] == (
        f"{VLLM_TRACE.name} ({n:,} Python frames in `vllm/`)")
    assert any("context engine:" in w and "'transformers'" in w for w in inv.bundle.warnings)

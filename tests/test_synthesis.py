"""Synthesis (issue 5) on real bundles built from ../shared/data, plus synthetic edge cases.

Hand-checked numbers (independent of crossview, recomputed below with the csv module):
- decode_cuda_gpu_kern_sum.csv: the top row is the cuBLAS gemv `internal::gemvx::kernel<…
  (int)7…>`, 61,602,133 ns over 16,448 launches, median 3,744 ns; the 46 rows sum to
  179,068,… ns, so its share is 34.4% (nsys prints 34.4 too).
- kernel_0001_ncu.details.csv: the same instantiation (`kernel<…, 0, 1, 1, 0, 7, 0, …>`),
  "Duration" = 6.75 us; DRAM throughput 345.14 GB/s × 6.75 µs = 2.33 MB per launch.
- expected effect of the gemv lever (issue 16: kernel time saved at a stated fraction of its
  roofline ceiling) = 61,602,133 − 16,448 × (2.33 MB ÷ 1.792 TB/s, the RTX 5090 GDDR7
  datasheet figure in sol_ceilings.yaml) ÷ 0.8 (knowledge/replay.yaml
  roofline_fraction.memory) ≈ 34.9 ms.
"""

from __future__ import annotations

import csv
import json
import shutil
from datetime import UTC, datetime
from pathlib import Path

import pytest

from conftest import SHARED_DATA, run_cli
from crossview.synthesis import synthesize
from crossview.synthesis.bundle import load
from crossview.synthesis.inventory import take

DATA = SHARED_DATA
NSYS = DATA / "nsys" / "llm-perf-opt_rtx5090_deepseek-ocr"
NCU = DATA / "ncu" / "llm-perf-opt_rtx5090_deepseek-ocr"
needs_data = pytest.mark.skipif(not NSYS.exists() or not NCU.exists(),
                                reason="../shared/data (RTX 5090 DeepSeek-OCR captures) absent")

BUNDLE_YAML = """\
context:
  model: deepseek-ai/DeepSeek-OCR
  hardware: RTX 5090
  gpu: NVIDIA GeForce RTX 5090
  gpu_count: 1
  engine: transformers
  concurrency: 1
  osl: 64
  extra: {regime: decode}
capture:
  tool: "nsys stats + ncu (llm-perf-opt)"
artifacts:
  kernel_0001_ncu.details.csv: {phase: decode}
  kernel_0001_ncu.metrics.csv: {phase: decode}
  kernel_0001_ncu.section_SpeedOfLight_RooflineChart.csv: {phase: decode}
  kernel_0003_ncu.details.csv: {phase: all}
  kernel_0003_ncu.metrics.csv: {phase: all}
"""


def _copy(dst: Path, *files: Path) -> Path:
    dst.mkdir(parents=True, exist_ok=True)
    for f in files:
        shutil.copyfile(f, dst / f.name)
    return dst


def rtx_bundle(tmp: Path) -> Path:
    b = _copy(tmp / "rtx", *sorted(NSYS.glob("*_kern_sum.csv")), *sorted(NCU.iterdir()))
    (b / "bundle.yaml").write_text(BUNDLE_YAML)
    return b


def _decode_rows() -> list[dict[str, str]]:
    with open(NSYS / "decode_cuda_gpu_kern_sum.csv", newline="") as f:
        return list(csv.DictReader(f))


def _ncu_duration_ns() -> float:
    with open(NCU / "kernel_0001_ncu.details.csv", newline="") as f:
        row = next(r for r in csv.DictReader(f) if r["Metric Name"] == "Duration")
    assert row["Metric Unit"] == "us"
    return float(row["Metric Value"]) * 1000


@needs_data
def test_rtx5090_bundle_joins_the_decode_gemv_to_its_ncu_capture(tmp_path: Path) -> None:
    b = rtx_bundle(tmp_path)
    syn = synthesize.run(b)
    rows = _decode_rows()
    top = max(rows, key=lambda r: float(r["Total Time (ns)"]))
    total = sum(float(r["Total Time (ns)"]) for r in rows)
    assert "gemvx::kernel" in top["Name"] and "(int)7" in top["Name"]
    assert round(100 * float(top["Total Time (ns)"]) / total, 1) == 34.4
    assert _ncu_duration_ns() == 6750.0

    join = next(j for j in syn.rec.joins if j.phase == "decode")
    assert join.kernel == "internal::gemvx::kernel" and join.family == "gemm"
    assert join.match == "identity"  # same instantiation, not just the same function name
    assert join.trace is not None and join.trace.name == top["Name"]
    assert join.trace.artifact == "decode_cuda_gpu_kern_sum.csv"
    assert round(join.trace.share.value, 1) == 34.4
    assert join.ncu_duration is not None and join.ncu_duration.value == 6750.0
    assert join.ncu_artifacts[0] == "kernel_0001_ncu.details.csv"
    assert join.ratio is not None and join.ratio.value == pytest.approx(6750 / 3744)
    assert join.ncu.tensor_cores is False

    # every ledger row cites artifacts that really are files of the bundle
    assert syn.levers
    for lv in syn.levers:
        assert lv.evidence_artifacts
        assert all((b / a).is_file() for a in lv.evidence_artifacts), lv.id
        assert lv.confidence == "DRAFT" and lv.type in ("config", "engine-src", "kernel")
    first = syn.levers[0]
    assert first.id == "kernel:internal::gemvx::kernel:decode" and first.rank == 1
    want = float(top["Total Time (ns)"]) - 16448 * (345.14e9 * 6.75e-6 / 1.792e12 * 1e9) / 0.8
    assert first.recoverable.value == pytest.approx(want, rel=0.02)
    assert "at 80% of its roofline ceiling" in first.expected_effect()
    assert "not replayed: kernel time only" in first.expected_effect()
    # issue 16: no expected effect is an upper bound on a whole family's time any more, and
    # the ledger is ordered by predicted saving (levers with no prediction last)
    assert not any(lv.expected_effect().startswith("≤") for lv in syn.levers)
    predicted = [lv.recoverable.value for lv in syn.levers if lv.effect not in (None, "bound")]
    assert predicted == sorted(predicted, reverse=True)
    assert all(lv.effect is None for lv in syn.levers[len(predicted):])
    assert not first.actionable  # kernel row, no source_refs in bundle.yaml
    assert first.rubric and first.rubric["baseline"]["H"].startswith("H0")
    # ncu ran the gemv 1.8× slower than the trace: listed as a contradiction, not averaged
    kinds = {(c.kind, c.id) for c in syn.contradictions}
    assert ("duration-disagrees", "duration-disagrees:internal::gemvx::kernel:decode") in kinds
    # experiments for the top levers, ≥ 3 trials per arm, the ab line names the lever
    assert syn.plans and syn.plans[0].trials >= 3
    assert f"--lever {first.id}" in syn.plans[0].record
    assert syn.frontier or syn.wall
    d = syn.to_dict()
    assert {"sources", "reconciliation", "contradictions", "ledger", "experiments",
            "frontier"} <= set(d)
    assert set(d["sources"]) == {"ncu", "nsys"}


@needs_data
def test_cli_persists_deterministically_and_keeps_ab_outcomes(tmp_path: Path) -> None:
    b = rtx_bundle(tmp_path)
    s1 = synthesize.run(b, now=datetime(2026, 1, 1, tzinfo=UTC))
    from crossview.render import synthesis_md
    _, js1 = s1.save(synthesis_md.render(s1))
    s2 = synthesize.run(b, now=datetime(2026, 1, 2, tzinfo=UTC))
    md2, js2 = s2.save(synthesis_md.render(s2))
    assert js1.name == "synthesis-20260101T000000Z.json" and md2.suffix == ".md"

    def norm(p: Path, stamp: str) -> dict:
        return json.loads(p.read_text().replace(stamp, "TS"))
    assert norm(js1, s1.stamp) == norm(js2, s2.stamp)

    # an A/B marked the lever tried-null in the synthesis JSON (what `crossview ab --ledger`
    # does through synthesis/ledger_update.py): a re-synthesis keeps it
    from crossview.synthesis.ledger_update import read_ledger, rows_of
    data = read_ledger(js2)
    row = rows_of(data)[0]
    rec = {"verdict": "null", "reason": "noise", "failed_gates": []}  # every gate passed
    row["confidence"], row["ab"] = "tried-null", rec
    js2.write_text(json.dumps(data))
    s3 = synthesize.run(b, now=datetime(2026, 1, 3, tzinfo=UTC))
    again = next(lv for lv in s3.levers if lv.id == row["id"])
    assert again.confidence == "tried-null" and again.ab == rec
    assert row["id"] in s3.kept and row["id"] not in {p.lever_id for p in s3.plans}

    cli = run_cli("synthesize", b)
    assert cli.returncode == 0, cli.stderr
    assert "internal::gemvx::kernel" in cli.stdout and "34.4%" in cli.stdout
    assert len(list((b / "findings").glob("synthesis-*.md"))) == 3


@needs_data
def test_one_source_and_two_files_of_one_kind_are_refused(tmp_path: Path) -> None:
    one = _copy(tmp_path / "one", NSYS / "decode_cuda_gpu_kern_sum.csv")
    with pytest.raises(synthesize.Refused, match=r"1 valid distinct source.*nsys \(1 file"):
        synthesize.run(one)
    two = _copy(tmp_path / "two", NSYS / "decode_cuda_gpu_kern_sum.csv",
                NSYS / "prefill_cuda_gpu_kern_sum.csv")
    with pytest.raises(synthesize.Refused, match=r"nsys \(2 files.*one source"):
        synthesize.run(two)
    cli = run_cli("synthesize", two)
    assert cli.returncode == 2 and "Traceback" not in cli.stderr
    lines = cli.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("crossview: error: ")
    assert not (two / "findings").exists()


@needs_data
def test_empty_capture_is_a_capture_problem_with_its_fix(tmp_path: Path) -> None:
    b = rtx_bundle(tmp_path)
    (b / "run.nsys-rep").write_bytes(b"")
    (b / "sub").mkdir()
    (b / "sub" / "profile.ncu-rep").write_bytes(b"")
    inv = take(load(b))
    bad = {e.path: e for e in inv.entries if not e.valid}
    assert set(bad) == {"run.nsys-rep", "sub/profile.ncu-rep"}
    p = bad["run.nsys-rep"].problems[0]
    assert p.problem == "empty" and "nsys profile" in p.fix
    assert "ncu" in bad["sub/profile.ncu-rep"].problems[0].fix
    # the rest of the bundle is still synthesized; the CLI names the bad file and exits 2
    cli = run_cli("synthesize", b)
    assert cli.returncode == 2 and "Traceback" not in cli.stderr
    assert "run.nsys-rep: empty" in cli.stderr and "## Ledger" in cli.stdout
    inv_cli = run_cli("inventory", b, "--format", "json")
    got = {a["path"]: a for a in json.loads(inv_cli.stdout)["artifacts"]}
    assert got["run.nsys-rep"]["capture_problems"][0]["fix"] == p.fix
    assert got["kernel_0001_ncu.details.csv"]["tier"] == "L4"
    assert got["decode_cuda_gpu_kern_sum.csv"]["tier"] == "L2"


KINETO = DATA / "kineto" / "hta_a100_ddp_resnet_nccl.json.gz"


def _smi_csv(name: str) -> str:
    """Synthetic fixture (no public sample of this pairing exists): an nvidia-smi query CSV
    of the trace's GPU reporting 100% utilization, written from the documented format."""
    head = "timestamp, index, name, utilization.gpu [%], memory.used [MiB]\n"
    return head + "".join(f"2026/01/01 00:00:0{i}.000, 0, {name}, 100 %, 1000 MiB\n"
                          for i in range(5))


@pytest.mark.skipif(not KINETO.exists(), reason=f"{KINETO} absent (../shared/data)")
def test_planted_busy_counters_idle_trace_contradiction(tmp_path: Path) -> None:
    # the real trace is ~23.5% kernel-busy (data README: ~24%); the planted counters say 100%
    b = _copy(tmp_path / "planted", KINETO)
    (b / "smi.csv").write_text(_smi_csv("NVIDIA A100-PG509-200"))
    syn = synthesize.run(b)
    c = next(c for c in syn.contradictions if c.kind == "busy-counters-idle-trace")
    assert c.measurements[0].value == 100.0
    assert c.measurements[1].value == pytest.approx(23.4979, abs=1e-3)
    assert set(c.evidence_artifacts) == {"smi.csv", KINETO.name}
    # the same counters from another GPU model: comparison refused, the field named
    other = _copy(tmp_path / "other", KINETO)
    (other / "smi.csv").write_text(_smi_csv("NVIDIA H100 80GB HBM3"))
    syn2 = synthesize.run(other)
    assert not [c for c in syn2.contradictions if c.kind == "busy-counters-idle-trace"]
    ref = next(c for c in syn2.contradictions if c.kind == "not-comparable")
    assert ref.refused and ref.refused.startswith("hardware:")


H100_TRACE = DATA / "kineto" / "tracelens_h100_hf_qwen1.5_0.5b_forward.json.gz"
H100_SMI = DATA / "metrics" / "nvidia-smi_h100_capture.txt"


@pytest.mark.skipif(not H100_TRACE.exists() or not H100_SMI.exists(),
                    reason="../shared/data H100 trace / nvidia-smi capture absent")
def test_larger_real_bundle_kineto_trace_plus_counters(tmp_path: Path) -> None:
    import gzip

    b = _copy(tmp_path / "h100", H100_TRACE, H100_SMI)
    (b / "bundle.yaml").write_text("context: {model: Qwen/Qwen1.5-0.5B-Chat, hardware: H100,"
                                   " engine: transformers}\nbogus: 1\n")
    syn = synthesize.run(b)
    assert set(syn.inv.sources()) == {"pytorch-profiler", "gpu-counters"}
    assert any("unknown top-level key `bogus`" in w for w in syn.inv.bundle.warnings)
    with gzip.open(H100_TRACE) as f:
        ev = [e for e in json.load(f)["traceEvents"] if e.get("cat") == "kernel"]
    total_ns = sum(e["dur"] for e in ev) * 1000
    fams = [f for f in syn.rec.families if f.artifact == H100_TRACE.name]
    assert sum(f.time.value for f in fams) == pytest.approx(total_ns, rel=1e-6)
    assert len(ev) == 1465 == sum(f.count for f in fams)
    # a timeline: host gap and in-graph are measured, not "not in bundle"
    assert all(f.host_gap is not None and f.in_graph is not None for f in fams)
    assert all(f.in_graph.value == 0.0 for f in fams)  # eager HF forward: no graphs
    for lv in syn.levers:
        assert all((b / a).is_file() for a in lv.evidence_artifacts), lv.id
    assert syn.frontier  # L1 / L4 missing at least: capture candidates with their test
    assert any(c.id == "capture:L4" for c in syn.frontier)


@needs_data
def test_decode_levers_per_output_token(tmp_path: Path) -> None:
    """A decode lever's kernel time also per output token when the bundle says how many the
    decode window holds (1 prompt × osl 64 at concurrency 1): the A/B judges it on TPOT.
    The window's own count is checked here from the CSV: the greedy argmax runs 64 times."""
    from crossview.units import duration

    b = rtx_bundle(tmp_path)
    (b / "bundle.yaml").write_text(BUNDLE_YAML.replace("  osl: 64\n",
                                                       "  osl: 64\n  num_prompts: 1\n"))
    with open(NSYS / "decode_cuda_gpu_kern_sum.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    argmax = [int(r["Instances"]) for r in rows if "ArgMaxOps" in r["Name"]]
    window_ns = sum(int(r["Total Time (ns)"]) for r in rows)
    assert argmax == [64] and round(window_ns / 1e6, 2) == 179.07
    syn = synthesize.run(b)
    row = next(lv for lv in syn.levers if lv.id == "copies:memory:decode")
    per = row.recoverable.value / 64
    assert row.expected_effect().endswith(
        f"; {duration(int(per))} of the window's {duration(int(window_ns / 64))} per output "
        f"token ({row.recoverable.text()} over 64 output tokens: 1 prompt × osl 64, "
        "concurrency 1): TPOT falls by at most that, less where the host or launches set the "
        "decode pace")
    assert duration(int(window_ns / 64)) == "2.80 ms"
    # prefill levers and bundles that do not say how many tokens: kernel time only
    assert all("per output token" not in lv.expected_effect() for lv in syn.levers
               if lv.subject.get("phase") != "decode")
    (b / "bundle.yaml").write_text(BUNDLE_YAML.replace("concurrency: 1", "concurrency: 4")
                                   .replace("  osl: 64\n", "  osl: 64\n  num_prompts: 8\n"))
    assert all("per output token" not in lv.expected_effect()
               for lv in synthesize.run(b).levers)


def _driver_cuda_raw(path: Path) -> int | None:
    """The CUDA version a file's driver supports, read here without crossview: a Kineto
    trace's top-level `cuda_driver_version`; nvidia-smi's "CUDA Version : 13.1" line."""
    import gzip
    import re

    if path.suffix == ".gz":
        with gzip.open(path) as f:
            v = json.load(f).get("cuda_driver_version")
        return int(v) if v is not None else None
    m = re.search(r"CUDA Version\s*:\s*(\d+)\.(\d+)", path.read_text())
    return 1000 * int(m.group(1)) + 10 * int(m.group(2)) if m else None


@pytest.mark.skipif(not H100_TRACE.exists() or not H100_SMI.exists(),
                    reason="../shared/data H100 trace / nvidia-smi capture absent")
def test_files_of_different_drivers_are_different_runs(tmp_path: Path) -> None:
    """The Qwen trace (driver for CUDA 12.9, July 2025) and the nvidia-smi capture (driver
    590.48.01 for CUDA 13.1, July 2026, gpu-burn as its load) share a GPU model and nothing
    else: the synthesis says they are different runs (decision 0808)."""
    assert (_driver_cuda_raw(H100_TRACE), _driver_cuda_raw(H100_SMI)) == (12090, 13010)
    b = _copy(tmp_path / "mixed", H100_TRACE, H100_SMI)
    syn = synthesize.run(b)
    (c,) = [c for c in syn.contradictions if c.kind == "different-runs"]
    assert set(c.evidence_artifacts) == {H100_TRACE.name, H100_SMI.name}
    assert (f"a driver supporting CUDA 12.9: `{H100_TRACE.name}`; a driver supporting CUDA "
            f"13.1: `{H100_SMI.name}`") in c.observation
    assert not [c for c in syn.contradictions if c.kind == "busy-counters-idle-trace"]
    # the other run's counters are no lever's evidence
    assert syn.levers and all(H100_SMI.name not in lv.evidence_artifacts for lv in syn.levers)
    # the GPU name came from the counters file (first by name), cited as the counters'
    assert syn.inv.bundle.context_sources["gpu"] == (f"{H100_SMI.name} (the GPU name the "
                                                    "counters record)")
    # synthetic: the same capture edited to the trace's driver (12.9) is no longer another run
    same = _copy(tmp_path / "same", H100_TRACE)
    (same / H100_SMI.name).write_text(H100_SMI.read_text().replace(
        "CUDA Version        : 13.1", "CUDA Version        : 12.9"))
    syn_same = synthesize.run(same)
    assert not [c for c in syn_same.contradictions if c.kind == "different-runs"]
    assert any(H100_SMI.name in lv.evidence_artifacts for lv in syn_same.levers)


def test_a_hostile_driver_version_is_unknown() -> None:
    import msgspec

    from crossview.sources.kineto.clock import driver_cuda
    from crossview.sources.kineto.staging import TraceMeta

    for raw, want in ((b"12090", 12090), (b'"12090"', None), (b"true", None), (b"1e300", None),
                      (b"-5", None), (b"", None), (b"{", None)):
        assert driver_cuda(TraceMeta(cuda_driver_version=msgspec.Raw(raw))) == want, raw


@needs_data
def test_vllm_experiment_commands_come_from_the_yaml_templates(tmp_path: Path) -> None:
    b = rtx_bundle(tmp_path)
    (b / "bundle.yaml").write_text(BUNDLE_YAML.replace("engine: transformers",
                                                       "engine: vllm\n  isl: 1024"))
    syn = synthesize.run(b, now=datetime(2026, 1, 1, tzinfo=UTC))
    fusion = next(p for p in syn.plans if p.lever_id == "fusion:elementwise:decode")
    assert fusion.commands[0].startswith("vllm serve deepseek-ai/DeepSeek-OCR "
                                         "--compilation-config")
    loop = fusion.commands[1]
    assert loop.startswith("for t in $(seq 1 3); do vllm bench serve ")
    assert "--random-input-len 1024" in loop and "--save-result" in loop
    assert "--metadata arm=baseline trial=$t lever=fusion:elementwise:decode" in loop
    assert fusion.record == ("crossview ab --baseline baseline-t*.json --variant "
                             "variant-t*.json --ledger findings/synthesis-20260101T000000Z"
                             ".json --lever fusion:elementwise:decode")
    assert any("num_prompts" in n for n in fusion.notes)  # unknown in bundle.yaml: said


def test_measurement_comparison_refuses_differing_context() -> None:
    from crossview.core.measurement import Measurement, compare
    a = Measurement(3744.0, "ns", "d.csv", {"model": "m", "hardware": "rtx-5090",
                                             "phase": "decode", "tool": "nsys"})
    b = Measurement(6750.0, "ns", "k.csv", {"model": "m", "hardware": "h100",
                                             "phase": "prefill", "tool": "ncu"})
    c = compare(a, b, lever=("tool",))
    assert not c.ok and c.refused == ("hardware", "phase")
    assert c.reason() == "hardware: rtx-5090 vs h100; phase: decode vs prefill"
    same = Measurement(1.0, "ns", "x", {"model": "m", "hardware": "unknown",
                                        "phase": "decode", "tool": "ncu"})
    assert compare(a, same, lever=("tool",)).ok  # unknown is not a difference
    assert a.text() == "3.7 µs"


def test_bad_bundle_yaml_is_one_error_line(tmp_path: Path) -> None:
    (tmp_path / "bundle.yaml").write_text("context: [unclosed\n")
    cli = run_cli("inventory", tmp_path)
    assert cli.returncode == 2 and "Traceback" not in cli.stderr
    assert cli.stderr.startswith(f"crossview: error: {tmp_path / 'bundle.yaml'}: not valid "
                                 "YAML")

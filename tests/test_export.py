"""`crossview export --to folded|speedscope|perfetto` on real captures from ../shared/data.

Independent checks: kernel counts and kernel time come from tests/oracle.py (gzip + json +
Decimal on the raw trace, never crossview) and match ../shared/data/README.md (2,700 kernels
in the A100 DDP trace; 6,080 in the 16-rank one, 705 of them with no launch in the capture,
70 cudaGraphLaunch → 135 kernels; 18 kernels in the nvFuser nsys 2025.1 export). The speedscope
schema is speedscope's own (tests/fixtures/speedscope/, source and license in its README).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

import oracle
from conftest import SHARED_DATA
from crossview.analysis import analyze
from crossview.cli import app
from crossview.scope.filter import Filter

DATA = SHARED_DATA
A100_DDP = DATA / "kineto" / "hta_a100_ddp_resnet_nccl.json.gz"
A100_16 = DATA / "kineto" / "hta_a100_16rank_training_graphs.json.gz"
NSYS = DATA / "nsys" / "nvfuser_h200_nsys2025.1.sqlite"
NSYS_SAMPLING = DATA / "nsys" / "jacc_a100_cpu_sampling_nsys2026.2.sqlite"
SCHEMA = Path(__file__).parent / "fixtures" / "speedscope" / "file-format-schema.json"
pytestmark = pytest.mark.skipif(not DATA.is_dir(),
                                reason="../shared/data not present: real-capture tests need it")
runner = CliRunner()
LINE = re.compile(r"^(.+) (\d+)$")
GPU_CATS = ("kernel", "gpu_memcpy", "gpu_memset")


def export(tmp: Path, src: Path, to: str, *extra: str) -> Path:
    out = tmp / f"{src.name}.{to}.{'txt' if to == 'folded' else 'json'}"
    r = runner.invoke(app, ["export", str(src), "--to", to, "-o", str(out), *extra])
    assert r.exit_code == 0, r.output
    return out


def folded_sum(path: Path) -> tuple[int, list[str]]:
    total, stacks = 0, []
    for line in path.read_text(encoding="utf-8").splitlines():
        m = LINE.match(line)
        assert m, f"not a folded-stack line: {line!r}"
        total += int(m.group(2))
        stacks.append(m.group(1))
    return total, stacks


# ------------------------------------------------------------------ folded stacks


@pytest.mark.parametrize("src", [A100_DDP, NSYS], ids=["kineto-a100-ddp", "nsys-sqlite"])
def test_folded_weights_sum_to_the_views_totals(tmp_path: Path, src: Path) -> None:
    views = analyze([src]).views
    assert views is not None
    gpu_sum, gpu_stacks = folded_sum(export(tmp_path, src, "folded"))
    cpu_sum, cpu_stacks = folded_sum(export(tmp_path, src, "folded", "--view", "cpu"))
    assert gpu_sum == views.gpu.total_ns == views.metrics.kernel_time_ns
    assert cpu_sum == views.cpu.total_ns
    assert all(s.split(";")[-1].startswith("→ ") for s in gpu_stacks)  # kernel leaves
    assert not any("→ " in s for s in cpu_stacks)  # host frames only
    both_sum, both = folded_sum(export(tmp_path, src, "folded", "--view", "both"))
    assert both_sum == gpu_sum + cpu_sum
    assert {s.split(";")[0] for s in both} == {"GPU view", "CPU view"}


def test_folded_gpu_total_is_the_oracles_kernel_time(tmp_path: Path) -> None:
    ks = oracle.kernels(oracle.load_trace(A100_DDP))
    total, stacks = folded_sum(export(tmp_path, A100_DDP, "folded"))
    assert total == oracle.kernel_time_ns(ks) == 162_532_340
    # the filter applies: stream 7 only holds less than the whole
    part, _ = folded_sum(export(tmp_path, A100_DDP, "folded", "--stream", "7"))
    assert part == sum(k.dur_ns for k in ks if str(k.stream) == "7") < total


# ------------------------------------------------------------------ speedscope


@pytest.mark.parametrize("src", [A100_16, NSYS, NSYS_SAMPLING],
                         ids=["kineto-a100-16rank", "nsys-sqlite", "nsys-cpu-sampling"])
def test_speedscope_validates_against_the_schema(tmp_path: Path, src: Path) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    doc = json.loads(export(tmp_path, src, "speedscope").read_text(encoding="utf-8"))
    jsonschema.validate(doc, json.loads(SCHEMA.read_text(encoding="utf-8")))
    views = analyze([src]).views
    assert views is not None
    expect = {"GPU view": views.gpu, "CPU view": views.cpu, "CPU view (sampled)": views.cpu}
    names = [p["name"] for p in doc["profiles"]]
    assert names == (["CPU view (sampled)"] if src == NSYS_SAMPLING else ["GPU view", "CPU view"])
    n_frames = len(doc["shared"]["frames"])
    for p in doc["profiles"]:
        assert p["type"] == "sampled" and p["unit"] == "nanoseconds"
        assert len(p["samples"]) == len(p["weights"])
        assert sum(p["weights"]) == p["endValue"] == expect[p["name"]].total_ns
        assert all(0 <= i < n_frames for s in p["samples"] for i in s)


# ------------------------------------------------------------------ perfetto / Chrome trace


def test_perfetto_rereads_with_the_same_kernels(tmp_path: Path) -> None:
    out = export(tmp_path, A100_16, "perfetto")
    raw = oracle.load_trace(A100_16)
    back = oracle.load_trace(out)  # Python's json (Decimal floats): a valid trace document
    ks, ks_back = oracle.kernels(raw), oracle.kernels(back)
    assert len(ks_back) == len(ks) == 6_080
    assert oracle.kernel_time_ns(ks_back) == oracle.kernel_time_ns(ks) == 401_445_000
    # launch links survive: the same kernels have no launch, the same ones are graph replays
    assert len(oracle.missing_launch_kernels(back)) == len(oracle.missing_launch_kernels(raw))
    assert oracle.graph_kernel_count(back) == oracle.graph_kernel_count(raw) == 135
    evs = back["traceEvents"]
    starts = sum(1 for e in evs if e["ph"] == "s")
    # one arrow per GPU op (kernel, copy, memset) whose launch call is in the capture
    launches = oracle.launch_events(raw)
    linked = sum(1 for e in oracle.events(raw) if e.get("cat") in GPU_CATS
                 and (e.get("args") or {}).get("correlation") in launches)
    assert starts == sum(1 for e in evs if e["ph"] == "f") == linked == 6_875
    names = {e["args"]["name"] for e in evs if e.get("name") == "process_name"}
    assert any(n.startswith("GPU 0") for n in names) and any(n.startswith("host") for n in names)
    # crossview's own Kineto reader: the same kernel count, kernel time, CPU view total
    a, b = analyze([A100_16]), analyze([out])
    assert b.rejected == [] and a.views is not None and b.views is not None
    assert b.views.metrics.kernel_time_ns == a.views.metrics.kernel_time_ns == 401_445_000
    assert b.views.metrics.kernel_count == a.views.metrics.kernel_count == 6_080
    assert b.views.cpu.total_ns == a.views.cpu.total_ns
    la, lb = a.views.metrics.launch, b.views.metrics.launch
    assert la is not None and lb is not None
    assert lb.kernels_via_graph == la.kernels_via_graph == 135
    assert lb.kernels_launch_not_captured == la.kernels_launch_not_captured == 705
    assert lb.graph_launches == la.graph_launches == 70


def test_perfetto_of_an_nsys_export_reads_back_as_kineto(tmp_path: Path) -> None:
    out = export(tmp_path, NSYS, "perfetto")
    a, b = analyze([NSYS]), analyze([out])
    assert a.views is not None and b.views is not None and b.rejected == []
    assert b.artifacts[0].kind == "kineto"
    assert b.views.metrics.kernel_count == a.views.metrics.kernel_count == 18
    assert b.views.metrics.kernel_time_ns == a.views.metrics.kernel_time_ns
    assert b.views.gpu.total_ns == a.views.gpu.total_ns  # every kernel still under its launch


def test_perfetto_honours_the_filter(tmp_path: Path) -> None:
    out = export(tmp_path, A100_DDP, "perfetto", "--stream", "7")
    ks = oracle.kernels(oracle.load_trace(out))
    want = [k for k in oracle.kernels(oracle.load_trace(A100_DDP)) if str(k.stream) == "7"]
    assert len(ks) == len(want) > 0
    assert oracle.kernel_time_ns(ks) == oracle.kernel_time_ns(want)


# ------------------------------------------------------------------ bad input


def test_bad_input_gives_one_error_line(tmp_path: Path) -> None:
    bad = tmp_path / "broken.json"
    bad.write_text('{"traceEvents": [{"ph": "X", "cat": "kernel", "na', encoding="utf-8")
    out = tmp_path / "o.json"
    r = runner.invoke(app, ["export", str(bad), "--to", "perfetto", "-o", str(out)])
    assert r.exit_code == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"crossview: error: {bad}: ")
    assert not out.exists()


def test_a_bundle_with_a_bad_file_still_exports_the_good_one(tmp_path: Path) -> None:
    bad = tmp_path / "empty.json"
    bad.write_text("", encoding="utf-8")
    out = tmp_path / "o.txt"
    r = runner.invoke(app, ["export", str(A100_DDP), str(bad), "--to", "folded", "-o", str(out)])
    assert r.exit_code == 2  # a rejected input is an error even though the rest was exported
    assert [ln for ln in r.stderr.splitlines() if ln.startswith("crossview: error:")] == [
        ln for ln in r.stderr.splitlines() if str(bad) in ln]
    assert folded_sum(out)[0] == 162_532_340


def test_nothing_to_export_names_the_file(tmp_path: Path) -> None:
    out = tmp_path / "o.json"
    r = runner.invoke(app, ["export", str(NSYS_SAMPLING), "--to", "perfetto", "-o", str(out)])
    assert r.exit_code == 2
    assert r.stderr.strip().splitlines() == [
        f"crossview: error: {NSYS_SAMPLING}: nothing to export as a timeline: no timed host or "
        "GPU events in scope (summary-only, sampled-only or metrics input?)"]


def test_analyze_filter_matches_export_filter() -> None:
    # the export's --stream is analyze's Filter: the GPU view under it is what folded sums
    views = analyze([A100_DDP], Filter(stream=7)).views
    assert views is not None and 0 < views.gpu.total_ns < 162_532_340

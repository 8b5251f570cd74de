"""Sampled-stack readers on REAL captures (tests/fixtures/stacks, see its README):

- py-spy 0.4.3 `--format raw --threads` and `--format speedscope` recordings of
  tests/fixtures/stacks/pyspy_workload.py (numpy matmuls + a python loop, 100 Hz);
- torch.profiler `export_stacks(..., "self_cpu_time_total")` of torch_stacks_workload.py;
- a pprof CPU profile encoded from the speedscope recording by Google's protobuf runtime
  (make_pprof.py; no pprof writer runs here);
- a GPU folded file written from the real H100 Kineto trace in ../shared/data by crossview's
  folded export (skips without ../shared/data).

Every expected number is computed in the test from the file itself with plain Python (split
lines, json.load), never with crossview's readers.
"""

from __future__ import annotations

import json
import re
from collections import Counter, defaultdict
from pathlib import Path

import pytest

from conftest import SHARED_DATA, SHARED_DATA_ABSENT
from crossview.analysis import analyze
from crossview.render import markdown
from crossview.scope.filter import Filter

FIX = Path(__file__).resolve().parent / "fixtures" / "stacks"
FOLDED = FIX / "pyspy_work.folded"
SPEEDSCOPE = FIX / "pyspy_work.speedscope.json"
PPROF = FIX / "pyspy_work_cpu.pb.gz"
TORCH = FIX / "torch_export_stacks.txt"
DATA_DIR = SHARED_DATA
H100 = DATA_DIR / "kineto" / "tracelens_h100_hf_qwen1.5_0.5b_forward.json.gz"
SKIP_REASON = SHARED_DATA_ABSENT


def _folded_lines(path: Path) -> list[tuple[list[str], float]]:
    out = []
    for ln in path.read_text().splitlines():
        if ln.strip() and not ln.startswith("#"):
            stack, _, w = ln.rpartition(" ")
            out.append((stack.split(";") if stack else [], float(w)))
    return out


def _sample_sums(a) -> tuple[int, int]:
    return tuple(int(x) for x in a.views.store.sql(
        "SELECT sum(count), sum(weight_ns) FROM samples").fetchall()[0])


def test_pyspy_folded_counts_threads_and_leaf_shares() -> None:
    rows = _folded_lines(FOLDED)
    total = sum(w for _, w in rows)
    assert total == 447  # py-spy printed "Samples: 447" when recording
    a = analyze([FOLDED])
    v = a.views
    assert v is not None and v.metrics.cpu_only and v.metrics.cpu_samples == 447
    assert v.cpu.samples == 447 and v.cpu.counts_only  # raw py-spy: no sampling period
    assert _sample_sums(a) == (447, 0)
    # the leaf of each line, renamed `func (file:line)` → `file(line): func`
    leaf = Counter()
    for fs, w in rows:
        m = re.match(r"^(.+) \((.+):(\d+)\)$", fs[-1]) if fs else None
        leaf[f"{m[2]}({m[3]}): {m[1]}" if m else "(no stack)"] += int(w)
    top = v.top_self[0]
    name, n = leaf.most_common(1)[0]
    assert (top.frame, top.samples) == (name, n) == ("pyspy_workload.py(7): matmul_chain", 375)
    assert top.share == pytest.approx(375 / 447)
    # `thread (29463)` roots become the tid, selectable with --tid
    tids = {re.match(r"thread \((\d+)\)", fs[0])[1] for fs, _ in rows}
    assert tids == {"29463"}
    sel = analyze([FOLDED], Filter(tid="29463")).views
    assert sel is not None and sel.metrics.cpu_samples == 447
    md = markdown.render(a)
    assert "sampling period unknown" in md and "CPU-only" in md and "~0.0" not in md


def test_folded_header_states_the_period(tmp_path: Path) -> None:
    f = tmp_path / "with_period.folded"
    f.write_text("# crossview: unit=samples period=10ms\n" + FOLDED.read_text())
    v = analyze([f]).views
    assert v is not None and v.metrics.cpu_sampled_ns == 447 * 10_000_000
    assert not v.cpu.counts_only and v.top_self[0].self_ns == 375 * 10_000_000


def test_speedscope_sampled_weights_in_seconds() -> None:
    doc = json.loads(SPEEDSCOPE.read_text())
    (prof,) = doc["profiles"]
    assert prof["type"] == "sampled" and prof["unit"] == "seconds"
    n, secs = len(prof["samples"]), sum(prof["weights"])
    assert n == 370  # py-spy printed "Samples: 370"
    a = analyze([SPEEDSCOPE])
    v = a.views
    assert v is not None and v.metrics.cpu_samples == n
    assert v.metrics.cpu_sampled_ns == pytest.approx(secs * 1e9, abs=n)  # ns rounding per sample
    frames = doc["shared"]["frames"]
    leaf = Counter()
    for st in prof["samples"]:
        fr = frames[st[-1]] if st else None
        leaf[f"{fr['file']}({fr['line']}): {fr['name']}" if fr else "(no stack)"] += 1
    name, cnt = leaf.most_common(1)[0]
    assert (v.top_self[0].frame, v.top_self[0].samples) == (name, cnt)
    assert name.endswith("pyspy_workload.py(7): matmul_chain") and cnt == 292
    tid = re.match(r"Thread (\d+)", prof["name"])[1]
    assert {r[0] for r in a.views.store.sql("SELECT DISTINCT tid FROM samples").fetchall()} == {
        tid}


def test_pprof_matches_the_speedscope_it_was_encoded_from() -> None:
    doc = json.loads(SPEEDSCOPE.read_text())
    samples = [s for s in doc["profiles"][0]["samples"] if s]  # pprof has no empty stacks
    a = analyze([PPROF])
    v = a.views
    assert v is not None and v.metrics.cpu_samples == len(samples) == 366
    # Go-style values [1 sample, 10 ms cpu]: the cpu/nanoseconds value is the time
    assert v.metrics.cpu_sampled_ns == 366 * 10_000_000
    frames = doc["shared"]["frames"]
    by_stack = Counter(
        tuple(f"{frames[i]['file']}({frames[i]['line']}): {frames[i]['name']}" for i in s)
        for s in samples)
    got = defaultdict(int)
    for node, c in a.views.store.sql("SELECT node_id, sum(count) FROM samples GROUP BY 1"
                                     ).fetchall():
        path = []
        cur = node
        while cur is not None:
            name, cur = a.views.store.sql(
                "SELECT name, parent_node FROM frames WHERE node_id = ?", [cur]).fetchall()[0]
            path.append(name)
        got[tuple(reversed(path))] += int(c)
    assert dict(got) == dict(by_stack)  # every stack root → leaf, with its sample count
    assert "pprof sample types: samples/count, cpu/nanoseconds" in " ".join(a.artifacts[0].notes)


def test_torch_export_stacks_weights_are_microseconds() -> None:
    rows = _folded_lines(TORCH)
    total_us = sum(w for _, w in rows)
    v = analyze([TORCH]).views
    assert v is not None and v.metrics.cpu_sampled_ns == round(total_us * 1000)
    per_leaf = defaultdict(float)
    for fs, w in rows:
        m = re.match(r"^(.+\.py)\((\d+)\):_(.+)$", fs[-1])
        per_leaf[f"{m[1]}({m[2]}): {m[3]}" if m else fs[-1]] += w
    name, us = max(per_leaf.items(), key=lambda kv: kv[1])
    top = v.top_self[0]  # ranked by time, not by how many lines torch wrote
    assert (top.frame, top.self_ns) == (name, round(us * 1000))
    assert name == "torch_stacks_workload.py(7): layer" and top.user


@pytest.fixture(scope="module")
def h100_gpu_folded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, object]:
    if not H100.exists():
        pytest.skip(SKIP_REASON)
    from crossview.mcp.trees import folded

    trace = analyze([H100])
    lines, n, left = folded(trace.views.gpu, 10**9)
    assert left == 0
    path = tmp_path_factory.mktemp("gpu") / "h100_gpu.folded"
    path.write_text("\n".join(lines) + "\n")
    return path, trace


def test_gpu_folded_goes_to_the_gpu_view(h100_gpu_folded) -> None:
    path, trace = h100_gpu_folded
    a = analyze([path])
    v = a.views
    assert v is not None and not v.metrics.cpu_only and v.metrics.gpu_samples > 0
    assert v.metrics.cpu_samples == 0 and not v.metrics.devices
    # the kernel time of the trace, and the same per-family split (kernel leaves → family)
    assert v.metrics.gpu_sampled_ns == trace.views.metrics.kernel_time_ns == 45_432_698
    from crossview.views.host.sampled import gpu_families

    fams = {f: t for f, t, _ in gpu_families(v.gpu)}
    assert fams == {f.family: f.time_ns for f in trace.views.families}
    md = markdown.render(a)
    assert "sampled GPU stacks" in md and "Kernel busy" not in md
    assert "**elementwise** kernels hold 35.6%" in md  # 16,194,339 / 45,432,698 ns


def test_trace_plus_stacks_file_in_one_call(h100_gpu_folded) -> None:
    _, trace = h100_gpu_folded
    a = analyze([H100, SPEEDSCOPE])
    v = a.views
    assert v is not None and [r.status for r in a.artifacts] == ["ok", "ok"]
    # GPU side from the trace, unchanged; CPU view from the py-spy samples (L1)
    assert v.metrics.kernel_time_ns == trace.views.metrics.kernel_time_ns
    assert v.metrics.cpu_samples == 370 and v.cpu.samples == 370
    only = analyze([H100, SPEEDSCOPE], Filter(artifact=SPEEDSCOPE.name)).views
    assert only is not None and only.metrics.kernel_count == 0 and only.cpu.samples == 370


def test_crossview_exports_read_back_per_view(h100_gpu_folded, tmp_path: Path) -> None:
    """crossview's own `export --to folded --view both` and `--to speedscope` (GPU and CPU
    views in one file) read back to the same GPU and CPU totals as the trace."""
    fexp = pytest.importorskip("crossview.export.folded")
    sexp = pytest.importorskip("crossview.export.speedscope")
    _, trace = h100_gpu_folded
    trees = [("GPU view", trace.views.gpu), ("CPU view", trace.views.cpu)]
    both = tmp_path / "both.folded"
    both.write_text(fexp.render(trees))
    scope = tmp_path / "both.speedscope.json"
    scope.write_bytes(sexp.render(trees, "h100"))
    for path in (both, scope):
        v = analyze([path]).views
        assert v is not None
        assert v.metrics.gpu_sampled_ns == trace.views.gpu.total_ns == 45_432_698
        assert v.metrics.cpu_sampled_ns == trace.views.cpu.total_ns

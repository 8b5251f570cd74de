"""unfused-elementwise on the real H100 Hugging Face Qwen forward (eager, with_modules).

Every kernel of that trace that is not a GEMM or the flash-attention kernel is an ATen
TensorIterator / copy / reduction kernel (`void at::native::…`, plus one `arange`
elementwise_kernel_with_index): the test sums them straight from the JSON (tests/oracle.py)
— 1,189 kernels, 28,783,792 ns of 45,432,698 ns (63.4%) — and checks the finding carries that
share, is red (the GPU is busy 91.5% of its span, so these kernels are the step), and tells
the engineer to fuse (torch.compile). On the start-up-only nvFuser capture the same rule is a
note. Skips without ../shared/data."""

from __future__ import annotations

import pytest

import oracle
from conftest import SHARED_DATA, SHARED_DATA_ABSENT
from crossview.analysis import analyze
from crossview.units import duration

QWEN = SHARED_DATA / "kineto" / "tracelens_h100_hf_qwen1.5_0.5b_forward.json.gz"
NVFUSER = SHARED_DATA / "nsys" / "nvfuser_h200_nsys2024.6.sqlite"
_ATEN = ("void at::native::", "void (anonymous namespace)::elementwise_kernel_with_index")


def need(path):  # type: ignore[no-untyped-def]
    if not path.exists():
        pytest.skip(SHARED_DATA_ABSENT)
    return path


def test_qwen_eager_forward_is_red_unfused_elementwise_with_the_raw_share() -> None:
    ks = oracle.kernels(oracle.load_trace(need(QWEN)))
    pointwise = [k for k in ks if k.name.startswith(_ATEN)]
    rest = {k.name for k in ks if k not in pointwise}
    assert all("gemm" in n or "flash_fwd" in n for n in rest), rest  # matmuls and attention
    t, total = sum(k.dur_ns for k in pointwise), oracle.kernel_time_ns(ks)
    assert (len(pointwise), t, total) == (1189, 28_783_792, 45_432_698)
    a = analyze([QWEN])
    (f,) = [f for f in a.findings if f.pattern == "unfused-elementwise"]
    assert f.severity == "red" and f.share == pytest.approx(t / total)
    assert f"{100 * t / total:.1f}% of kernel time ({duration(t)} of {duration(total)})" \
        in f.observation
    assert f"in {len(pointwise):,} pointwise / copy / activation / reduction kernels" \
        in f.observation
    assert "`Qwen2RMSNorm` 7.38 ms" in f.observation  # recomputed in test_norm_module_fusion
    assert f.fix.startswith("Fuse the elementwise chains: `model = torch.compile(model)`")
    assert a.findings[0] is f  # the top 🔴: the GPU is busy, these kernels are the step
    assert f"At most the {duration(t)} goes." in f.expected_effect
    assert "the step shortens by up to the kernel time fusion removes — less once the host's " \
        "per-op dispatch sets the pace" in f.expected_effect


def _runs(trace: dict) -> list[list[int]]:
    """Runs of consecutive pointwise kernels per (device, stream), straight from the JSON: any
    other GPU op on the stream (a GEMM, flash attention, a memcpy / memset) ends a run."""
    ops = [(k.device, k.stream, k.start_ns, k.dur_ns, k.name.startswith(_ATEN))
           for k in oracle.kernels(trace)]
    ops += [((e.get("args") or {}).get("device", e.get("pid")),
             (e.get("args") or {}).get("stream", e.get("tid")),
             oracle.us_to_ns(e["ts"]), oracle.us_to_ns(e.get("dur", 0)), False)
            for e in oracle.events(trace)
            if e.get("ph") == "X" and e.get("cat") in ("gpu_memcpy", "gpu_memset")]
    runs: dict[tuple[object, object], list[list[int]]] = {}
    for dev, stream, _, dur, fusible in sorted(ops, key=lambda o: (str(o[0]), str(o[1]),
                                                                    o[2], o[3])):
        mine = runs.setdefault((dev, stream), [[]])
        if fusible:
            mine[-1].append(dur)
        elif mine[-1]:
            mine.append([])
    return [r for rs in runs.values() for r in rs if r]


def test_qwen_fusion_estimate_from_runs_of_one_op_kernels() -> None:
    """The expected effect: each run of ≥ 2 back-to-back pointwise kernels fused into one as
    long as its longest kernel (views/device/fusion_runs.py); recomputed from the JSON: 105
    runs of 1,084 kernels (24,707,903 ns) would keep 3,772,655 ns, saving 20,935,248 ns (72.7%
    of the 28.78 ms); 105 kernels run alone."""
    runs = _runs(oracle.load_trace(need(QWEN)))
    multi = [r for r in runs if len(r) > 1]
    run_ns, fused_ns = sum(map(sum, multi)), sum(map(max, multi))
    alone = sum(len(r) for r in runs if len(r) == 1)
    assert (len(multi), sum(map(len, multi)), run_ns, fused_ns, alone) == (
        105, 1084, 24_707_903, 3_772_655, 105)
    a = analyze([QWEN])
    (f,) = [f for f in a.findings if f.pattern == "unfused-elementwise"]
    assert f.details["fusion_runs"]["saving_ns"] == run_ns - fused_ns
    assert (f"The capture's bound: About {duration(run_ns - fused_ns)} of kernel time goes"
            in f.expected_effect)
    assert (
        f"About {duration(run_ns - fused_ns)} of kernel time goes (72.7% of these kernels' "
        f"28.78 ms): 1,084 of them run back to back on a stream, in 105 runs between matmul / "
        f"attention / copy work ({duration(run_ns)}); fused, each run is estimated at its "
        f"longest kernel ({duration(fused_ns)} in all") in f.expected_effect
    assert "the 105 kernels that run alone stay" in f.expected_effect


def test_qwen_fusion_replay_finds_the_host_next() -> None:
    """The fuse-elementwise replay (replay/levers/fuse_elementwise.py) removes the same 20.94 ms
    of kernel time, but the step shortens by 10.52 ms only: the eager host dispatch (~28 ms of
    CPU ops and Python on the critical path) then sets the pace. (4.35 ms before decision 0798,
    when the first sync stayed tied to a kernel ending at 0.39 ms plus a fixed 14.09 ms, though
    the kernels it waits on — the previous forward's, launched before the capture — are fused
    too.) The recap leads with that replay and keeps the runs' estimate as the capture's
    bound."""
    a = analyze([need(QWEN)])
    (f,) = [f for f in a.findings if f.pattern == "unfused-elementwise"]
    rp = f.details["replay"]
    assert rp["lever"] == "fuse-elementwise"  # type: ignore[index]
    saved = rp["measured_step_ns"] - rp["predicted_step_ns"]  # type: ignore[index]
    assert 10.0e6 < saved < 11.0e6  # 10.58 ms when written, under the 20.94 ms of kernels
    # the step is the recap's (ProfilerStep#6 to its GPU tail, 49.38 ms; decision 0806), not
    # the whole capture's 49.73 ms
    assert f.expected_effect.startswith(
        "Replay (`crossview whatif --lever fuse-elementwise`): median step 49.38 → 38.80 ms")
    # no fixed sync wait left on the path: the sync waits on the (fused) carried-in kernels
    assert not [c for c in rp["bound_after"] if c["cause"] == "sync return"]  # type: ignore
    assert "is not replayed" in f.expected_effect  # the dispatch torch.compile also removes
    # what holds the step then (decision 0772): the host's CPU work, most of the critical path
    first = rp["bound_after"][0]  # type: ignore[index]
    assert first["cause"] == "host: CPU (ops and Python)"
    share = first["ns"] / sum(c["ns"] for c in rp["bound_after"])  # type: ignore[index]
    assert share > 0.5
    assert "Then the step is bound by host: CPU (ops and Python) (" in f.expected_effect
    # ... so the fix says fusing alone is not enough (replay.yaml next_fix)
    assert f"{share:.0%}" in f.fix or "of its critical path is the host's own CPU work" in f.fix
    assert "Fusing the kernels alone hands this step to the host" in f.fix
    assert 'mode="reduce-overhead"' in f.fix


def test_startup_capture_makes_it_a_note() -> None:
    a = analyze([need(NVFUSER)])
    (f,) = [f for f in a.findings if f.pattern == "unfused-elementwise"]
    assert f.severity == "info"
    assert f.observation.endswith("so this says nothing about the steady state.")


def test_ledger_sizes_the_fusion_lever_by_replay_else_by_the_runs(tmp_path, monkeypatch
                                                                  ) -> None:  # type: ignore[no-untyped-def]
    """Synthesis of the Qwen trace with an nvidia-smi capture (two sources; with ncu rows in
    scope the finding leaves the kernels to ncu): the unfused-elementwise row is the replayed
    step saving (10.52 ms) and cites the trace, not the counters file the finding also names.
    Where no replay ran (a capture past `recap_max_rows`, here the replay switched off), the
    row is the runs' estimate (20,935,248 ns, recomputed above), still a prediction."""
    import shutil

    from crossview.synthesis import synthesize
    from crossview.verdict import replayed

    smi = SHARED_DATA / "metrics" / "nvidia-smi_h100_capture.txt"
    b = tmp_path / "bundle"
    b.mkdir()
    for f in (need(QWEN), need(smi)):
        shutil.copy(f, b / f.name)
    (b / "bundle.yaml").write_text("context: {model: qwen1.5-0.5b, hardware: H100}\n")
    levers = synthesize.run(b).levers
    row = next(lv for lv in levers if lv.id == "finding:unfused-elementwise")
    assert row.effect == "replay" and 10.0e6 < row.recoverable.value < 11.0e6
    assert row.recoverable.evidence == QWEN.name and row.evidence_artifacts[0] == QWEN.name
    monkeypatch.setattr(replayed, "run", lambda store, cases: None)
    row = next(lv for lv in synthesize.run(b).levers if lv.id == "finding:unfused-elementwise")
    assert (row.rank, row.effect, row.recoverable.value) == (1, "fused", 20_935_248)
    assert row.recoverable.evidence == QWEN.name
    assert row.expected_effect().startswith("20.94 ms kernel time saved (")
    assert "105 runs of back-to-back one-op kernels (24.71 ms)" in row.basis

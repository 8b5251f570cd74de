"""What-if replay on small hand-built captures (issue 16): every expected time below is
computed by hand from the rows, in µs, as the comment next to it shows.

Rows go into a Store the way a reader would put them (host_ops, gpu_ops), so graph building
(launch → kernel, stream order, cross-stream waits, sync waits, thread waits, graph launches)
is exercised, not only the re-timing."""

from __future__ import annotations

from crossview.replay import graph as graph_mod
from crossview.replay.levers import parse
from crossview.replay.steps import step_windows
from crossview.replay.whatif import WhatIf, predict
from crossview.store.store import Store

US = 1000
MAIN, AUX = "100", "200"
DL = "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"


class Capture:
    def __init__(self) -> None:
        self.store = Store()
        self.store.add_artifact(artifact_id=1, path="hand.json", kind="kineto", status="ok")
        self.op = 0

    def host(self, name: str, start: float, end: float, kind: str = "op", depth: int = 1,
             tid: str = MAIN) -> int:
        self.op += 1
        self.store.sql("INSERT INTO host_ops (artifact_id, op_id, pid, tid, kind, name, "
                       "start_ns, dur_ns, depth) VALUES (1, ?, '1', ?, ?, ?, ?, ?, ?)",
                       [self.op, tid, kind, name, int(start * US), int((end - start) * US),
                        depth])
        return self.op

    def call(self, name: str, start: float, end: float, tid: str = MAIN) -> int:
        return self.host(name, start, end, "runtime", 2, tid)

    def gpu(self, name: str, start: float, end: float, launch: int | None, stream: int = 7,
            kind: str = "kernel", via_graph: bool = False, mem: str | None = None) -> None:
        self.op += 1
        self.store.sql("INSERT INTO gpu_ops (artifact_id, gpu_op_id, device, stream, kind, "
                       "name, family, start_ns, dur_ns, launch_op_id, via_graph, mem_kinds) "
                       "VALUES (1, ?, 0, ?, ?, ?, 'other', ?, ?, ?, ?, ?)",
                       [self.op, stream, kind, name, int(start * US), int((end - start) * US),
                        launch, via_graph, mem])

    def whatif(self, *levers: str) -> WhatIf:
        g = graph_mod.build(self.store, 1)
        how, steps = step_windows(self.store, 1)
        return predict(g, steps, how, [parse(x) for x in levers])


def step_us(w: WhatIf) -> float:
    assert w.selfcheck_ok, w.selfcheck_max_error
    return w.predicted[0].predicted_ns / US


def overlap_and_sync() -> Capture:
    """Host launches A, works 100 µs, launches B (queued behind A), then syncs."""
    c = Capture()
    c.host("ProfilerStep#1", 0, 280, depth=0)
    a = c.call("cudaLaunchKernel", 0, 10)
    c.host("aten::mm", 10, 110)
    b = c.call("cudaLaunchKernel", 110, 120)
    c.call("cudaDeviceSynchronize", 120, 267)
    c.gpu("A", 15, 215, a)  # launch lag 15 µs
    c.gpu("B", 215, 265, b)  # queued behind A
    return c


def test_unchanged_replay_reproduces_the_step() -> None:
    w = overlap_and_sync().whatif()
    assert w.selfcheck_max_error == 0.0
    assert step_us(w) == 280
    assert w.predicted[0].gpu_busy_ns == 250 * US  # A 200 + B 50, no overlap between them


def test_overlap_kernel_speedup_moves_the_sync() -> None:
    # A 200 → 100 µs: A 15–115; B ready at its launch 110 + typical lag 15 = 125 (stream free
    # at 115): 125–175; the sync returns 2 µs after B (as measured: 267 − 265) = 177; then
    # the 13 µs of host work after it: step 190 µs
    w = overlap_and_sync().whatif("kernel-speedup=A:2")
    assert step_us(w) == 190


def test_sync_removed_host_runs_on() -> None:
    # the sync no longer waits: host at 120, then its 13 µs: step 133 µs
    assert step_us(overlap_and_sync().whatif("remove-sync")) == 133


def test_cross_stream_event_dependency() -> None:
    """D on stream 8 was launched at 20 µs but ran only after C (stream 7) ended: an event
    wait the trace does not name. Speeding C up moves D."""
    c = Capture()
    c.host("ProfilerStep#1", 0, 420, depth=0)
    lc = c.call("cudaLaunchKernel", 0, 10)
    ld = c.call("cudaLaunchKernel", 10, 20)
    c.host("aten::mm", 20, 30)
    c.call("cudaDeviceSynchronize", 30, 402)
    c.gpu("C", 15, 315, lc)
    c.gpu("D", 317, 400, ld, stream=8)  # 2 µs after C: lag 307 µs > 50 µs → event dep
    assert step_us(c.whatif()) == 420
    # C 300 → 100 µs: 15–115; D at 117–200; sync returns 202; +18 µs host: 220 µs
    assert step_us(c.whatif("kernel-speedup=C:3")) == 220


def test_graph_launch_kernels_hang_off_their_launch() -> None:
    c = Capture()
    c.host("ProfilerStep#1", 0, 350, depth=0)
    gl = c.call("cudaGraphLaunch", 0, 20)
    c.call("cudaStreamSynchronize", 25, 340)
    c.gpu("k1", 30, 130, gl, via_graph=True)
    c.gpu("k2", 132, 232, gl, via_graph=True)
    c.gpu("k3", 234, 334, gl, via_graph=True)
    w = c.whatif()
    assert step_us(w) == 350 and w.predicted[0].gpu_busy_ns == 300 * US
    # k2 ÷2: k1 30–130, k2 132–182, k3 184–284, sync returns 290, +10 µs: 300
    assert step_us(c.whatif("kernel-speedup=k2:2")) == 300


def test_two_host_threads_and_dataloader_lever() -> None:
    """The main thread loads data (100 µs) then waits for the autograd thread, which wakes
    10 µs after it and works 480 µs; the main thread resumes 10 µs after that."""
    c = Capture()
    c.host("ProfilerStep#1", 0, 700, depth=0)
    c.host(DL, 0, 100)
    c.host("aten::add", 600, 700)
    c.host("AddmmBackward", -1000, -900, depth=0, tid=AUX)
    c.host("CudnnConvolutionBackward", 110, 590, depth=0, tid=AUX)
    w = c.whatif()
    assert step_us(w) == 700
    # data loading 100 → 20 µs hand-off: autograd 30–510, main resumes 520, ends 620
    assert step_us(c.whatif("dataloader-workers=0.02")) == 620


def test_a_threads_first_op_follows_the_thread_that_woke_it() -> None:
    """As above, but the autograd thread records nothing before its first op, 10 µs after
    the data loading ends (within first_wake_window_ns): it is woken by the main thread, so a
    shorter data load moves it (before graph.py _first_wakes its measured start pinned it and
    the lever replayed to no change: 700 µs)."""
    c = Capture()
    c.host("ProfilerStep#1", 0, 700, depth=0)
    c.host(DL, 0, 100)
    c.host("aten::add", 600, 700)
    c.host("CudnnConvolutionBackward", 110, 590, depth=0, tid=AUX)
    assert step_us(c.whatif()) == 700
    # data loading 100 → 20 µs hand-off: autograd 30–510, main resumes 520, ends 620
    assert step_us(c.whatif("dataloader-workers=0.02")) == 620


def test_levers_compose_in_order() -> None:
    # speedup then remove-sync: the host no longer waits for the faster kernels: 133 µs
    assert step_us(overlap_and_sync().whatif("kernel-speedup=A:2", "remove-sync")) == 133


def test_kernel_to_a_fraction_of_its_roofline() -> None:
    # ncu says A runs at 40% of its DRAM-bandwidth ceiling; the lever brings it to 80%
    # (knowledge/replay.yaml roofline_fraction.memory): 200 → 100 µs, as the factor-2 case
    c = overlap_and_sync()
    g = graph_mod.build(c.store, 1)
    how, steps = step_windows(c.store, 1)
    w = predict(g, steps, how, [parse("kernel-speedup=A:roofline")],
                roofline={"A": (0.4, "memory")})
    assert step_us(w) == 190


def test_findings_of_one_lever_share_one_replay() -> None:
    # claims of three patterns (the verdict's cases): two declare the remove-sync lever, one
    # none; the lever is replayed once, for the first (verdict/replayed.py)
    from crossview.core.claim import Claim
    from crossview.detectors import gpu_gap, sync_bound, sync_memcpy
    from crossview.detectors.declare import Declaration
    from crossview.verdict import prose, replayed
    from crossview.verdict.cases import Case

    def case(d: Declaration) -> Case:
        c = Claim(pattern=d.patterns[0], share=0.1, tier="consider")
        return Case(claim=c, decl=d, about=d.about_of(c.pattern), share=0.1)

    cs = [case(sync_bound.DECLARATION), case(sync_memcpy.DECLARATION),
          case(gpu_gap.DECLARATION)]
    replayed.run(overlap_and_sync().store, cs)
    effects = [prose.effect(c, "Up to 1 ms", None) for c in cs]
    # remove-sync: 280 → 133 µs (test_sync_removed_host_runs_on)
    assert effects[0].startswith("Replay (`crossview whatif --lever remove-sync`)")
    assert "median step 0.28 → 0.13 ms" in effects[0]
    assert effects[1] == "The same replay as `sync-bound` (--lever remove-sync)."
    assert effects[2] == "Up to 1 ms"  # no lever for it: its own bound stays


def test_levers_on_one_shared_baseline_as_on_their_own() -> None:
    # the recap replays each lever against one unchanged replay of the graph (whatif.baseline):
    # the prediction and self-check must be those of a lever replayed on its own
    from crossview.replay.whatif import baseline

    c = overlap_and_sync()
    g = graph_mod.build(c.store, 1)
    how, steps = step_windows(c.store, 1)
    base = baseline(g, steps)
    for lever in ("remove-sync", "kernel-speedup=A:2"):
        alone = predict(g, steps, how, [parse(lever)])
        shared = predict(g, steps, how, [parse(lever)], base=base)
        assert shared.to_dict() == alone.to_dict()
    # and the graph itself is not changed by a lever: the baseline stays the capture's
    assert step_us(predict(g, steps, how, [], base=base)) == 280
    assert step_us(predict(g, steps, how, [parse("remove-sync")], base=base)) == 133


def test_gc_paused_during_a_replay_and_restored() -> None:
    import gc

    import pytest

    from crossview.replay.gc_pause import paused

    assert gc.isenabled()
    with pytest.raises(ValueError), paused():
        assert not gc.isenabled()
        raise ValueError("a replay that fails")
    assert gc.isenabled()  # back on after an error
    gc.disable()
    try:
        with paused():
            pass
        assert not gc.isenabled()  # a caller's own pause is left as it was
    finally:
        gc.enable()


def test_recap_replay_without_critical_paths_same_step_times() -> None:
    # the recap reads step times only and skips the critical-path walk (paths=False): the
    # times must be those of the full replay, and only bound_by is left empty
    c = overlap_and_sync()
    g = graph_mod.build(c.store, 1)
    how, steps = step_windows(c.store, 1)
    full = predict(g, steps, how, [parse("remove-sync")])
    quick = predict(g, steps, how, [parse("remove-sync")], paths=False)
    assert quick.medians() == full.medians()
    assert step_us(quick) == 133
    assert full.bound_by() and not quick.bound_by()


def test_every_lever_is_documented_and_listed() -> None:
    # docs/whatif.md has a section per lever, and the CLI help and the MCP tool name them all
    from pathlib import Path

    from crossview.cli import whatif as cli_whatif
    from crossview.mcp import tools_whatif
    from crossview.replay.levers import MODULES

    doc = (Path(__file__).resolve().parents[1] / "docs" / "whatif.md").read_text()
    cli_src = Path(cli_whatif.__file__).read_text()
    mcp_src = Path(tools_whatif.__file__).read_text()
    for name in MODULES:
        assert f"### `{name}" in doc, name
        assert name in cli_src and name in mcp_src, name

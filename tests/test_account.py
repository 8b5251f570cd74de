"""Steps and the time account (scope/step_detect.py, views/device/account.py) on every real
capture.

Exactness (per step, per device): busy rows + idle causes = wall; idle causes = idle within
1 µs. Reference numbers come from ../shared/data/README.md (measured independently of
crossview) or from the issue text (the CPU view's numbers), as noted at each assertion.
"""

from __future__ import annotations

from functools import cache

import pytest

from conftest import SHARED_DATA, run_cli
from crossview.analysis import Analysis, analyze
from crossview.views.views import Views

DATA = SHARED_DATA
CAPTURES = sorted([*DATA.glob("kineto/*.json.gz"), *DATA.glob("nsys/*.sqlite")])
pytestmark = pytest.mark.skipif(not CAPTURES, reason="../shared/data not present")


@cache
def _analysis(name: str) -> Analysis:
    return analyze([next(p for p in CAPTURES if p.name == name)])


def _views(name: str) -> Views:
    v = _analysis(name).views
    assert v is not None
    return v


@pytest.mark.parametrize("name", [p.name for p in CAPTURES])
def test_idle_causes_sum_to_idle_per_step(name: str) -> None:
    v = _views(name)
    acc = v.account
    if acc is None:  # CPU-only capture (jacc): no kernels, no account
        assert v.metrics.cpu_only
        return
    for dev in acc.per_device:
        assert dev.steps
        for s in dev.steps:
            assert abs(sum(s.idle_by_cause.values()) - s.idle_ns) <= 1000, (dev.device, s.step)
            assert s.busy_ns + s.idle_ns == s.wall_ns
            assert sum(s.busy_by_family.values()) + s.exposed_comm_ns + s.peer_wait_ns == s.busy_ns
    # the steady-state rows partition the mean steady step (integer division per row)
    total = sum(c.ns for c in acc.steady_state)
    assert abs(total - acc.steady_wall_ns) <= len(acc.steady_state) + 1
    assert abs(sum(c.share_of_step for c in acc.steady_state) - 1.0) < 1e-9


def test_workers0_steps_and_data_loading() -> None:
    v = _views("kineto_v100_resnet50_workers0.pt.trace.json.gz")
    s = v.steps
    assert s.source == "profiler-step"
    assert [x.number for x in s.steps] == [16, 17, 18, 19, 20, 21]
    # README: median step 152.5 ms (host ranges); the account's steps run to the end of
    # their last kernel, so the median moves by < 0.1 ms
    summ = s.summary()
    assert summ is not None and abs(summ.median_ns - 152.5e6) < 0.1e6
    acc = v.account
    assert acc is not None and not acc.launch_bound
    dl = acc.slice("data_loading")
    assert dl is not None
    # README: DataLoader 272.8 ms with the GPU 21.9% busy meanwhile → 213.0 ms idle in it
    total = dl.ns * acc.steady_steps
    assert abs(total - 272.8e6 * (1 - 0.219)) < 0.03 * 213.0e6
    assert dl.top_frames[0].frame == "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"
    # the largest idle cause of the step
    idle = [c for c in acc.steady_state if c.idle]
    assert idle[0].cause == "data_loading"


def test_workers4_flags_warmup_and_flush() -> None:
    s = _views("kineto_v100_resnet50_workers4.pt.trace.json.gz").steps
    flags = {x.number: x.flags for x in s.steps}
    # README: the last step (206.5 ms) holds the profiler's flush
    assert flags[21] == ["outlier"]
    assert "profiler's flush" in s.steps[-1].reasons[0]
    assert abs(s.steps[-1].wall_ns - 206.5e6) < 0.1e6
    assert flags[16] == ["warmup"]
    assert all(not flags[n] for n in (17, 18, 19, 20))
    acc = _views("kineto_v100_resnet50_workers4.pt.trace.json.gz").account
    assert acc is not None
    dl = acc.slice("data_loading")
    assert dl is None or dl.share_of_step < 0.02  # README: DataLoader 1.0% of step time


@pytest.mark.parametrize("name", ["nvfuser_h200_nsys2024.6.sqlite",
                                  "nvfuser_h200_nsys2025.1.sqlite"])
def test_nvfuser_is_start_up(name: str) -> None:
    v = _views(name)
    assert v.steps.source == "capture"
    acc = v.account
    assert acc is not None and acc.steady_fallback
    jit = acc.slice("jit_compile")
    assert jit is not None and jit.ns > 0
    if "2024.6" in name:
        # issue text: the CPU view shows Nvrtc::CompileProgram 351.65 ms
        assert jit.top_frames[0].frame == "executor_utils::Nvrtc::CompileProgram"
        assert abs(jit.top_frames[0].ns - 351.65e6) < 0.01e6
        assert [c for c in acc.steady_state if c.idle][0].cause == "jit_compile"


def test_vllm_graph_replay_step_reaches_its_gpu_tail() -> None:
    v = _views("tracelens_mi300x_vllm_decode_full_graph.json.gz")
    (x,) = v.steps.steps
    assert v.steps.source == "engine:vllm"
    # the step ends with its last kernel, not when execute_model returns
    last = v.store.sql("SELECT max(start_ns + dur_ns) FROM gpu_ops WHERE kind = 'kernel'"
                       ).fetchall()[0][0]
    assert x.end_ns == last


def test_step_filter_cli() -> None:
    p = DATA / "kineto" / "kineto_v100_resnet50_workers0.pt.trace.json.gz"
    env_cmd = ["analyze", str(p), "-f", "json", "--step", "17:18"]
    r = run_cli(*env_cmd, check=True)
    import json

    d = json.loads(r.stdout)
    assert d["filter"]["requested"]["step"] == "17:18"
    assert [s["number"] for s in d["steps"]["per_step"]] == [17, 18]
    assert d["account"]["steady_state"]
    bad = run_cli(*env_cmd[:-1], "99")
    assert bad.returncode == 2
    assert bad.stderr.strip().count("\n") == 0 and "no such step" in bad.stderr


def test_lever_pair_data_loading_slice_predicts_workers4() -> None:
    """The README's lever pair: workers0's steady step less its data_loading slice should
    land near workers4's measured steady step (the same script with num_workers=4)."""
    a0 = _views("kineto_v100_resnet50_workers0.pt.trace.json.gz").account
    a4 = _views("kineto_v100_resnet50_workers4.pt.trace.json.gz")
    assert a0 is not None
    dl = a0.slice("data_loading")
    assert dl is not None
    predicted = a0.steady_wall_ns - dl.ns  # 154.91 − 34.98 = 119.93 ms
    summ = a4.steps.summary()
    assert summ is not None
    measured = summ.median_ns  # 122.59 ms over the 4 steady steps (warm-up, flush out)
    assert abs(predicted - measured) / measured < 0.05

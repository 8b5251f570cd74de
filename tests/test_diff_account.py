"""`crossview diff` explains the change through the time account (issue 16 item 6), on the
real lever pair kineto_v100_resnet50_workers0 → workers4. The raw ProfilerStep medians
(152.47 → 125.09 ms) are read with gzip + json, not through crossview."""

from __future__ import annotations

import json

import pytest

from conftest import run_cli
from test_whatif_real import W0, W4, needs_data, profiler_step_median_ms


@pytest.fixture(scope="module")
def pair() -> dict:
    out = run_cli("diff", W0, W4, "--format", "json", check=True,
                  env={"PATH": "/usr/bin:/bin"}, inherit_env=False).stdout
    return json.loads(out)["account"]


@needs_data
def test_diff_names_data_loading_as_the_main_per_step_change(pair: dict) -> None:
    assert pair["main_change"] == "data_loading"
    rows = {c["cause"]: c for c in pair["causes"]}
    dl = rows["data_loading"]
    assert dl["b_ns"] == 0 and dl["delta_ns"] < -25e6  # workers0 loses > 25 ms per step
    # the causes add up to the step-time change (the account partitions each step)
    assert sum(c["delta_ns"] for c in pair["causes"]) == pytest.approx(
        pair["step_delta_ns"], abs=len(pair["causes"]) * 1000)
    # the step change (means over the steady steps: workers4's flush step is flagged) agrees
    # with the raw ProfilerStep medians over all steps (−27.4 ms) within 10 ms per step
    raw = (profiler_step_median_ms(W4) - profiler_step_median_ms(W0)) * 1e6
    assert abs(pair["step_delta_ns"] - raw) < 10e6
    # beyond the step-to-step noise: the share column is filled
    assert pair["beyond_noise"] and dl["share_of_change"] > 0.9
    # CPU side next to it: the single-process DataLoader frame's self time is gone
    frames = {f["frame"]: f for f in pair["cpu_frames"]}
    single = "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"
    assert frames[single]["b_ns"] == 0 and frames[single]["a_ns"] > 20e6


def test_share_of_change_only_beyond_noise() -> None:
    from crossview.experiments.account_diff import AccountDiff, CauseDelta

    d = AccountDiff(6, 6, 100_000_000, 101_000_000, 2_000_000,
                    [CauseDelta("x", "x", 10, 20, True)])
    assert not d.beyond_noise  # +1 ms against ± 2 ms of noise
    assert d.to_dict()["causes"][0]["share_of_change"] is None

"""Conventions §3 / issue 37: severity and rank follow the predicted saving of the steady step —
the replay's where its lever models the whole fix (verdict/cases.py `predicts_fix`), else the
claim's own bound. Hand-made cases (the numbers are the test's own: no shared capture holds two
findings of one severity whose replay reorders them), then the real captures whose replays
model the whole fix, checked against their recorded replay numbers."""

from __future__ import annotations

from conftest import SHARED_DATA, shared_file
from crossview.analysis import analyze
from crossview.core.claim import Claim, Tier
from crossview.detectors import (
    dataloader,
    host_python,
    launch_bound,
    pageable_memcpy,
    sync_bound,
)
from crossview.detectors.declare import Declaration
from crossview.knowledge.thresholds import defaults
from crossview.replay.whatif import Pinned
from crossview.verdict.cases import Case, Replayed
from crossview.verdict.severity import judge, rank, saving


class _V:  # the views the saving reads: no time account (shares stay on their own basis)
    account = None


def _c(d: Declaration, share: float, saved: float | None = None, predicts: bool = True,
       pinned: bool = False, tier: Tier = "top") -> Case:
    claim = Claim(pattern=d.patterns[0], share=share, tier=tier)
    c = Case(claim=claim, decl=d, about=d.about_of(claim.pattern), share=share)
    if saved is not None:
        pin = Pinned("s", 50_000_000, 100_000_000) if pinned else None
        c.replay = Replayed("x", 100_000_000, 100_000_000 * (1 - saved), 0.0, (), pin,
                            pinned, None if predicts else "part of the fix")
    return c


def _ranked(*cases: Case) -> list[str]:
    judge(_V(), list(cases))  # type: ignore[arg-type]
    return [c.pattern for c in rank(list(cases), defaults())]


def test_a_whole_fix_replay_ranks_by_its_saving() -> None:
    loader = _c(dataloader.DECLARATION, 0.30, 0.12)
    launch = _c(launch_bound.DECLARATION, 0.25)
    assert saving(_V(), loader).share == 0.12  # type: ignore[arg-type]
    assert _ranked(loader, launch) == ["kernel-launch-bound", "dataloader-starved"]
    assert loader.severity == launch.severity == "red"


def test_a_partial_replay_keeps_the_share() -> None:
    # a lever with a caveat (models part of the fix) or a pinned replay: a lower bound only
    graphs = _c(launch_bound.DECLARATION, 0.30, 0.05, predicts=False)
    sync = _c(sync_bound.DECLARATION, 0.28, 0.01, pinned=True)
    loader = _c(dataloader.DECLARATION, 0.25)
    assert saving(_V(), graphs).share == 0.30  # type: ignore[arg-type]
    assert _ranked(loader, sync, graphs) == [
        "kernel-launch-bound", "sync-bound", "dataloader-starved"]


def test_a_replay_saving_above_the_share_ranks_higher() -> None:
    copies = _c(pageable_memcpy.DECLARATION, 0.05, 0.09, tier="consider")
    python = _c(host_python.DECLARATION, 0.08, tier="consider")
    assert _ranked(python, copies) == ["pageable-memcpy", "host-python-overhead"]


def test_severity_comes_from_the_predicted_saving() -> None:
    # a lever replayed to ≥ verdict.yaml red_saving (10%) is a 🔴 whatever its own cut…
    copies = _c(pageable_memcpy.DECLARATION, 0.19, 0.19, tier="consider")
    # … and one replayed to under the cut a 🟡 (3%) or a note (under yellow_saving, 2%)
    launch = _c(launch_bound.DECLARATION, 0.22, 0.03)
    loader = _c(dataloader.DECLARATION, 0.22, 0.001)
    assert _ranked(loader, launch, copies) == ["pageable-memcpy", "kernel-launch-bound",
                                               "dataloader-starved"]
    assert [copies.severity, launch.severity, loader.severity] == ["red", "yellow", "info"]
    assert loader.refuted  # dataloader-starved is refutable: its lever replays the cause


def test_workers0_dataloader_replay_predicts_the_fix() -> None:
    # the replay's median step 152.54 → 120.60 ms (recap, checked by hand): 20.9%; the
    # tensor-core claim's 42.7% share is capped by the GPU kernels' 0% of the critical path
    # (decision 0773), so it ranks below and is no 🔴
    a = analyze([shared_file(SHARED_DATA / "kineto" /
                             "kineto_v100_resnet50_workers0.pt.trace.json.gz")])
    reds = [f for f in a.findings if f.severity == "red"]
    [dl] = [f for f in reds if f.pattern == "dataloader-starved"]
    rep = dl.details["replay"]
    assert isinstance(rep, dict) and rep["predicts_fix"] is True
    assert abs(dl.details["saving"]["share_of_step"] - 0.209) < 0.001  # type: ignore[index]
    assert dl.details["saving"]["from"] == "replay"  # type: ignore[index]
    assert [f.pattern for f in reds] == ["dataloader-starved"]
    tc = next(f for f in a.findings if f.pattern == "tensor-cores-unused")
    assert tc.share > 0.4 and tc.details["saving"]["share_of_step"] == 0  # type: ignore[index]
    assert tc.severity != "red"


def test_caveat_levers_do_not_predict_the_fix() -> None:
    a = analyze([shared_file(SHARED_DATA / "kineto" / "hta_v100_ddp_training.json.gz")])
    checked = []
    for f in a.findings:
        rep = f.details.get("replay")
        if isinstance(rep, dict) and rep["lever"] in ("cuda-graphs", "bucket-grads"):
            assert rep["predicts_fix"] is False
            assert f.details["saving"] == {  # the claim's own bound ranks it
                "share_of_step": f.share, "from": "bound",
                "basis": "the claim's share of the steady step"}
            checked.append(rep["lever"])
    assert sorted(checked) == ["bucket-grads", "cuda-graphs"]

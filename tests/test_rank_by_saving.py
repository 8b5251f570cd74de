"""Conventions §3: within a severity, findings rank by the predicted saving of the steady step —
the replay's where its lever models the whole fix (replay/findings.py `predicts_fix`), else the
finding's share of the time account. Synthetic findings (the numbers are the test's own: no
shared capture holds two findings of one severity whose replay reorders them), then the real
captures whose replays model the whole fix, checked against their recorded replay numbers."""

from __future__ import annotations

from conftest import SHARED_DATA, shared_file
from crossview.analysis import analyze
from crossview.core.finding import Finding
from crossview.detectors import predicted_saving, rank


def _f(pattern: str, share: float, replay: dict[str, object] | None = None,
       severity: str = "red") -> Finding:
    return Finding(pattern=pattern, severity=severity, title=pattern,  # type: ignore[arg-type]
                   observation="", fix="do it", share=share, evidence=[],
                   details={"replay": replay} if replay else {})


def _rep(saving: float, predicts: bool, pinned: bool = False) -> dict[str, object]:
    r: dict[str, object] = {"lever": "x", "measured_step_ns": 100_000_000,
                            "predicted_step_ns": int(100_000_000 * (1 - saving)),
                            "selfcheck_max_step_error": 0.0, "predicts_fix": predicts}
    if pinned:
        r["pinned_ns"] = 50_000_000
    return r


def test_a_whole_fix_replay_ranks_by_its_saving() -> None:
    loader = _f("dataloader-starved", 0.30, _rep(0.12, True))
    launch = _f("kernel-launch-bound", 0.25)
    assert predicted_saving(loader) == 0.12
    assert [f.pattern for f in rank([loader, launch])] == ["kernel-launch-bound",
                                                           "dataloader-starved"]


def test_a_partial_replay_keeps_the_share() -> None:
    # a lever with a caveat (models part of the fix) or a pinned replay: a lower bound only
    graphs = _f("kernel-launch-bound", 0.30, _rep(0.05, False))
    sync = _f("sync-bound", 0.28, _rep(0.01, False, pinned=True))
    loader = _f("dataloader-starved", 0.25)
    assert predicted_saving(graphs) == 0.30
    assert [f.pattern for f in rank([loader, sync, graphs])] == [
        "kernel-launch-bound", "sync-bound", "dataloader-starved"]


def test_a_replay_saving_above_the_share_ranks_higher() -> None:
    copies = _f("pageable-memcpy", 0.10, _rep(0.18, True), severity="yellow")
    python = _f("host-python-overhead", 0.15, severity="yellow")
    assert [f.pattern for f in rank([python, copies])] == ["pageable-memcpy",
                                                           "host-python-overhead"]


def test_severity_still_comes_first() -> None:
    yellow = _f("pageable-memcpy", 0.19, _rep(0.19, True), severity="yellow")
    red = _f("kernel-launch-bound", 0.22, _rep(0.02, True))
    assert [f.pattern for f in rank([yellow, red])] == ["kernel-launch-bound",
                                                        "pageable-memcpy"]


def test_workers0_dataloader_replay_predicts_the_fix() -> None:
    # the replay's median step 152.54 → 120.60 ms (recap, checked by hand): 20.9%; the
    # tensor-core finding's 42.7% share is capped by the GPU kernels' 0% of the critical path
    # (decision 0773), so it ranks below and is a 🟡
    a = analyze([shared_file(SHARED_DATA / "kineto" /
                             "kineto_v100_resnet50_workers0.pt.trace.json.gz")])
    reds = [f for f in a.findings if f.severity == "red"]
    [dl] = [f for f in reds if f.pattern == "dataloader-starved"]
    rep = dl.details["replay"]
    assert isinstance(rep, dict) and rep["predicts_fix"] is True
    assert abs(predicted_saving(dl) - 0.209) < 0.001
    assert [f.pattern for f in reds] == ["dataloader-starved"]
    tc = next(f for f in a.findings if f.pattern == "tensor-cores-unused")
    assert tc.share > 0.4 and predicted_saving(tc) == 0 and tc.severity == "yellow"


def test_caveat_levers_do_not_predict_the_fix() -> None:
    a = analyze([shared_file(SHARED_DATA / "kineto" / "hta_v100_ddp_training.json.gz")])
    checked = []
    for f in a.findings:
        rep = f.details.get("replay")
        if isinstance(rep, dict) and rep["lever"] in ("cuda-graphs", "bucket-grads"):
            assert rep["predicts_fix"] is False and predicted_saving(f) == f.share
            checked.append(rep["lever"])
    assert sorted(checked) == ["bucket-grads", "cuda-graphs"]

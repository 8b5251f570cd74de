"""A replayed expected effect names what holds the step once the lever is pulled (decision
0772): the same critical path `crossview whatif` prints for that lever, and no cause where the
path runs through time the capture records nothing for."""

from __future__ import annotations

from conftest import SHARED_DATA, shared_file
from crossview.analysis import analyze
from crossview.replay import whatif

HTA_V100 = SHARED_DATA / "kineto" / "hta_v100_ddp_training.json.gz"
NVFUSER = SHARED_DATA / "nsys" / "nvfuser_h200_nsys2025.1.sqlite"



def test_launch_bound_replay_names_the_host_dispatch_as_whatif_does() -> None:
    f = next(f for f in analyze([shared_file(HTA_V100)]).findings
             if f.pattern == "kernel-launch-bound")
    w = whatif.run([HTA_V100], ["cuda-graphs"])
    (cause, ns), total = w.bound_by()[0], sum(v for _, v in w.bound_by())
    assert cause == "host: CPU (ops and Python)" and ns / total > 0.9  # 95% when written
    rep = f.details["replay"]
    assert rep["bound_after"][0] == {"cause": cause, "ns": ns}  # type: ignore[index]
    assert (f"Then the step is bound by host: CPU (ops and Python) ({ns / total:.0%} of its "
            "critical path).") in f.expected_effect


def test_start_up_capture_names_no_cause_for_unrecorded_time() -> None:
    """Synthetic WhatIf (the branch no shared capture reaches since decision 0806: nvfuser
    2025.1's one-unit step used to start on another lane's first op, 97% of its path before
    the launching thread's first recorded op; it now starts on that thread)."""
    from crossview.replay.measure import BEFORE_FIRST_OP
    from crossview.verdict.cases import Replayed
    from crossview.verdict.prose import replay_effect

    path = ((BEFORE_FIRST_OP, 97_000.0), ("host: CPU (ops and Python)", 3_000.0))
    text = replay_effect(Replayed("pinned-copies", 100_000, 99_000, 0.0, path, None, False,
                                  None))
    assert "Then 97% of the step's critical path lies before the first op the capture records " \
        "on its lane: this capture does not say what holds it." in text
    assert "bound by before" not in text
    f = next(f for f in analyze([shared_file(NVFUSER)]).findings if f.pattern == "pageable-memcpy")
    assert "Then the step is bound by host: CPU (ops and Python) (88% of its critical path)." \
        in f.expected_effect


def test_every_next_fix_names_a_fix_text() -> None:
    from crossview.detectors import declarations
    from crossview.knowledge.loader import load_yaml
    from crossview.replay.levers import MODULES

    fixes = load_yaml("fixes.yaml")
    for d in declarations():
        for about in (d.about, *d.per_pattern.values()):
            assert set(about.levers) <= set(MODULES), about.levers
            for _cause, key in about.next_fix:
                assert about.levers and key in fixes and key in d.fix_keys, key

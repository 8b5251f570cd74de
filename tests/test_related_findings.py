"""A claim whose time lies inside another's is a part of it, not a second saving (issue 37: one
owner per nanosecond across all findings; verdict/owners.py), on the real captures where the
pairs occur, and on hand-made claims for the rules' edges (no owner present, a note as owner).

Before issue 37 the inner finding stayed a 🟡 beside its 🔴 with a sentence saying its saving
was inside the other's (detectors/related.py): the two shares were still both counted among the
red and yellow findings. Now the inner claim is a note that names its owner, and the owner
lists it as a part."""

from __future__ import annotations

import pytest

from conftest import SHARED_DATA, SHARED_DATA_ABSENT
from crossview.analysis import analyze
from crossview.core.claim import Claim, Owns
from crossview.core.finding import Finding
from crossview.detectors import first_calls, host_python, launch_bound
from crossview.verdict.cases import Case
from crossview.verdict.owners import _within

KINETO = SHARED_DATA / "kineto"


def _pair(name: str, inner: str) -> tuple[Finding, list[Finding]]:
    path = KINETO / name
    if not path.exists():
        pytest.skip(SHARED_DATA_ABSENT)
    found = analyze([path]).findings
    return next(f for f in found if f.pattern == inner), found


@pytest.mark.parametrize(("name", "inner", "outer"), [
    # the first calls' setup is host time inside the launch-bound wait (GPU 13% busy)
    ("tracelens_b200_vllm_eager_prefill_tp8.json.gz", "first-call-per-shape",
     "kernel-launch-bound"),
    # the per-op host cost is why the host is slow in the launch-bound 🔴
    ("hta_a100_ddp_resnet_nccl.json.gz", "host-op-overhead", "kernel-launch-bound"),
    # the per-parameter optimizer work is host time inside the launch-bound wait
    ("hta_v100_ddp_training.json.gz", "optimizer-per-parameter", "kernel-launch-bound"),
])
def test_inner_claim_is_a_part_of_the_outer_one(name: str, inner: str, outer: str) -> None:
    f, found = _pair(name, inner)
    assert f.severity == "info" and f.details["within"] == outer
    o = next(x for x in found if x.pattern == outer)
    assert o.severity == "red" and inner in o.details["parts"]
    assert f.expected_effect.count(f"`{outer}`") == 1
    assert "not in addition to it" in f.expected_effect


def test_kernels_counted_by_the_mechanism_claim() -> None:
    # Qwen2RMSNorm's memory-bound ops are one-op kernels of the families unfused-elementwise
    # owns: the memory-bound claim keeps none of its own, a note naming the owner
    f, found = _pair("tracelens_h100_hf_qwen1.5_0.5b_forward.json.gz",
                     "memory-bandwidth-bound")
    assert f.severity == "info" and f.details["within"] == "unfused-elementwise"
    assert next(x for x in found if x.pattern == "unfused-elementwise").severity == "red"


def _case(d, pattern: str, tier: str = "consider", owns: Owns | None = None) -> Case:  # noqa: ANN001
    c = Claim(pattern=pattern, share=0.1, tier=tier, owns=owns or Owns())  # type: ignore[arg-type]
    return Case(claim=c, decl=d, about=d.about_of(pattern), share=0.1)


def test_rule_edges() -> None:
    inner = _case(first_calls.DECLARATION, "first-call-per-shape",
                  owns=Owns(within=("cpu_dispatch", "launch_overhead")))
    # no claim owns those causes: the inner claim owns its time
    _within([inner])
    assert inner.held_by is None
    # a note owns nothing
    note = _case(launch_bound.DECLARATION, "kernel-launch-bound", tier="note",
                 owns=Owns(causes=("launch_overhead", "cpu_dispatch")))
    _within([note, inner])
    assert inner.held_by is None
    # the first owner of one of the causes holds it, once
    python = _case(host_python.DECLARATION, "host-python-overhead",
                   owns=Owns(causes=("cpu_dispatch",)))
    launch = _case(launch_bound.DECLARATION, "kernel-launch-bound",
                   owns=Owns(causes=("launch_overhead",)))
    _within([python, launch, inner])
    assert inner.held_by is python and python.parts == [inner] and not launch.parts

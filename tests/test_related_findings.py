"""A finding whose time lies inside another's says so (detectors/related.py,
knowledge/finding_relations.yaml), on the real captures where the pairs occur, and on hand-made
findings for the rules' edges (an info outer, a memory-bound matmul, applied twice)."""

from __future__ import annotations

import pytest

from conftest import SHARED_DATA, SHARED_DATA_ABSENT
from crossview.analysis import analyze
from crossview.core.finding import Finding
from crossview.detectors import related

KINETO = SHARED_DATA / "kineto"


def _pair(name: str, inner: str) -> tuple[Finding, list[Finding]]:
    path = KINETO / name
    if not path.exists():
        pytest.skip(SHARED_DATA_ABSENT)
    found = analyze([path]).findings
    return next(f for f in found if f.pattern == inner), found


@pytest.mark.parametrize(("name", "inner", "outer"), [
    # RMSNorm's memory-bound ops are among the one-op kernels the 🔴 counts
    ("tracelens_h100_hf_qwen1.5_0.5b_forward.json.gz", "memory-bandwidth-bound",
     "unfused-elementwise"),
    # the first calls' setup is host time inside the launch-bound wait (GPU 13% busy)
    ("tracelens_b200_vllm_eager_prefill_tp8.json.gz", "first-call-per-shape",
     "kernel-launch-bound"),
    # the per-op host cost is why the host is slow in the launch-bound 🔴
    ("hta_a100_ddp_resnet_nccl.json.gz", "host-op-overhead", "kernel-launch-bound"),
])
def test_inner_finding_names_the_outer_one(name: str, inner: str, outer: str) -> None:
    f, found = _pair(name, inner)
    assert f.severity == "yellow" and f.details["within"] == outer
    assert next(x for x in found if x.pattern == outer).severity == "red"
    assert f.expected_effect.count(f"`{outer}`") == 1
    assert "not in addition to it" in f.expected_effect


def _f(pattern: str, severity: str, **details: object) -> Finding:
    return Finding(pattern=pattern, severity=severity, title=pattern, observation="", fix="x",
                   share=0.1, evidence=[], expected_effect="Saves 1 ms.",
                   details=dict(details))  # type: ignore[arg-type]


def test_rule_edges() -> None:
    mem = _f("memory-bandwidth-bound", "yellow", ops=[{"family": "elementwise"}])
    related.apply([_f("unfused-elementwise", "info"), mem])
    assert "within" not in mem.details  # an info note holds no saving
    gemv = _f("memory-bandwidth-bound", "yellow", ops=[{"family": "matmul"}])
    related.apply([_f("unfused-elementwise", "red"), gemv])
    assert "within" not in gemv.details and gemv.expected_effect == "Saves 1 ms."
    first = _f("first-call-per-shape", "yellow")
    found = [_f("host-python-overhead", "yellow"), _f("kernel-launch-bound", "red"), first]
    related.apply(related.apply(found))  # the first `within` present wins; applied once
    assert first.details["within"] == "kernel-launch-bound"
    assert first.expected_effect.count("kernel-launch-bound") == 1

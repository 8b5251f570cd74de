"""graph-region: CUDA graphs over the region they would cover, not just the launch calls
(real B200 vLLM eager prefill trace, one step of 888 tokens).

The launch-bound 🔴's replay removed launch-call cost only (−5.6%, "a lower bound"), while the
host time is eager per-op dispatch inside vLLM's model forward: `_model_forward` holds
79.2 ms of the 87.2 ms step and its 36 attention ops (vLLM's piecewise graphs leave
`vllm::unified_attention_with_output` eager between the pieces) 9.13 ms — both summed here
from the raw JSON. Replaying the forward as graphs can save at most the host time removed,
79.2 − 9.13 ms; it saves nearly all of it because the GPU is busy only 11.6 ms of the step.
A capture with no such region (hta_a100_ddp_resnet, no engine) keeps the cuda-graphs replay.
Skips without ../shared/data."""

from __future__ import annotations

import gzip
import json

from conftest import SHARED_DATA, shared_file
from crossview.analysis import analyze
from crossview.replay import whatif

B200 = SHARED_DATA / "kineto" / "tracelens_b200_vllm_eager_prefill_tp8.json.gz"
A100 = SHARED_DATA / "kineto" / "hta_a100_ddp_resnet_nccl.json.gz"


def test_vllm_forward_replayed_as_piecewise_graphs() -> None:
    with gzip.open(shared_file(B200)) as fh:
        ev = [e for e in json.load(fh)["traceEvents"] if e.get("ph") == "X"]
    fwd = sum(e["dur"] for e in ev if str(e.get("name", "")).endswith(": _model_forward"))
    attn = sum(e["dur"] for e in ev if e.get("name") == "vllm::unified_attention_with_output")
    assert (round(fwd / 1e3, 1), round(attn / 1e3, 2)) == (79.2, 9.13)
    removable_ns = (fwd - attn) * 1e3
    w = whatif.run([B200], ["graph-region"])
    m = w.medians()
    saved = m["measured_step_ns"] - m["predicted_step_ns"]
    assert 0.9 * removable_ns < saved <= removable_ns
    f = next(f for f in analyze([B200]).findings if f.pattern == "kernel-launch-bound")
    assert f.details["replay"]["lever"] == "graph-region"  # type: ignore[index]
    assert f.details["replay"]["predicts_fix"] is True  # type: ignore[index]
    assert f.expected_effect.startswith("Replay (`crossview whatif --lever graph-region`): "
                                        "median step 87.22 → 17.97 ms")


def test_no_region_falls_back_to_the_launch_calls() -> None:
    f = next(f for f in analyze([shared_file(A100)]).findings
             if f.pattern == "kernel-launch-bound")
    assert f.details["replay"]["lever"] == "cuda-graphs"  # type: ignore[index]
    assert "the replayed change is a lower bound" in f.expected_effect

"""layout-conversions on the real hta_a100_ddp_resnet_nccl trace (ResNet under DDP, A100).

cuDNN runs the convolutions in NHWC while the model is NCHW: `nchwToNhwcKernel` ×474 (12.62 ms)
and `nhwcToNchwKernel` ×159 (2.50 ms) — 15.12 ms of 162.53 ms kernel time (9.3%). The test
counts them in the raw JSON, independently of crossview. Skips without ../shared/data."""

from __future__ import annotations

import oracle
from conftest import SHARED_DATA, shared_file
from crossview.analysis import analyze

A100 = SHARED_DATA / "kineto" / "hta_a100_ddp_resnet_nccl.json.gz"


def test_conversions_counted_and_fixed_with_channels_last() -> None:
    ks = [e for e in oracle.complete_events(shared_file(A100)) if e.get("cat") == "kernel"]
    conv = [k for k in ks if "nchwtonhwc" in k["name"].lower()
            or "nhwctonchw" in k["name"].lower()]
    ns = sum(oracle.us_to_ns(k["dur"]) for k in conv)
    total = sum(oracle.us_to_ns(k["dur"]) for k in ks)
    assert len(conv) == 633 and round(ns / 1e6, 2) == 15.12
    (f,) = [f for f in analyze([shared_file(A100)]).findings
            if f.pattern == "layout-conversions"]
    assert f.details["kernels"] == 633 and f.details["time_ns"] == ns
    assert f.share == ns / total and f.share_of == "kernel_time"
    assert f.title == "Layout conversions: 633 NCHW↔NHWC kernels, 9.3% of kernel time"
    assert "memory_format=torch.channels_last" in f.fix


def test_no_conversions_no_finding() -> None:
    a = analyze([shared_file(SHARED_DATA / "kineto" / "hta_v100_ddp_training.json.gz")])
    assert not [f for f in a.findings if f.pattern == "layout-conversions"]

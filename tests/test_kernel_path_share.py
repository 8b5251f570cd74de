"""Kernel-side findings against the step's critical path (replay/findings.py _on_path,
replay.yaml kernel_side): kernel time off the critical path does not shorten the step.

kineto_v100_resnet50_workers0 (FP32 ResNet-50 training with an in-process DataLoader): its
FP32 convolutions are 67% of kernel time, yet `crossview whatif` with every conv and GEMM
kernel 4× faster replays to +0.0% (checked here), because the unchanged replay's critical path
holds no GPU kernel time. So the tensor-cores finding cannot save anything today: it ranks
after the DataLoader 🔴 and, with that red standing, becomes yellow. The lever pair agrees:
workers4 (num_workers=4, the DataLoader fixed) is host-bound too (77% host CPU)."""

from __future__ import annotations

from conftest import SHARED_DATA, shared_file
from crossview.analysis import analyze
from crossview.replay import whatif

KINETO = SHARED_DATA / "kineto"
WORKERS0 = KINETO / "kineto_v100_resnet50_workers0.pt.trace.json.gz"
QWEN = KINETO / "tracelens_h100_hf_qwen1.5_0.5b_forward.json.gz"



def test_fp32_convs_off_the_critical_path_are_not_the_top_issue() -> None:
    w = whatif.run([shared_file(WORKERS0)], ["kernel-speedup=gemm:4", "kernel-speedup=conv:4"])
    m = w.medians()
    assert m["predicted_step_ns"] == m["measured_step_ns"]  # 4× faster kernels: +0.0%
    assert not any(c.startswith("GPU kernel") for c, _ in w.bound_by())
    found = analyze([WORKERS0]).findings
    assert [f.pattern for f in found if f.severity == "red"] == ["dataloader-starved"]
    tc = next(f for f in found if f.pattern == "tensor-cores-unused")
    assert tc.severity == "yellow" and tc.details["kernel_path_share"] == 0
    assert "Not what the step waits on today: GPU kernels are 0% of its critical path — fix " \
        "the other 🔴 issues first (`dataloader-starved`)" in tc.observation
    assert "Today GPU kernels are 0% of the median step's critical path" in tc.expected_effect


def test_lone_kernel_red_off_the_path_goes_and_the_key_finding_follows() -> None:
    """workers4 (the DataLoader fixed): its only 🔴 was FP32 convs on CUDA cores, with 0% of
    the critical path in GPU kernels (77% host CPU): it becomes 🟡 with no other red standing,
    and the key finding names the largest 🟡, host-side, instead of "kernel time itself"."""
    from crossview.render import markdown

    a = analyze([shared_file(KINETO / "kineto_v100_resnet50_workers4.pt.trace.json.gz")])
    assert not [f for f in a.findings if f.severity == "red"]
    tc = next(f for f in a.findings if f.pattern == "tensor-cores-unused")
    assert tc.severity == "yellow"
    assert "host: CPU (ops and Python) holds 7" in tc.observation
    assert "that work, not the kernels, sets the step's pace." in tc.observation
    top = next(f for f in a.findings if f.severity == "yellow")
    assert top.pattern == "host-python-overhead"
    assert ("no 🔴 issue in this capture — the largest is **host-python-overhead** (🟡), on "
            "the host side.") in markdown.render(a)


def test_gpu_bound_capture_keeps_its_kernel_findings() -> None:
    """The H100 Qwen forward: kernels hold 61% of its critical path, above the kernel-side
    🟡's shares (19.8%, 6.0%): nothing is added or demoted."""
    found = analyze([shared_file(QWEN)]).findings
    for pattern in ("memory-bandwidth-bound", "kernel-inefficiency"):
        f = next(f for f in found if f.pattern == pattern)
        assert f.severity == "yellow" and f.details["kernel_path_share"] > 0.5  # type: ignore[operator]
        assert "Today GPU kernels are" not in f.expected_effect

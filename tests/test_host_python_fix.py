"""host-python-overhead's fix fits the program the capture shows: a tensor-parallel job is
graphed with its framework's flag, a step torch.compile already runs is told to graph it
and cut its breaks (not to compile it), anything else gets the plain PyTorch advice. Real
captures for the flags (the 8-rank Megatron TP job: compiled regions and tensor parallel;
V100 DDP: a compiled backward; ResNet-50 workers4: eager), fixes.yaml for the text."""

from __future__ import annotations

import pytest

from conftest import SHARED_DATA, shared_file
from crossview.detectors import host_python
from crossview.knowledge import fixes

KEY = host_python.PATTERN


def _text(flags: tuple[str, ...]) -> str:
    return fixes.flag_text(KEY, flags, lambda k, v: k == "framework" and v == "pytorch")


@pytest.mark.parametrize(("capture", "flags"), [
    ("megatron_tp8_a100", ("tensor-parallel", "compiled")),
    ("hta_v100_ddp_training.json.gz", ("compiled",)),
    ("kineto_v100_resnet50_workers4.pt.trace.json.gz", ()),
])
def test_flags_from_the_capture(capture: str, flags: tuple[str, ...]) -> None:
    from crossview.analysis import analyze

    v = analyze([shared_file(SHARED_DATA / "kineto" / capture)]).views
    assert host_python._flags(v) == flags


def test_variant_per_program() -> None:
    plain = _text(())
    assert "`torch.compile(model)` (or" in plain
    tp = _text(("tensor-parallel", "compiled"))
    assert "--cuda-graph-impl local" in tp and "`torch.compile(model)` (or" not in tp
    compiled = _text(("compiled",))
    assert "reduce-overhead" in compiled and "TORCH_LOGS=graph_breaks" in compiled
    assert "`torch.compile(model)` (or" not in compiled

"""The ledger counts each kernel once and lists only changes to try (real H100 Qwen forward
with its nvidia-smi capture: two sources).

Before: the memory family's copies (10.18 ms of kernel time) ranked first as "remove the
dtype/layout copies", above the replayed fusion lever (−4.35 ms per step) that holds the same
kernels; a note ("Host syncs present but not draining the GPU … None needed") became rank 3
with an experiment whose variant arm was "None needed"; and the op-roofline 🟡s were left out
because they cited "2 artifacts", no file of the bundle. Skips without ../shared/data."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import oracle
from conftest import SHARED_DATA, shared_file
from crossview.analysis import analyze
from crossview.kernels.families import classify
from crossview.synthesis import synthesize
from crossview.units import duration

QWEN = SHARED_DATA / "kineto" / "tracelens_h100_hf_qwen1.5_0.5b_forward.json.gz"
SMI = SHARED_DATA / "metrics" / "nvidia-smi_h100_capture.txt"


def _bundle(tmp_path: Path) -> Path:
    b = tmp_path / "bundle"
    b.mkdir()
    for f in (shared_file(QWEN), shared_file(SMI)):
        shutil.copy(f, b / f.name)
    (b / "bundle.yaml").write_text("context: {model: qwen1.5-0.5b, hardware: H100}\n")
    return b


def test_family_rows_fold_into_the_finding_that_holds_their_kernels(tmp_path: Path) -> None:
    fams = {f.pattern: f for f in analyze([shared_file(QWEN)]).findings}
    held = fams["unfused-elementwise"].details["families"]
    assert isinstance(held, dict) and {"elementwise", "memory"} <= set(held)
    syn = synthesize.run(_bundle(tmp_path))
    ids = [lv.id for lv in syn.levers]
    assert not [i for i in ids if i.startswith(("copies:", "fusion:"))], ids
    row = syn.levers[0]
    assert row.id == "finding:unfused-elementwise" and row.effect == "replay"
    assert (f"holds `fusion:elementwise:all` (elementwise kernels "
            f"{duration(held['elementwise'])}, the same kernels" in row.basis), row.basis
    # the copies row is the memory family's casts and layout copies only (decision 0800):
    # kernels named *copy* (not concatenations, gathers, scatters, index or fill kernels),
    # summed from the raw JSON
    ks = [e for e in oracle.complete_events(shared_file(QWEN)) if e.get("cat") == "kernel"]
    casts = sum(oracle.us_to_ns(e["dur"]) for e in ks
                if re.search("copy|nchwtonhwc|nhwctonchw", e["name"], re.I)
                and not re.search("catarray|gather|scatter|index|fill", e["name"], re.I)
                and classify(e["name"]) == "memory")
    assert (f"holds `copies:memory:all` (casts and layout copies {duration(casts)}, the same "
            "kernels" in row.basis), row.basis
    # the experiment plan follows the ledger: nothing left to A/B the copies separately
    assert all(not p.lever_id.startswith("copies:") for p in syn.plans)


def test_notes_are_not_levers_and_kernel_findings_cite_the_trace(tmp_path: Path) -> None:
    found = {f.pattern: f for f in analyze([shared_file(QWEN)]).findings}
    assert found["sync-bound"].severity == "info" and "replay" in found["sync-bound"].details
    syn = synthesize.run(_bundle(tmp_path))
    by_id = {lv.id: lv for lv in syn.levers}
    assert "finding:sync-bound" not in by_id  # a replayed note is still a note
    # the memory-bound ops are one-op kernels unfused-elementwise owns: a note (issue 37),
    # no lever of its own
    assert found["memory-bandwidth-bound"].details["within"] == "unfused-elementwise"
    assert "finding:memory-bandwidth-bound" not in by_id
    ki = by_id["finding:kernel-inefficiency"]
    assert ki.evidence_artifacts == [QWEN.name]  # the counters file holds no kernels
    assert not [w for w in syn.inv.bundle.warnings if "not a file of the bundle" in w]

"""docs/adding-a-detector.md, followed literally: its blocks are applied to a copy of src/, then
`crossview analyze` runs on the real capture the page names and the new finding must appear
with the cut-off read from the data the page added.

Expected numbers computed here from the raw Kineto JSON (not through crossview): GPU time in
`gpu_memcpy`/`gpu_memset` events ÷ (that + the sum of `kernel` event durations)."""

from __future__ import annotations

import gzip
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from test_cutoffs_in_data import cutoffs

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "adding-a-detector.md"
CAPTURE = ROOT.parent / "shared" / "data" / "kineto" / \
    "tracelens_mi300x_vllm_decode_full_graph.json.gz"

_BLOCK = re.compile(r"^```(\w+)\n(.*?)^```$", re.S | re.M)
_NEW = re.compile(r"^# new file: (\S+)$")
_APPEND = re.compile(r"^# append to: (\S+)$")
_AFTER = re.compile(r"^# in (\S+), after the line `(.+)`:$")


def doc_edits() -> list[tuple[str, str, str | None, str]]:
    """(action, file, anchor line, body) for each block that says where it goes."""
    out: list[tuple[str, str, str | None, str]] = []
    for _lang, text in _BLOCK.findall(DOC.read_text(encoding="utf-8")):
        head, _, body = text.partition("\n")
        if m := _NEW.match(head):
            out.append(("new", m.group(1), None, body))
        elif m := _APPEND.match(head):
            out.append(("append", m.group(1), None, body))
        elif m := _AFTER.match(head):
            out.append(("after", m.group(1), m.group(2), body))
    return out


def apply(root: Path, edits: list[tuple[str, str, str | None, str]]) -> None:
    for action, rel, anchor, body in edits:
        p = root / rel
        if action == "new":
            assert not p.exists(), f"{rel} exists already: the doc's new file would clobber it"
            p.write_text(body, encoding="utf-8")
            continue
        text = p.read_text(encoding="utf-8")
        if action == "append":
            text = text.rstrip("\n") + "\n" + body
        else:
            lines = text.splitlines(keepends=True)
            hits = [i for i, line in enumerate(lines) if line.rstrip("\n") == anchor]
            assert len(hits) == 1, f"{rel}: the doc's anchor line {anchor!r} is not unique/found"
            lines[hits[0] + 1:hits[0] + 1] = [body]
            text = "".join(lines)
        p.write_text(text, encoding="utf-8")


def test_the_doc_names_every_place_a_detector_touches() -> None:
    files = [(a, f) for a, f, _x, _b in doc_edits()]
    assert files == [
        ("new", "src/crossview/detectors/gpu_copy_time.py"),
        ("after", "src/crossview/detectors/__init__.py"),
        ("after", "src/crossview/detectors/__init__.py"),
        ("append", "src/crossview/knowledge/thresholds.yaml"),
        ("append", "src/crossview/knowledge/thresholds_schema.py"),
        ("append", "src/crossview/knowledge/fixes.yaml"),
        ("append", "src/crossview/knowledge/evidence.yaml"),
    ], files


def _expected_share() -> float:
    with gzip.open(CAPTURE) as fh:
        events = json.loads(fh.read())["traceEvents"]
    copies = sum(e["dur"] for e in events if e.get("cat") in ("gpu_memcpy", "gpu_memset"))
    kernels = sum(e["dur"] for e in events if e.get("cat") == "kernel")
    return float(copies / (copies + kernels))


@pytest.mark.skipif(not CAPTURE.exists(), reason="needs ../shared/data")
def test_following_the_doc_adds_a_working_detector(tmp_path: Path) -> None:
    shutil.copytree(ROOT / "src", tmp_path / "src",
                    ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    apply(tmp_path, doc_edits())
    module = tmp_path / "src/crossview/detectors/gpu_copy_time.py"
    assert cutoffs(module.read_text(encoding="utf-8"), "detectors/gpu_copy_time.py") == []
    cut = yaml.safe_load((tmp_path / "src/crossview/knowledge/thresholds.yaml").read_text(
        encoding="utf-8"))["copy_time_yellow_share"]
    env = {**os.environ, "PYTHONPATH": str(tmp_path / "src")}

    def analyze(fmt: str) -> str:
        proc = subprocess.run(
            [sys.executable, "-m", "crossview", "analyze", str(CAPTURE), "--format", fmt],
            capture_output=True, text=True, env=env, cwd=ROOT, timeout=600, check=False)
        assert proc.returncode == 0, proc.stderr[-2000:]
        return proc.stdout

    # the recap line the doc quotes (its ```text block, up to the "…")
    quoted = [t for lang, t in _BLOCK.findall(DOC.read_text(encoding="utf-8")) if lang == "text"]
    assert len(quoted) == 1
    recap = analyze("md")
    assert quoted[0].strip().rstrip("…").strip() in recap
    assert recap.index("## 🟡 Also consider") < recap.index("in copies (memcpy DtoD")
    proc_stdout = analyze("json")
    findings = json.loads(proc_stdout)["findings"]
    found = [f for f in findings if f["pattern"] == "gpu-copy-time"]
    assert len(found) == 1, [f["pattern"] for f in findings]
    f = found[0]
    want = _expected_share()  # 43.19 µs of memcpy DtoD ÷ (that + 10.67 ms of kernels) ≈ 0.40%
    assert f["share"] == pytest.approx(want, rel=1e-3)
    assert 0.0039 < want < 0.0041
    assert f["severity"] == "yellow"
    assert f"at or above the {100 * cut:.1f}% cut (thresholds.yaml" in f["observation"]
    assert "memcpy DtoD ×9 43.2 µs" in f["observation"], f["observation"]
    assert f["fix"].startswith("Find the copies in the trace")
    # the copy the test ran is untouched by the walkthrough: the real tree has no such detector
    assert not (ROOT / "src/crossview/detectors/gpu_copy_time.py").exists()

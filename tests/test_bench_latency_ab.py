"""bench/latency_ab.py compares a git ref's first analyze with this tree's: the ref's sources
come from `same_answers.export_src` (git archive). No bench is run here (performance lives in
bench/): only that the ref's tree is the package as committed."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "bench"
sys.path.insert(0, str(BENCH))

import same_answers  # noqa: E402


def test_export_src_is_the_committed_package(tmp_path: Path) -> None:
    repo = BENCH.parent
    if subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True).returncode:
        pytest.skip("not a git checkout: no ref to export")
    src = same_answers.export_src("HEAD", tmp_path / "ref")
    assert src == tmp_path / "ref" / "src"
    committed = subprocess.run(["git", "show", "HEAD:src/crossview/__init__.py"], cwd=repo,
                               capture_output=True, check=True).stdout
    assert (src / "crossview" / "__init__.py").read_bytes() == committed
    assert not (src / "crossview" / "__pycache__").exists()  # sources only

"""The evaluation set (tests/eval/cases.yaml, issue 37) scored in CI: every shared capture's
expected first 🔴 (or none), the patterns that must not be 🔴, the fix phrases no finding may
print, and the verdict's invariants — judged by tests/eval/score.py from crossview's JSON only
(no ranking code of crossview's). Six cases are synthetic captures (tests/eval/synthetic.py:
made up for what the shared data lacks, and said so); they need no shared data, except the
`<<<1,1>>>` one, which edits a real nsys export."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from conftest import SHARED_DATA

EVAL = Path(__file__).resolve().parent / "eval"
sys.path.insert(0, str(EVAL))
import score  # noqa: E402  (tests/eval is not a package)


def _names() -> list[str]:
    return [score._name(c) for c in score.cases()]


@pytest.mark.parametrize("name", _names())
def test_case(name: str) -> None:
    (r,) = score.run(SHARED_DATA, only=name, exact=True)
    if r.skipped:
        pytest.skip(r.skipped)
    failed = [f"{w} ({d})" if d else w for w, ok, d in r.checks if not ok]
    assert not failed, f"{name}: " + "; ".join(failed)
    assert r.checks, f"{name}: nothing was checked"


def test_cases_are_well_formed() -> None:
    keys = {"capture", "synthetic", "why", "first_red", "not_red", "forbid", "need",
            "red_effect"}
    seen: set[str] = set()
    for c in score.cases():
        assert set(c) <= keys, c
        assert ("capture" in c) != ("synthetic" in c), c
        assert c.get("why"), f"{score._name(c)}: say why the expectation holds"
        assert score._name(c) not in seen
        seen.add(score._name(c))
    # every shared capture the recaps cover is in the set
    if SHARED_DATA.is_dir():
        shared = {p.relative_to(SHARED_DATA).as_posix()
                  for d in ("kineto", "nsys", "ncu", "metrics")
                  for p in (SHARED_DATA / d).glob("*") if (SHARED_DATA / d).is_dir()}
        listed = {str(c["capture"]) for c in score.cases() if "capture" in c}
        # an .nsys-rep is judged through its exported .sqlite twin (same capture)
        missing = {p for p in shared if not (p.endswith(".nsys-rep")
                                             and p[:-len(".nsys-rep")] + ".sqlite" in shared)}
        missing -= listed
        assert not missing, f"captures with no expectation: {sorted(missing)}"

"""The verdict's score on the evaluation set (tests/eval/cases.yaml, issue 37): per capture
the expected first 🔴 (or none), the patterns that must not be 🔴, the fix phrases no finding
may print, and the verdict's invariants, judged from crossview's JSON only.

    python bench/eval_score.py [--data ../shared/data] [--only NAME]

Prints one line per case (synthetic captures marked), every failed check, and the score
(passed / checked); exit 1 when any check fails. The same scorer runs in CI as
tests/test_eval.py.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "eval"))

import score  # noqa: E402  (tests/eval is not a package)

if __name__ == "__main__":
    sys.exit(score.main())

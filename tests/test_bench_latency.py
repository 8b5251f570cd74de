"""bench/latency.py's table: verdicts from targets.yaml `latency`, ratios against the same
run's traceinsight. Synthetic numbers (no bench is run here: performance lives in bench/)."""

from __future__ import annotations

import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[1] / "bench"
sys.path.insert(0, str(BENCH))

import latency  # noqa: E402
from bench_queries import targets  # noqa: E402


def test_report_verdicts_and_ratios() -> None:
    res = {
        "load_start": "1.00 1.00 1.00", "load_end": "1.20 1.10 1.00", "cores": 2,
        "help": {"python -c pass": 0.02, "crossview --help": 0.12,
                 "crossview analyze --help": 0.2},
        "captures": [
            {"capture": "shared/data/kineto/a.json.gz", "bytes": 436_000, "first_s": 0.8,
             "first_cpu_s": 0.7, "cached_s": 0.4, "cached_cpu_s": 0.35, "mcp_first_s": 0.3,
             "traceinsight_s": 4.0, "bare_parse_s": 0.05},
            {"capture": "shared/data/kineto/big.json.gz", "bytes": 4_000_000, "first_s": 2.0,
             "first_cpu_s": 2.0, "cached_s": 0.25, "cached_cpu_s": 0.2,
             "traceinsight_s": "failed: ValueError", "bare_parse_s": 0.3},
            {"capture": "shared/data/nsys/x.nsys-rep", "bytes": 420_000, "error": "no nsys"},
        ],
    }
    text = latency.report(res, targets())
    assert "| `crossview --help` | 0.120 | ≤ 0.15 s: PASS |" in text
    assert "| `crossview analyze --help` | 0.200 | ≤ 0.15 s: FAIL |" in text
    a = next(x for x in text.splitlines() if "/a.json.gz" in x)
    # 4.0 / 0.8 = 5.00× traceinsight; first 0.8 ≤ 1.0; cached 0.4 > 0.3; MCP 0.3 ≤ 0.5
    assert "| 5.00× |" in a and "first ≤ 1.0: PASS" in a and "≥ 4.0× TI: PASS" in a
    assert "cached ≤ 0.3: FAIL" in a and "MCP ≤ 0.5: PASS" in a
    big = next(x for x in text.splitlines() if "/big.json.gz" in x)
    assert "first ≤" not in big and "cached ≤ 0.3: PASS" in big  # > 3 MB: no first target
    assert "failed: ValueError" in big
    assert "rejected: no nsys" in text


def test_second_looks_are_judged_by_the_cached_target() -> None:
    """The other commands' kept answers (decision 0914) against `cached_s` (0.3 s)."""
    res = {"load_start": "", "load_end": "", "cores": 2, "help": {}, "captures": [],
           "second_looks": {"report": {"store_cached_s": 1.15, "second_look_s": 0.07},
                            "diff": {"store_cached_s": 0.63, "second_look_s": 0.31}}}
    text = latency.report(res, targets())
    assert "| `report` | 1.15 | 0.07 | ≤ 0.3: PASS |" in text
    assert "| `diff` | 0.63 | 0.31 | ≤ 0.3: FAIL |" in text

"""bench/run_all.py's table: ratios against the same run's peers, verdicts from targets.yaml.

Synthetic numbers (no bench is run here: performance lives in bench/, never in tests)."""

from __future__ import annotations

import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[1] / "bench"
sys.path.insert(0, str(BENCH))

import run_all  # noqa: E402
from bench_queries import targets  # noqa: E402


def test_report_ratios_and_verdicts() -> None:
    res = {
        "load_start": "1.00 1.00 1.00", "load_end": "2.00 1.50 1.20",
        "kineto_mb": 333.7, "kineto_name": "k.json",
        "kineto": [{"cores": 2, "crossview_s": 2.5, "crossview_rss_mib": 600.0,
                    "bare_parse_s": 1.0, "hta_s": 27.0, "hta_rss_mib": 1700.0},
                   {"cores": 1, "crossview_s": 4.0, "crossview_rss_mib": 550.0,
                    "bare_parse_s": 1.5, "hta": "not run: /x absent"}],
        "nsys": {"kernels": 1_000_008, "api_rows": 1_000_980, "crossview_s": 6.0,
                 "crossview_rss_mib": 900.0,
                 "bare": {"sqlite3": 3.0, "adbc": 2.0, "duckdb-sqlite": "not available: x"}},
        "queries": [{"input": "/tmp/k.json", "open_s": 10.0,
                     "calls": {"topentities": {"p95_ms": 4.0}, "query": {"p95_ms": 250.0}}}],
    }
    text = run_all.report(res, targets())
    assert "load average at start 1.00 1.00 1.00, at end 2.00 1.50 1.20" in text
    assert "| HTA 27.00 s | 10.80× (≥ 10: PASS)" in text  # 27.0 / 2.5
    assert "0.35× (≤ 0.5: PASS)" in text  # 600 / 1700
    assert "DuckDB read_json 1.00 s | 2.50× (≤ 2: FAIL)" in text
    assert "not run: /x absent" in text and "2.67× (≤ 2: FAIL)" in text  # 4.0 / 1.5
    assert "3.00× (≤ 1.5: FAIL) | crossview / fastest (adbc)" in text  # 6.0 / 2.0
    assert "≤ 1,536 MiB: PASS" in text
    assert "query 250.0 ms (open 10.0 s) | — | FAIL | < 200 ms" in text

"""The wall-clock base of an Nsight Systems export: TARGET_INFO_SESSION_START_TIME.utcEpochNs.

nsys event times are ns since the session start, so that epoch is the wall clock of stored
time 0 (artifacts.clock_epoch_ns). Exports without the table (older nsys): NULL.
"""

from __future__ import annotations

import sqlite3

from crossview.sources.nsys.schema_probe import Probe

_TABLE = "TARGET_INFO_SESSION_START_TIME"


def epoch_base_ns(src: sqlite3.Connection, p: Probe) -> int | None:
    if not p.has(_TABLE) or "utcEpochNs" not in p.cols(_TABLE):
        return None
    try:
        row = src.execute(f"SELECT utcEpochNs FROM {_TABLE} LIMIT 1").fetchone()
    except sqlite3.Error:
        return None
    if not row or not isinstance(row[0], int) or row[0] <= 0:
        return None
    return int(row[0])

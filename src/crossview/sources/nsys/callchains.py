"""SAMPLING_CALLCHAINS → labelled frames, outermost first (for CPU samples and API backtraces).

A callchain is rows (id, stackDepth, symbol, module): depth 0 is the innermost frame (where the
sample hit). Frame label: the symbol as recorded; an unresolved frame (a bare address) is
labelled by its module in brackets, `[kernel.kallsyms]` / `[libcuda.so.1]` (perf's convention),
and a run of equal labels in one chain collapses to one frame, so a burst of kernel-mode
addresses reads as one `[kernel.kallsyms]` frame instead of dozens of distinct addresses.
"""

from __future__ import annotations

import sqlite3

import duckdb

from crossview.sources.nsys import fetch
from crossview.sources.nsys.schema_probe import CALLCHAINS, Probe

CHAINS = "_nsys_cc"  # id, name, pos (0 = outermost)


def stage(src: sqlite3.Connection, duck: duckdb.DuckDBPyConnection, probe: Probe) -> int:
    """Build temp table `_nsys_cc(id, name, pos)`; needs `_nsys_str`. Returns frame rows."""
    if not probe.has(CALLCHAINS):
        return 0
    ints = {"id": "id", "sd": "stackDepth", "symbol": "symbol"}
    if probe.col(CALLCHAINS, "module"):
        ints["module"] = "module"
    if probe.col(CALLCHAINS, "unresolved"):
        ints["unresolved"] = "unresolved"
    fetch.stage(src, duck, CALLCHAINS, "_nsys_ccraw", ints)
    module = "m.value" if "module" in ints else "NULL"
    unresolved = "coalesce(c.unresolved, 0) <> 0" if "unresolved" in ints else "false"
    duck.execute(
        f"""
        CREATE OR REPLACE TEMP TABLE {CHAINS} AS
        WITH f AS (
            SELECT c.id, c.sd,
                CASE WHEN {unresolved} OR s.value IS NULL OR s.value = ''
                          OR regexp_matches(s.value, '^0x[0-9a-fA-F]+$')
                     THEN CASE WHEN {module} LIKE '[%' THEN {module}
                               ELSE '[' || coalesce(nullif(regexp_extract({module},
                                    '[^/]+$'), ''), 'unknown') || ']' END
                     ELSE s.value END AS name
            FROM _nsys_ccraw c
            LEFT JOIN _nsys_str s ON s.id = c.symbol
            {"LEFT JOIN _nsys_str m ON m.id = c.module" if "module" in ints else ""}
        ), d AS (
            SELECT *, lag(name) OVER (PARTITION BY id ORDER BY sd DESC) AS prev FROM f
        )
        SELECT id, name,
               CAST(row_number() OVER (PARTITION BY id ORDER BY sd DESC) - 1 AS INTEGER) AS pos
        FROM d WHERE prev IS NULL OR prev <> name
        ORDER BY id, pos
        """
    )
    duck.execute("DROP TABLE _nsys_ccraw")
    return int(duck.execute(f"SELECT count(*) FROM {CHAINS}").fetchall()[0][0])

"""`ts` / `dur` must be JSON numbers: a boolean or a text is not a time (issue 43).

DuckDB's JSON reader casts what it can to the declared DOUBLE: `true` becomes 1.0 and "1000"
becomes 1000.0, so a trace whose times were written as booleans or text would be read as
numbers, silently wrong ("busy 100.0% of a 276.7 µs span"). Reading every time as JSON to see
its type costs the parse of every trace; instead two cheap signs decide whether to look:
a `ts` of exactly 0 or 1 µs after the parse (what booleans become), or a non-number value
after a `"ts"` / `"dur"` key in the first or last MiB of the staged events (a writer that
quotes its times does so throughout). Only then are the events parsed again with `ts` and
`dur` as JSON, and every event whose time is not a number is taken out and counted.
"""

from __future__ import annotations

import os
import re

import duckdb

from crossview.sources.kineto import categories as C
from crossview.store.store import scratch_of

_SAMPLE_BYTES = 1 << 20
# a `"ts"` / `"dur"` key whose value does not start like a JSON number (or null)
_NOT_NUMBER = re.compile(rb'"(?:ts|dur)"\s*:\s*[^-0-9\sn]')
_NUMBER_TYPES = "('UBIGINT', 'BIGINT', 'DOUBLE')"


def _num(col: str) -> str:
    return f"CASE WHEN json_type({col}) IN {_NUMBER_TYPES} THEN CAST({col} AS DOUBLE) END"


def _not_num(col: str) -> str:
    return f"({col} IS NOT NULL AND json_type({col}) NOT IN {_NUMBER_TYPES})"


def _sampled(files: list[str]) -> bool:
    """A non-number time in the first or last MiB of the staged events."""
    for k, f in enumerate(files):
        with open(f, "rb") as fh:
            if (k == 0 and _NOT_NUMBER.search(fh.read(_SAMPLE_BYTES))):
                return True
            if k == len(files) - 1:
                fh.seek(0, 2)
                size = fh.tell()
                fh.seek(max(0, size - _SAMPLE_BYTES))
                if _NOT_NUMBER.search(fh.read()):
                    return True
    return False


def suspect(con: duckdb.DuckDBPyConnection, files: list[str]) -> bool:
    """Whether the parsed `ev` may hold times that were not numbers in the file."""
    (zero_one,) = con.execute("SELECT count(*) FROM ev WHERE ts IN (0, 1)").fetchall()[0]
    return bool(zero_one) or _sampled(files)


def retype(con: duckdb.DuckDBPyConnection, files: list[str], extra: str) -> list[str]:
    """`ev` parsed again with `ts` / `dur` read as JSON: events whose time is a boolean, a
    text or another non-number are taken out; returns the problem saying how many."""
    typed = C.COLUMNS.replace("ts: 'DOUBLE', dur: 'DOUBLE'", "ts: 'JSON', dur: 'JSON'")
    con.execute(
        f"CREATE OR REPLACE TEMP TABLE _ev_typed AS SELECT cat, name, {_num('ts')} AS ts,"
        f" {_num('dur')} AS dur, pid, tid, args, {C.SIDE_SQL} AS side,"
        f" {_not_num('ts')} OR {_not_num('dur')} AS _bad"
        f" FROM read_json($files, format='array', columns={typed},"
        f" maximum_object_size=16777216{extra}) WHERE ph = 'X'", {"files": files})
    (bad,) = con.execute("SELECT count(*) FILTER (WHERE _bad) FROM _ev_typed").fetchall()[0]
    con.execute(f"CREATE OR REPLACE TABLE {scratch_of(con, 'ev')} AS SELECT * EXCLUDE (_bad)"
                " FROM _ev_typed"
                " WHERE NOT _bad ORDER BY rowid")
    con.execute("DROP TABLE _ev_typed")
    if not bad:
        return []
    return [f"partial: {bad:,} event(s) whose `ts` or `dur` is a boolean or a text, not a "
            "number, were skipped"]


def check(con: duckdb.DuckDBPyConnection, files: list[str], extra: str = "") -> list[str]:
    """After the parse into `ev`: take out the events whose times were not numbers (when a
    sign says there may be some); the problems to report. Staged pipes cannot be read twice:
    then nothing is checked."""
    if not all(os.path.isfile(f) for f in files) or not suspect(con, files):
        return []
    return retype(con, files, extra)

"""What an nsys SQLite export holds: schema version, tables and their columns.

Tables exist only when their data was collected (formats.md): an absent table means "not
collected", never zero rows. Columns differ between schema versions (3.1 … 3.25: `shortName`,
`mangledName`, `greenContextId`, NVTX `textId`, sync `deprecatedSyncType`, …), so every query is
built from the columns this file actually has.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field
from pathlib import Path

from crossview.errors import InputError

SQLITE_MAGIC = b"SQLite format 3\x00"
# tables that only an nsys export has; one of them is enough to call it an nsys export
NSYS_MARKERS = ("META_DATA_EXPORT", "EXPORT_META_DATA", "TARGET_INFO_SESSION_START_TIME",
                "ThreadNames", "CUPTI_ACTIVITY_KIND_RUNTIME", "CUPTI_ACTIVITY_KIND_KERNEL",
                "NVTX_EVENTS", "COMPOSITE_EVENTS", "ANALYSIS_DETAILS")
KERNEL = "CUPTI_ACTIVITY_KIND_KERNEL"
RUNTIME = "CUPTI_ACTIVITY_KIND_RUNTIME"
MEMCPY = "CUPTI_ACTIVITY_KIND_MEMCPY"
MEMSET = "CUPTI_ACTIVITY_KIND_MEMSET"
SYNC = "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION"
CUPTI_TABLES = (KERNEL, RUNTIME, MEMCPY, MEMSET, SYNC)
NVTX = "NVTX_EVENTS"
OSRT = "OSRT_API"
SAMPLES = "COMPOSITE_EVENTS"
CALLCHAINS = "SAMPLING_CALLCHAINS"
GPU_INFO = "TARGET_INFO_GPU"
# schema versions this reader was written against (formats.md, real files 3.16.1 … 3.25.0)
SUPPORTED_MAJOR = 3
MAX_TESTED_MINOR = 25


@dataclass
class Probe:
    tables: dict[str, list[str]]  # table → its column names
    version: str | None  # EXPORT_SCHEMA_VERSION, e.g. "3.17.1"
    product: str | None  # EXPORT_PRODUCT_VERSION, e.g. "2025.1.1.110"
    notes: list[str] = field(default_factory=list)
    # views in the file: never queried (see `probe`), said as a problem of the artifact
    views: list[str] = field(default_factory=list)

    def has(self, table: str) -> bool:
        return table in self.tables

    def cols(self, table: str) -> list[str]:
        return self.tables.get(table, [])

    def col(self, table: str, *names: str) -> str | None:
        """The first of ``names`` that ``table`` has (schema versions rename columns)."""
        have = self.tables.get(table, [])
        return next((n for n in names if n in have), None)


# SQLite checks each b-tree page's cells as it reads them (no separate pass over the file)
CHECK_PAGES = "PRAGMA cell_size_check = ON"


def connect(path: Path) -> sqlite3.Connection:
    """Read-only, immutable: never writes a journal next to the user's file. Pages are
    checked as they are read (CHECK_PAGES): a corrupt or truncated file fails while it is
    fetched, and the reader turns that into one error line naming the file."""
    uri = f"file:{path.resolve().as_posix()}?mode=ro&immutable=1"
    try:
        con = sqlite3.connect(uri, uri=True, check_same_thread=False)
        con.execute(CHECK_PAGES)
        return con
    except sqlite3.Error as e:
        raise InputError(path, f"cannot open as SQLite: {e}") from None


def table_names(con: sqlite3.Connection) -> tuple[list[str], list[str]]:
    """(tables, views) of an open export. Only tables are ever queried: nsys writes no view,
    and a view can recurse without end (`WITH RECURSIVE` with no stop: a query that never
    returns), so a view — whatever its name — is found here, before any query reads it."""
    rows = con.execute("SELECT name, type FROM sqlite_master WHERE type IN ('table', 'view')"
                       ).fetchall()
    return ([str(n) for n, t in rows if t == "table"], [str(n) for n, t in rows if t == "view"])


def probe(path: Path, con: sqlite3.Connection) -> Probe:
    try:
        names, views = table_names(con)
    except sqlite3.DatabaseError as e:
        raise InputError(path, f"corrupt SQLite file: {e}") from None
    if not any(m in names for m in NSYS_MARKERS):
        raise InputError(
            path, "SQLite database is not an Nsight Systems export (none of its tables: "
            + ", ".join(NSYS_MARKERS[:3]) + ", …)", "unsupported")
    if "StringIds" in views:
        raise InputError(path, "Nsight Systems export whose StringIds is a view, not a table "
                         "(an edited export; a view can run without end): refused unread")
    if "StringIds" not in names:
        raise InputError(
            path, "Nsight Systems export lacks the StringIds table, so no kernel, API or "
            "range name can be resolved: re-export with `nsys export --type sqlite`")
    tables: dict[str, list[str]] = {}
    try:
        for t in names:
            tables[t] = [r[1] for r in con.execute(f'PRAGMA table_info("{t}")')]
    except sqlite3.DatabaseError as e:
        raise InputError(path, f"corrupt SQLite file: {e}") from None
    meta = _meta(con, tables)
    version = meta.get("EXPORT_SCHEMA_VERSION")
    p = Probe(tables, version, meta.get("EXPORT_PRODUCT_VERSION"), views=views)
    if version is None:
        p.notes.append("export schema version not recorded (no META_DATA_EXPORT / "
                       "EXPORT_META_DATA): read by column names")
    else:
        try:
            major, minor = (int(x) for x in version.split(".")[:2])
        except ValueError:
            major, minor = -1, -1
        if major != SUPPORTED_MAJOR or minor > MAX_TESTED_MINOR:
            p.notes.append(f"export schema {version} is outside the tested 3.1–3.25: read by "
                           "column names, check the numbers")
    return p


def _meta(con: sqlite3.Connection, tables: dict[str, list[str]]) -> dict[str, str]:
    # ≥ 2024: META_DATA_EXPORT(name, value); older: EXPORT_META_DATA(name, value)
    for t in ("META_DATA_EXPORT", "EXPORT_META_DATA"):
        cols = tables.get(t, [])
        if "name" in cols and "value" in cols:
            try:
                return {str(k): str(v) for k, v in con.execute(f"SELECT name, value FROM {t}")}
            except sqlite3.DatabaseError:
                return {}
    return {}

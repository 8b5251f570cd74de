"""An nsys table fetched on the second core while the reader works on another.

SQLite hands out a table's rows on one thread, and most of the host phase (nesting in Python,
DuckDB's checkpoint) runs on one thread too: on two cores, the kernel table can come through
the ADBC driver (sources/nsys/native.py) while the host events are nested and inserted. The
fetch runs on its own ADBC connection and DuckDB cursor into a scratch table of the
compressed store (`Store.scratch`: a second cursor cannot see temp tables; a checkpoint
leaves it alone), with the same SELECT as `fetch.stage`.

Only when it can pay and fits: the native driver is in use, DuckDB has two threads or more,
and the staged table (rows · columns · 8 bytes) stays under `nsys_prefetch_max_mib`, since it
is held beside the host phase's peak (the 5 M-kernel export would stage 440 MB there). Any
failure leaves the table to the reader's own fetch, which then reads it as before.
"""

from __future__ import annotations

import contextvars
import sqlite3
import threading
from dataclasses import dataclass, field
from pathlib import Path

import duckdb

from crossview.knowledge.thresholds import defaults
from crossview.sources.nsys import fetch, native
from crossview.store.store import Store, cursor_of

MIB = 1 << 20
MIN_THREADS = 2  # DuckDB threads below this: the fetch would only take turns with the rest


@dataclass
class Prefetch:
    table: str  # the SQLite table
    dest: str  # the qualified scratch table it goes to
    thread: threading.Thread
    rows: list[int | None] = field(default_factory=list)  # the thread's result
    taken: bool = False

    def take(self, duck: duckdb.DuckDBPyConnection) -> tuple[str, int] | None:
        """(scratch table, rows) once the fetch is done; None when it failed (its table
        dropped: the caller fetches the rows itself)."""
        self.thread.join()
        n = self.rows[0] if self.rows else None
        if n is None:
            duck.execute(f"DROP TABLE IF EXISTS {self.dest}")
            return None
        self.taken = True
        return self.dest, n

    def close(self, duck: duckdb.DuckDBPyConnection) -> None:
        """Wait for the thread; drop its table unless taken (the reader stopped early)."""
        self.thread.join()
        if not self.taken:
            duck.execute(f"DROP TABLE IF EXISTS {self.dest}")


def start(path: Path, src: sqlite3.Connection, store: Store, table: str, dest: str,
          ints: dict[str, str]) -> Prefetch | None:
    """Start fetching `table` (integer columns `ints`, as for `fetch.stage`) into scratch
    table `dest` on a second thread; None when not worth it or not possible here."""
    duck = store.con
    if native.current() is None or not store.compressed:
        return None
    if int(duck.execute("SELECT current_setting('threads')").fetchall()[0][0]) < MIN_THREADS:
        return None
    ints, _ = fetch.timed_ints(ints)
    try:
        fetch.compile_check(src, table, ints)  # a failure: the reader's fetch reports it
        (hi,) = src.execute(f'SELECT max(rowid) FROM "{table}"').fetchone()  # b-tree end
    except sqlite3.Error:
        return None
    if hi is None or int(hi) * len(ints) * 8 > defaults().nsys_prefetch_max_mib * MIB:
        return None
    con = native.connect(path)
    if con is None:
        return None
    qualified = store.scratch(dest)
    cur = cursor_of(duck)
    fetch.create(cur, qualified, ints)
    pf = Prefetch(table, qualified, threading.Thread(target=lambda: None))

    def work() -> None:
        try:
            pf.rows.append(fetch.native_fetch(con, cur, table, qualified, ints))
        except Exception:  # noqa: BLE001 — any failure: the reader fetches the table itself
            pf.rows.append(None)
        finally:
            cur.close()
            con.close()

    ctx = contextvars.copy_context()
    pf.thread = threading.Thread(target=ctx.run, args=(work,), name=f"nsys-{dest}",
                                 daemon=True)
    pf.thread.start()
    return pf

"""The embedded DuckDB store holding the normalized tables."""

from __future__ import annotations

import contextlib
import os
import re
import tempfile
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa

from crossview import identity
from crossview.errors import UsageError
from crossview.knowledge import thresholds
from crossview.store import connect_ahead, memory
from crossview.store.connect_ahead import default_async_threads as default_async_threads
from crossview.store.connect_ahead import default_threads as default_threads
from crossview.store.schema import TABLES

COMPRESSED_DB = "cv"
# DuckDB's row group (its default row_group_size). A reader that inserts and compacts in
# batches makes each batch a whole number of row groups: a checkpoint after a batch that
# ends mid-group compresses that group again after the next batch (1 M nsys kernels in
# batches of 262,144 rows: 2.3× the checkpoint CPU time of batches of 245,760).
ROW_GROUP_ROWS = 122_880
# the connection's own in-memory catalog, never compressed: a compressed store puts a
# reader's scratch tables here (Store.scratch), where a checkpoint does not compress them
SCRATCH_DB = "memory"
# DuckDB's write volume past which it checkpoints on its own: out of reach (Store.held_checkpoints)
_NO_AUTO_CHECKPOINT = "1000000GB"
# a compressed store's connections find a table in cv first, then in the scratch catalog
_SEARCH_PATH = f"SET search_path = '{COMPRESSED_DB}.main,{SCRATCH_DB}.main'"


class Store:
    """One DuckDB connection with the normalized tables created.

    In memory by default; pass a path to keep a bundle's store on disk.
    """

    def __init__(self, path: Path | str | None = None, threads: int | None = None,
                 memory_limit: str | None = None, compress: bool | None = None) -> None:
        """memory_limit: DuckDB's (e.g. "1GB"); default `crossview --memory-limit`
        (CROSSVIEW_MEMORY_LIMIT), else store/memory.py's share of the usable memory. Past it
        the store spills to its temp folder.
        compress: an in-memory store with DuckDB's storage compression (dictionary, FSST:
        a kernel name repeated on a million rows is kept about once per row group), so a
        GROUP BY name scans dictionary vectors: the MCP server's stores, queried many times
        after one read, and any large nsys export (5 M kernels: peak 5.0 → 3.9 GB, same
        JSON). Default on; CROSSVIEW_STORE_COMPRESS=0 turns it off."""
        config = connect_ahead.config(threads)
        # an in-memory store takes the connection the CLI opened ahead, if it matches (0912)
        self.con = (None if path else connect_ahead.take(config)) or duckdb.connect(
            str(path) if path else ":memory:", config=config)
        self.filtered_forms = False  # the named views' filtered forms exist (store/stdlib)
        self._deferred = _Deferred()
        if compress is None:
            compress = os.environ.get("CROSSVIEW_STORE_COMPRESS", "1") != "0"
        self._compressed = bool(compress and not path)
        if self._compressed:
            self.con.execute(f"ATTACH ':memory:' AS {COMPRESSED_DB} (COMPRESS)")
            self.con.execute(f"USE {COMPRESSED_DB}")
            self.con.execute(_SEARCH_PATH)
        # DuckDB prints its own progress bar to stdout on queries > 2 s, even when stdout
        # is a pipe: it would corrupt `--format json` output and ingest reports
        self.con.execute("SET enable_progress_bar=false")
        # spill files (past a memory_limit) go to the system temp folder, never to a `.tmp`
        # folder in the user's working directory (DuckDB's default for in-memory databases)
        self.con.execute(f"SET temp_directory={_quote(spill_dir())}")
        # given, else CROSSVIEW_MEMORY_LIMIT, else a share of what this process may use
        # (RAM, cgroup, ulimit -v: store/memory.py), never DuckDB's 80% of RAM
        limit = memory.limit_text(memory_limit)
        try:
            self.con.execute(f"SET memory_limit={_quote(limit)}")
        except duckdb.Error as e:
            origin = "memory_limit" if memory_limit else memory.ENV
            raise UsageError(f"{origin}={limit!r}: {e}") from None
        for name, cols in TABLES.items():
            self.con.execute(f"CREATE TABLE IF NOT EXISTS {name} ({cols})")
        identity.register(self.con)  # frame_key(name) in SQL: frames matched across runs
        self._next_artifact = 0
        self._next_node = 0
        self._next_op = 0
        self._compacted_rows = 0  # op rows at the last compaction

    def cursor(self) -> Store:
        """Another connection to the same database: the same tables, its own temp views
        (a filter's f_gpu / f_host), so two scopes over one read do not disturb each other."""
        other = object.__new__(Store)
        other.con = cursor_of(self.con)
        other.con.execute("SET enable_progress_bar=false")  # a per-connection setting
        other._compressed = self._compressed
        other._next_artifact = self._next_artifact
        other._next_node = self._next_node
        other._next_op = self._next_op
        other._compacted_rows = self._compacted_rows
        other.filtered_forms = False  # temp views: each connection makes its own
        other._deferred = _Deferred()
        return other

    def defer(self, names: Iterable[str], define: Callable[[], None]) -> None:
        """Names this connection defines when a statement first names one: `Store.sql` runs
        `define` (which defines them all) before such a statement. The named views and their
        filtered forms are made so (store/stdlib): a first analyze names 2 of their 22
        (decision 0847)."""
        self._deferred.add(names, define)

    def define_deferred(self, query: str | None = None) -> None:
        """Define the deferred names `query` names, or all of them (None): before a statement
        that does not go through `sql` (the MCP query tool's)."""
        self._deferred.define(query)

    @property
    def compressed(self) -> bool:
        return self._compressed

    def compact(self) -> None:
        """Compress what was inserted (a compressed store only; else nothing): DuckDB
        compresses in-memory row groups at a checkpoint, so until then the rows appended by
        a reader stay as written (1 M nsys kernels: 616 MB of table memory → 27 MB, and a
        GROUP BY name 270 → 9 ms, measured in bench/README.md).
        While host_ops and gpu_ops hold at most `store_bitpack_rows` rows together, integer
        columns are not bit-packed (RLE and constant still apply; strings are compressed
        as always): packing them is most of the checkpoint's cost and saves memory that
        matters only at millions of rows (docs/decisions/0701)."""
        if not self._compressed:
            return

        rows = self._op_rows()
        small = rows <= thresholds.defaults().store_bitpack_rows
        if small:
            self.con.execute("SET disabled_compression_methods = 'bitpacking'")
        try:
            self.con.execute(f"CHECKPOINT {COMPRESSED_DB}")
        finally:
            if small:
                self.con.execute("RESET disabled_compression_methods")
        self._compacted_rows = rows

    def _op_rows(self) -> int:
        return int(self.con.execute("SELECT (SELECT count(*) FROM host_ops)"
                                    " + (SELECT count(*) FROM gpu_ops)").fetchall()[0][0])

    @contextlib.contextmanager
    def held_checkpoints(self) -> Iterator[None]:
        """A read that compacts at its end (a compressed store; else nothing changes): no
        checkpoint starts on DuckDB's own ~16 MB write trigger inside. Such a checkpoint
        fired mid-way through a Kineto read, compressed its parsed events just before they
        were dropped, packed bits `compact` leaves unpacked on a small capture and made the
        190 MB read ~0.2 s slower (decision 0903). At the end: a compaction once
        `store_compact_after_rows` op rows came in since the last one (a small file waits
        for the analysis' compaction). Not for nsys: it compacts batch by batch already."""
        if not self._compressed:
            yield
            return
        self.con.execute(f"SET checkpoint_threshold = {_quote(_NO_AUTO_CHECKPOINT)}")
        try:
            yield
        finally:
            self.con.execute("RESET checkpoint_threshold")
        if self._op_rows() - self._compacted_rows >= \
                thresholds.defaults().store_compact_after_rows:
            self.compact()

    def scratch(self, table: str) -> str:
        """The qualified name for a reader's staging table that a second cursor must see
        (a TEMP table it cannot): outside the compressed catalog, so `compact()` does not
        compress rows that are dropped right after the read (5 M nsys host events: the first
        checkpoint compressed `_host` and `_nestres` too, 4 of its 5 s). Found unqualified
        by every connection of the store."""
        return f"{SCRATCH_DB}.main.{table}" if self._compressed else table

    # id allocation keeps ids unique across artifacts in one store
    def new_artifact_id(self) -> int:
        self._next_artifact += 1
        return self._next_artifact

    def reserve_nodes(self, n: int) -> int:
        base = self._next_node
        self._next_node += n
        return base

    def reserve_ops(self, n: int) -> int:
        base = self._next_op
        self._next_op += n
        return base

    def discard(self, artifact_id: int) -> None:
        """Remove whatever rows a failed read left for this artifact."""
        for table in ("devices", "gpu_ops", "host_ops", "samples", "summary_stats",
                      "op_args"):
            self.con.execute(f"DELETE FROM {table} WHERE artifact_id = ?", [artifact_id])

    def append(self, table: str, data: pa.Table) -> None:
        """Append an Arrow table whose columns are a subset of ``table``'s, by name."""
        if data.num_rows == 0:
            return
        self.con.register("_append_src", data)
        try:
            cols = ", ".join(f'"{c}"' for c in data.column_names)
            self.con.execute(f"INSERT INTO {table} ({cols}) SELECT {cols} FROM _append_src")
        finally:
            self.con.unregister("_append_src")

    def add_artifact(self, **row: Any) -> None:
        # the table's status says whether views read the artifact's rows: a partial one's
        # rows are read (its ArtifactReport keeps "partial", shown in recap/JSON/inventory)
        if row.get("status") == "partial":
            row["status"] = "ok"
        if isinstance(row.get("path"), str):  # a non-UTF-8 file name (surrogate escapes)
            row["path"] = row["path"].encode("utf-8", "backslashreplace").decode("utf-8")
        cols = list(row)
        marks = ", ".join("?" for _ in cols)
        self.con.execute(
            f"INSERT INTO artifacts ({', '.join(cols)}) VALUES ({marks})", [row[c] for c in cols]
        )

    def sql(self, query: str, params: Sequence[object] | Mapping[str, object] | None = None
            ) -> duckdb.DuckDBPyConnection:
        if self._deferred:
            self._deferred.define(query)
        return self.con.execute(query, params or [])

    def scoped_relation(self, name: str, query: str,
                        params: Mapping[str, object] | None = None) -> None:
        """(Re)define a filtered slice (f_host, f_samples…): a view when it needs no
        parameters (no copy), else a temp table materialized with them."""
        self.sql(f"DROP VIEW IF EXISTS {name}")
        self.sql(f"DROP TABLE IF EXISTS {name}")
        if params:
            self.sql(f"CREATE TEMP TABLE {name} AS {query}", params)
        else:
            self.sql(f"CREATE TEMP VIEW {name} AS {query}")

    def close(self) -> None:
        self.con.close()


class _Deferred:
    """A connection's deferred names: each with the call that defines its group."""

    def __init__(self) -> None:
        self._define: dict[str, Callable[[], None]] = {}
        self._named: re.Pattern[str] | None = None

    def __bool__(self) -> bool:
        return bool(self._define)

    def add(self, names: Iterable[str], define: Callable[[], None]) -> None:
        self._define.update(dict.fromkeys((n.lower() for n in names), define))
        self._named = None

    def define(self, query: str | None) -> None:
        if query is None:
            hits = list(self._define)
        else:
            if self._named is None:  # whole words, longest first; SQL names ignore case
                alts = "|".join(map(re.escape, sorted(self._define, key=len, reverse=True)))
                self._named = re.compile(rf"\b(?:{alts})\b", re.IGNORECASE)
            hits = [m.lower() for m in self._named.findall(query)]
        for name in hits:
            define = self._define.get(name)
            if define is None:  # defined with an earlier name of its group
                continue
            define()
            # the pattern still names the defined ones: each is found and skipped above
            self._define = {n: d for n, d in self._define.items() if d is not define}


def _has_compressed(con: duckdb.DuckDBPyConnection) -> bool:
    return bool(con.execute("SELECT count(*) FROM duckdb_databases() WHERE database_name = $d",
                            {"d": COMPRESSED_DB}).fetchall()[0][0])


def scratch_of(con: duckdb.DuckDBPyConnection, table: str) -> str:
    """`Store.scratch` for a reader that holds only the store's connection: a staging table
    named so is found unqualified (search path) and left out of every checkpoint — DuckDB
    checkpoints on its own once ~16 MB are written, and a checkpoint that compresses the
    parsed events `ev` just before they are dropped cost the V100 DDP read ~0.1 s and the
    190 MB one ~0.2 s (decision 0903)."""
    return f"{SCRATCH_DB}.main.{table}" if _has_compressed(con) else table


def cursor_of(con: duckdb.DuckDBPyConnection) -> duckdb.DuckDBPyConnection:
    """A second connection on `con`'s database that sees the same tables: DuckDB starts a
    cursor on the default catalog, not on the compressed one the store switched to with USE.
    Runs nothing on `con` itself (readers call this from a second thread while `con` works)."""
    cur = con.cursor()
    if _has_compressed(cur):
        cur.execute(f"USE {COMPRESSED_DB}")
        cur.execute(_SEARCH_PATH)
    return cur


def spill_dir() -> str:
    """This process's DuckDB spill folder (past a memory limit)."""
    return os.path.join(tempfile.gettempdir(), f"crossview-duckdb-{os.getpid()}")


def _quote(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


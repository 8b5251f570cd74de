"""Open a lake for querying: each table becomes a DuckDB view over its Parquet files.

Only files listed in the manifest are read (the manifest is the commit log), filtered by
campaign/run before any file is opened. The views project exactly the columns of
store/schema.py TABLES, so every existing view and detector runs unchanged; a column a
file predates (the schema grew) reads as NULL. Small metadata tables that a command may
update (`artifacts`, `devices`, `profiled_kernels`: `--gpu` names devices) are loaded as
tables; everything else stays in Parquet and DuckDB streams it per query.
"""

from __future__ import annotations

from pathlib import Path

from crossview.errors import InputError, UsageError
from crossview.lake import manifest
from crossview.lake.columns import columns
from crossview.sources import artifact_report
from crossview.store.schema import TABLES
from crossview.store.store import Store

LOADED = frozenset({"artifacts", "devices", "profiled_kernels"})


def _q(s: str) -> str:
    return "'" + s.replace("'", "''") + "'"


def selected(lake: Path, campaign: str | None, run: str | None) -> list[manifest.Entry]:
    if not (lake / manifest.MANIFEST).exists():
        raise InputError(lake, f"not a crossview lake (no {manifest.MANIFEST}): "
                         "create one with `crossview ingest PATH… --lake DIR`")
    entries = manifest.read(lake)
    chosen = manifest.select(entries, campaign, run)
    if not chosen:
        have = sorted({f"campaign={e.campaign} run={e.run}" for e in entries})
        want = " ".join(f"{k}={v}" for k, v in (("campaign", campaign), ("run", run)) if v)
        raise UsageError(f"{lake}: no artifacts for {want or 'this lake'}"
                         + (f" (the lake holds: {', '.join(have)})" if have else ""))
    return chosen


def attach(store: Store, lake: Path, campaign: str | None = None,
           run: str | None = None) -> list[manifest.Entry]:
    """Replace the store's (empty) tables by views over the lake's selected files."""
    chosen = selected(lake, campaign, run)
    for table in TABLES:
        files = [str(lake / e.files[table]) for e in chosen if table in e.files]
        if not files:
            continue  # keep the empty table: nothing of this kind was ingested
        src = (f"read_parquet([{', '.join(map(_q, files))}], hive_partitioning=true, "
               "hive_types_autocast=false, union_by_name=true)")
        have = {r[0] for r in store.sql(f"DESCRIBE SELECT * FROM {src}").fetchall()}
        cols = ", ".join(f'"{c}"' if c in have else f'CAST(NULL AS {t}) AS "{c}"'
                         for c, t in columns(table))
        store.sql(f"DROP TABLE {table}")
        if table in LOADED:
            store.sql(f"CREATE TABLE {table} AS SELECT {cols} FROM {src}")
        else:
            store.sql(f"CREATE VIEW {table} AS SELECT {cols} FROM {src}")
    return chosen


def open_lake(lake: Path | str, campaign: str | None = None,
              run: str | None = None) -> Store:
    """A store whose tables are views over a Parquet perf-lake instead of loaded tables."""
    store = Store()
    attach(store, Path(lake), campaign, run)
    return store


# what `analyze` reports per artifact, from the lake's artifacts rows
reports = artifact_report.stored

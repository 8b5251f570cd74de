"""The Parquet perf-lake: many captures as partitioned Parquet, queried through DuckDB views.

`ingest` writes each artifact's normalized tables (store/schema.py) under
``DIR/<table>/campaign=<c>/run=<r>/source=<kind>/<sha256>.parquet`` and commits it by one line
in ``DIR/manifest.jsonl``; `query.open_lake` reads them back as views.
"""

"""Reader entry for ncu CSV exports: sniff, then the details (long) or raw (wide) layout."""

from __future__ import annotations

from pathlib import Path

from crossview.errors import InputError
from crossview.sources.artifact_report import ArtifactReport
from crossview.sources.ncu import csv_details, csv_raw, ingest
from crossview.sources.ncu.csv_common import header_line, load, problems_of
from crossview.store.store import Store

KIND = "ncu-csv"


def sniff(head: bytes, path: Path) -> bool:
    return header_line(head.decode("utf-8", "replace")) is not None


def read(path: Path, store: Store) -> ArtifactReport:
    path = Path(path)
    table = load(path)
    details = "Metric Name" in table.header
    recs = (csv_details if details else csv_raw).records(table, path)
    problems = problems_of(table)
    if not recs:
        cut = " (its only row was cut: truncated file)" if table.cut else ""
        raise InputError(path, "no kernel rows: the ncu CSV has its header but no profiled "
                         f"kernel{cut}; did ncu match any kernel (--kernel-name, "
                         "--launch-skip, --launch-count)?", "empty")
    return ingest.write(store, path, KIND, recs, problems)

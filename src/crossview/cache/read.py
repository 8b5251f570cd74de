"""The readers' `read_all` through the capture cache: a hit loads the stored tables (no
parse); a miss reads as always and keeps the store for the next call, written beside the
analysis on a second thread (DuckDB copies without the GIL) and finished before the process
exits (`finish_writes`)."""

from __future__ import annotations

import copy
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from crossview.cache import entry
from crossview.cache.key import Key, key_of
from crossview.cache.settings import CacheSettings
from crossview.sources.artifact_report import ArtifactReport
from crossview.sources.registry import read_all
from crossview.store.store import Store

# hit: loaded from the cache; miss: read (and kept when it could be); off: no cache;
# uncacheable: an input the cache does not take (an archive, a refused or missing file)
State = Literal["hit", "miss", "off", "uncacheable"]
# statuses a kept read may hold: what a reader reports the same way on the same bytes
_KEPT = frozenset({"ok", "partial", "skipped"})
# tables whose rows say how large a store is (the entry-rows bound)
_BIG = ("host_ops", "gpu_ops", "samples", "metrics")
_PENDING: list[threading.Thread] = []
_LOCK = threading.Lock()


@dataclass
class Read:
    reports: list[ArtifactReport]
    state: State
    key: str | None = None


def read_inputs(paths: list[Path], store: Store, settings: CacheSettings | None,
                hashes: dict[str, str] | None = None, compact: bool = False,
                wait: bool = False) -> Read:
    """Read `paths` into the (empty) store, through the cache when `settings` is given.
    compact: compress the rows a miss read (Store.compact) before they are kept; wait: write
    the entry before returning (else on a second thread). hashes: sha256 by file already
    known (the MCP server's)."""
    if settings is None:
        return Read(_read(paths, store, compact), "off")
    key = key_of(paths, hashes, settings.folder / "hashes")
    if key is None:
        return Read(_read(paths, store, compact), "uncacheable")
    reports = entry.open_entry(store, settings.folder, key.digest)
    if reports is not None:
        return Read(reports, "hit", key.digest)
    reports = _read(paths, store, compact)
    if all(r.status in _KEPT for r in reports):
        _keep(store, settings, key, reports, wait)
    return Read(reports, "miss", key.digest)


def _read(paths: list[Path], store: Store, compact: bool) -> list[ArtifactReport]:
    reports = read_all(paths, store)
    if compact:
        store.compact()
    return reports


def _keep(store: Store, settings: CacheSettings, key: Key, reports: list[ArtifactReport],
          wait: bool) -> None:
    try:
        snap = entry.Snapshot(store, settings.folder, key.digest)  # the store as read, now
    except Exception:  # noqa: BLE001 — no cache folder, no disk: no entry, the read stands
        return
    if sum(snap.rows.get(t, 0) for t in _BIG) > settings.max_entry_rows:
        snap.close()
        return

    # the reports as read, now: the caller may change its own (scope/runs.set_apart marks
    # other runs) while the entry is still being written
    as_read = copy.deepcopy(reports)

    def write() -> None:
        kept = entry.write_entry(snap, as_read, settings.max_entry_bytes)
        if kept is not None:
            entry.evict(settings.folder, settings.max_bytes, settings.max_age_s, keep=kept)

    if wait:
        write()
        return
    t = threading.Thread(target=write, name="crossview-cache-write")
    with _LOCK:
        _PENDING.append(t)
    t.start()


def finish_writes() -> None:
    """Wait for the entries still being written (before a process ends at once)."""
    with _LOCK:
        pending, _PENDING[:] = list(_PENDING), []
    for t in pending:
        t.join()

"""One cache entry on disk: a DuckDB database holding the store's tables as read, plus one
row of metadata (its key, the readers' reports, the store's id counters).

Written beside its final place under a temporary name and renamed when complete, so a
reader never sees half an entry and two processes writing the same key each rename a whole
one. The entry's name carries the sha256 of its bytes: an entry whose bytes do not hash to
its name (torn, truncated, edited) or whose metadata, tables or row counts do not match is
removed and the capture read again — never trusted. The names carry `.crossview.` so a
folder walk never reads an entry as a capture (sources/outputs.py).

A hit attaches the entry read-only: the tables a command may update (`--gpu` names devices)
are copied into the store, the others become views over the entry (no copy). Least recently
used entries go first when the folder passes its bound (a hit touches its entry's mtime).
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import secrets
import time
from pathlib import Path

from crossview.cache.key import ANSWER_SUFFIX, ANSWERS, FORMAT, file_sha256
from crossview.sources.artifact_report import ArtifactReport
from crossview.store.schema import TABLES
from crossview.store.store import Store, cursor_of

STORES = "stores"
META = "_crossview_cache"
SUFFIX = ".crossview.duckdb"
# tables a command may change after the read (ncu device names): copied, not viewed
COPIED = frozenset({"artifacts", "devices", "profiled_kernels"})
# a writer's temporary file older than this was left by a killed process
_STALE_TMP_S = 3600.0
_alias = itertools.count()


def _q(text: str | Path) -> str:
    return "'" + str(text).replace("'", "''") + "'"



def _entries(folder: Path) -> list[Path]:
    try:
        names = os.listdir(folder / STORES)
    except OSError:
        return []
    return [folder / STORES / n for n in names if n.endswith(SUFFIX) and not n.startswith(".")]


def find(folder: Path, key: str) -> list[Path]:
    """The entries of `key`, newest first (two writers of one key may both have renamed)."""
    found = []
    for p in _entries(folder):
        if p.name.startswith(key + "."):
            with contextlib.suppress(OSError):
                found.append((p.stat().st_mtime_ns, p))
    return [p for _, p in sorted(found, reverse=True)]


def _remove(path: Path) -> None:
    for p in (path, path.with_name(path.name + ".wal")):
        with contextlib.suppress(OSError):
            p.unlink()


class Corrupt(Exception):
    """An entry that must not be used (it is removed)."""


def open_entry(store: Store, folder: Path, key: str) -> list[ArtifactReport] | None:
    """Load `key`'s entry into the (empty) store; None on a miss. A bad entry is removed."""
    for path in find(folder, key):
        try:
            reports = _attach(store, path, key)
        except Corrupt:
            _remove(path)
            continue
        with contextlib.suppress(OSError):
            os.utime(path)  # least recently used goes first
        return reports
    return None


def _attach(store: Store, path: Path, key: str) -> list[ArtifactReport]:
    stem = path.name[: -len(SUFFIX)]
    try:
        if not stem.endswith("." + file_sha256(path)[:16]):
            raise Corrupt("content does not match its name")
    except OSError as e:
        raise Corrupt(str(e)) from None
    alias = f"crossview_cache_{next(_alias)}"
    try:
        store.sql(f"ATTACH {_q(path)} AS {alias} (READ_ONLY)")
    except Exception as e:  # noqa: BLE001 — whatever DuckDB says of a bad file: not used
        raise Corrupt(str(e)) from None
    try:
        meta = store.sql(f"SELECT key, format, reports, counters, rows FROM {alias}.main.{META}"
                         ).fetchall()
        if len(meta) != 1 or meta[0][0] != key or meta[0][1] != FORMAT:
            raise Corrupt("metadata does not match the key")
        _, _, reports_json, counters_json, rows_json = meta[0]
        rows = json.loads(rows_json)
        have: dict[str, list[tuple[str, str]]] = {}
        for t, c, ty in store.sql(
                "SELECT table_name, column_name, data_type FROM duckdb_columns() WHERE "
                f"database_name = {_q(alias)} AND schema_name = 'main' "
                "ORDER BY table_name, column_index").fetchall():
            have.setdefault(t, []).append((c, ty))
        for t in TABLES:
            if have.get(t) != _columns(store, t):
                raise Corrupt(f"table {t} differs from the store's")
            n = store.sql(f"SELECT count(*) FROM {alias}.main.{t}").fetchall()[0][0]
            if n != rows.get(t):
                raise Corrupt(f"table {t} holds {n} rows, not {rows.get(t)}")
        reports = [ArtifactReport(**r) for r in json.loads(reports_json)]
        counters = json.loads(counters_json)
    except Corrupt:
        _detach(store, alias)
        raise
    except Exception as e:  # noqa: BLE001 — a damaged entry in any way: not used
        _detach(store, alias)
        raise Corrupt(str(e)) from None
    for t in TABLES:
        if t in COPIED:
            store.sql(f"INSERT INTO {t} SELECT * FROM {alias}.main.{t}")
        else:
            store.sql(f"DROP TABLE {t}")
            store.sql(f"CREATE VIEW {t} AS SELECT * FROM {alias}.main.{t}")
    store._next_artifact, store._next_node, store._next_op = (
        int(counters["artifact"]), int(counters["node"]), int(counters["op"]))
    return reports


def _columns(store: Store, table: str) -> list[tuple[str, str]]:
    return [(c, ty) for c, ty, *_ in store.sql(f"DESCRIBE {table}").fetchall()]


def _detach(store: Store, alias: str) -> None:
    with contextlib.suppress(Exception):
        store.sql(f"DETACH {alias}")


class Snapshot:
    """The store as read, held for a writer: a second connection with its new entry file
    attached and a transaction begun (every table read once) before the analysis goes on,
    so what it copies later is the read, whatever the analysis changes meanwhile (`--gpu`
    names devices in the store)."""

    def __init__(self, store: Store, folder: Path, key: str) -> None:
        self.key = key
        self.stores = folder / STORES
        self.tmp = self.stores / f".{key}.{os.getpid()}.{secrets.token_hex(4)}.tmp{SUFFIX}"
        self.alias = f"crossview_cache_w{next(_alias)}"
        self.counters = {"artifact": store._next_artifact, "node": store._next_node,
                         "op": store._next_op}
        self.stores.mkdir(parents=True, exist_ok=True)
        self.cur = cursor_of(store.con)
        self.cur.execute(f"ATTACH {_q(self.tmp)} AS {self.alias}")
        self.cur.execute("BEGIN TRANSACTION")
        self.rows = {t: int(self.cur.execute(f"SELECT count(*) FROM {t}").fetchall()[0][0])
                     for t in TABLES}

    def close(self) -> None:
        """Give up: nothing is written."""
        with contextlib.suppress(Exception):
            self.cur.execute("ROLLBACK")
        with contextlib.suppress(Exception):
            self.cur.execute(f"DETACH {self.alias}")
        with contextlib.suppress(Exception):
            self.cur.close()
        _remove(self.tmp)


def write_entry(snap: Snapshot, reports: list[ArtifactReport], max_bytes: int) -> Path | None:
    """Copy the snapshot's tables into its entry (a temp file, then renamed); None when it
    could not be written or came out larger than max_bytes."""
    cur, alias, tmp = snap.cur, snap.alias, snap.tmp
    try:
        for t in TABLES:
            cur.execute(f"CREATE TABLE {alias}.main.{t} AS SELECT * FROM {t}")
        cur.execute(f"CREATE TABLE {alias}.main.{META} (key VARCHAR, format INTEGER, "
                    "reports VARCHAR, counters VARCHAR, rows VARCHAR)")
        cur.execute(f"INSERT INTO {alias}.main.{META} VALUES (?, ?, ?, ?, ?)",
                    [snap.key, FORMAT, json.dumps([_report(r) for r in reports]),
                     json.dumps(snap.counters), json.dumps(snap.rows)])
        cur.execute("COMMIT")
        # written through now: a DETACH while another query of this database still holds the
        # attached file closes it (and checkpoints) only when that query lets go — after the
        # name was hashed, so the entry would not match its name (test_cache concurrency)
        cur.execute(f"FORCE CHECKPOINT {alias}")
        cur.execute(f"DETACH {alias}")
        if tmp.stat().st_size > max_bytes:
            _remove(tmp)
            return None
        final = snap.stores / f"{snap.key}.{file_sha256(tmp)[:16]}{SUFFIX}"
        os.replace(tmp, final)
        return final
    except Exception:  # noqa: BLE001 — the cache is an optimization: a failed write is none
        snap.close()
        return None
    finally:
        with contextlib.suppress(Exception):
            cur.close()


def _report(r: ArtifactReport) -> dict[str, object]:
    return {"path": r.path, "kind": r.kind, "status": r.status, "problems": list(r.problems),
            "artifact_id": r.artifact_id, "notes": list(r.notes)}


def evict(folder: Path, max_bytes: int, max_age_s: float, keep: Path | None = None) -> None:
    """Least recently used entries (stores and answers) out until the folder is within
    max_bytes; entries unused for max_age_s and temporary files a killed writer left go too."""
    now = time.time()
    stale = [*(folder / STORES).glob(f".*{SUFFIX}*"), *(folder / ANSWERS).glob(".*.tmp")]
    for p in stale:
        with contextlib.suppress(OSError):
            if now - p.stat().st_mtime > _STALE_TMP_S:
                p.unlink()
    sized = []
    answers = [p for p in (folder / ANSWERS).glob(f"*{ANSWER_SUFFIX}")
               if not p.name.startswith(".")]
    for p in [*_entries(folder), *answers]:
        with contextlib.suppress(OSError):
            st = p.stat()
            sized.append((st.st_mtime, st.st_size, p))
    total = sum(s for _, s, _ in sized)
    for mtime, size, p in sorted(sized):
        if p == keep:
            continue
        if total > max_bytes or now - mtime > max_age_s:
            _remove(p)
            total -= size
    for note in (folder / "hashes").glob("*.json"):
        with contextlib.suppress(OSError):
            if now - note.stat().st_mtime > max_age_s:
                note.unlink()

"""Analyses kept in memory per (paths, filter, gpu): an agent's follow-up calls on the same
scope (hot_traces gpu then cpu, topfunctions, query…) reuse one store instead of re-reading.

Opened captures are kept by content (sha256 of each file; a lake: of its manifest): a file
that changed on disk is read again, and every result's `store` says which it was (`read`,
`cached`, `re-read` with why). A perf-lake folder is opened as views over its Parquet files
(`crossview ingest` once, then any number of calls and server restarts without a parse)."""

from __future__ import annotations

import copy
import hashlib
import threading
from collections import OrderedDict
from dataclasses import asdict
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from crossview.analysis import Analysis, analyze_store
from crossview.cache.read import read_inputs
from crossview.cache.settings import CacheSettings
from crossview.errors import CrossviewError
from crossview.mcp.fingerprint import Hashes, is_lake
from crossview.mcp.safety import Refused, Roots
from crossview.scope.filter import Filter
from crossview.scope.runs import set_apart
from crossview.sources.artifact_report import USABLE, ArtifactReport
from crossview.store.store import Store


class FilterArg(BaseModel):
    """The scope of a call; every field optional (None = all). Echoed back as `filter`."""

    device: int | None = Field(None, description="Only this GPU (device id).")
    stream: int | None = Field(None, description="Only this CUDA/HIP stream.")
    pid: str | None = Field(None, description="Only this host process id.")
    tid: str | None = Field(None, description="Only this host thread id.")
    window_ns: list[int] | None = Field(
        None, description="[start_ns, end_ns) on the trace clock.", min_length=2, max_length=2)
    annotation: str | None = Field(None, description="Only work under this annotation/NVTX.")
    artifact: str | None = Field(None, description="Only this input file (path or name).")
    step: str | None = Field(None, description="Only these steps: 'N' or 'A:B' (ProfilerStep#N "
                             "numbers, else 1-based step index).")

    def to_filter(self) -> Filter:
        w = self.window_ns
        return Filter(device=self.device, stream=self.stream, pid=self.pid, tid=self.tid,
                      window_ns=(int(w[0]), int(w[1])) if w else None,
                      annotation=self.annotation, artifact=self.artifact, step=self.step)


def filter_echo(f: Filter) -> dict[str, Any]:
    """The filter's set fields only ({} = everything): pass it back as `filter`."""
    d = {k: v for k, v in asdict(f).items() if v is not None}
    if "window_ns" in d:
        d["window_ns"] = list(d["window_ns"])
    return d


class Opened:
    """One read of a scope's files (or one opened lake): the store every filter shares.

    `content` is {file: sha256} at read time; a call whose files hash otherwise reads again."""

    def __init__(self, store: Store, reports: list[ArtifactReport],
                 content: dict[str, str]) -> None:
        self.store = store
        self.reports = reports
        self.content = content
        # one DuckDB database: one call at a time; re-entrant so `diff A A` takes it twice
        self.lock = threading.RLock()
        self.users = 0  # cached analyses over this store

    def close(self) -> None:
        self.store.close()


class Entry:
    def __init__(self, analysis: Analysis, paths: list[Path], flt: Filter,
                 opened: Opened | None = None, read: dict[str, Any] | None = None) -> None:
        self.analysis = analysis
        self.paths = paths
        self.filter = flt
        self.opened = opened
        # how this call got its store: {"state": "read" | "cached" | "re-read", ...}
        self.read = read or {"state": "read"}
        self.lock = opened.lock if opened else threading.RLock()
        self.given: list[str] | None = None
        # results of read-only SQL tools by their arguments (topentities): the store does not
        # change under an entry (a changed file makes a new entry), so the answer cannot
        # either; shared by every copy `used` makes
        self.memo: dict[tuple[Any, ...], Any] = {}

    def used(self, read: dict[str, Any], paths: list[str]) -> Entry:
        """This entry as one call sees it: same analysis and lock, this call's `read`,
        echoing `paths` as this call spelled them."""
        e = copy.copy(self)
        e.read = read
        e.given = list(paths)
        return e

    def scope(self) -> dict[str, Any]:
        """What every tool result starts with: pass `paths` + `filter` back to reuse it.
        `paths` as the caller spelled them (a root reached through a symlink stays the
        link); the filter once, set fields only; `resolved` what it selected."""
        v = self.analysis.views
        resolved = v.filter.to_dict() if v else None
        if resolved is not None:
            resolved.pop("requested", None)  # the same as `filter`
        return {
            "paths": list(self.given) if self.given else [str(p) for p in self.paths],
            "filter": filter_echo(self.filter),
            "resolved": resolved,
            "rejected": [{"path": r.path, "problems": r.problems}
                         for r in self.analysis.rejected],
            "store": self.read,
        }


class AnalysisCache:
    """Analyses by (paths, filter, gpu) over stores opened once per (paths, gpu, content).

    A call re-reads only when a file's sha256 changed (fingerprint.py: hashed again only
    when its stat changed) and says so in `store`; another filter on the same files opens a
    new DuckDB connection on the same store (its own f_gpu/f_host), without re-reading."""

    def __init__(self, roots: Roots, size: int = 8,
                 persistent: CacheSettings | None = None) -> None:
        """persistent: the capture cache on disk (crossview.cache): a store opened once by
        any crossview process on the same content is loaded, not parsed."""
        self.roots = roots
        self.size = size
        self.persistent = persistent
        self.hashes = Hashes()
        self._entries: OrderedDict[tuple[Any, ...], Entry] = OrderedDict()
        self._opened: dict[tuple[Any, ...], Opened] = {}
        self._lock = threading.Lock()
        self.reads = 0  # times the server read (parsed) inputs: a bench/test observable

    def _spelled(self, paths: list[str], real: list[Path]) -> list[Path]:
        out = []
        for p, r in zip(paths, real, strict=True):
            given = Path(p).expanduser()
            if not given.is_absolute():
                given = self.roots.roots[0] / given
            out.append(given if given.resolve(strict=False) == r else r)
        return out

    def get(self, paths: list[str], flt: FilterArg | None, gpu: str | None = None) -> Entry:
        asked = paths
        paths, real, refused = self.roots.check_each(paths)  # refused: reported, not read
        f = (flt or FilterArg()).to_filter()
        try:
            content = self.hashes.content(real)
        except OSError as err:
            raise Refused(f"{', '.join(paths)}: cannot read: {err}") from None
        okey = (tuple(map(str, real)), tuple(refused), gpu)
        key = (*okey, f)
        with self._lock:
            hit = self._entries.get(key)
            if hit is not None and hit.opened is not None and hit.opened.content == content:
                self._entries.move_to_end(key)
                return hit.used({"state": "cached", **_short(content)}, asked)
            opened = self._opened.get(okey)
        why = None
        if opened is not None and opened.content != content:
            why = _changed(opened.content, content)
            self._drop(okey)
            opened = None
        state = "cached"  # the store is open: another filter reuses it
        if opened is None:
            # read through the path as given (checked above: its real path is under a root),
            # so artifact paths in results match what the caller and the CLI spell
            opened = self._open(real, self._spelled(paths, real), content)
            opened.reports += [ArtifactReport(shown, "unknown", "refused", [why])
                               for shown, why in refused]
            state = "re-read" if why else "read"
            with self._lock:
                self._opened[okey] = opened
        read: dict[str, Any] = {"state": state, **_short(content)}
        if why:
            read["why"] = why
        with opened.lock:
            cur = opened.store.cursor()
            try:
                result = analyze_store(cur, opened.reports, f, gpu=gpu)
            except CrossviewError as e:
                cur.close()
                raise Refused(str(e)) from None
        if result.views is None:
            cur.close()
            why = "; ".join(f"{r.path}: {'; '.join(r.problems)}" for r in result.rejected)
            raise Refused(why or "no input files found in " + ", ".join(paths))
        entry = Entry(result, real, f, opened, read)
        with self._lock:
            old = self._entries.pop(key, None)
            if old is not None:
                self._release(old)
            self._entries[key] = entry
            opened.users += 1
            while len(self._entries) > self.size:
                _, gone = self._entries.popitem(last=False)
                self._release(gone)
        return entry.used(read, asked)

    def _open(self, real: list[Path], spelled: list[Path], content: dict[str, str]) -> Opened:
        lakes = [p for p in real if is_lake(p)]
        try:
            if lakes:
                if len(real) > 1:
                    raise Refused(f"{lakes[0]}: a perf-lake is one input: pass it alone")
                # lazy: MCP server start-up loads no tool's work (+~1 s measured, decision 0902)
                from crossview.lake.query import open_lake
                from crossview.lake.query import reports as lake_reports

                store = open_lake(lakes[0])
                # the tables stay Parquet files read per query: the query tool switches
                # external access off (safety.run_query), so this lake's folder stays readable
                store.sql(f"SET allowed_directories = ['{_sql_str(lakes[0])}/']")
                reports = lake_reports(store)
            else:
                store = Store(compress=True)  # read once, queried by every later call
                # under the roots (this call's context): key_of hashes and keeps only files
                # inside them; anything else is read as always and refused by its reader
                reports = read_inputs(spelled, store, self.persistent, hashes=content,
                                      compact=True, wait=True).reports
                # one run per recap, decided once per read: every later filter sees the
                # same main run, the captures of others set apart (scope/runs.py)
                if sum(r.status in USABLE for r in reports) > 1:
                    set_apart(store, reports)
        except CrossviewError as e:
            raise Refused(str(e)) from None
        self.reads += 1
        return Opened(store, reports, content)

    def _release(self, entry: Entry) -> None:
        """Called under self._lock: close the entry's connection, and its store when unused."""
        op = entry.opened
        if op is None:
            return
        with op.lock:
            entry.analysis.views.store.close()  # type: ignore[union-attr]
        op.users -= 1
        if op.users <= 0:  # no analysis left on it: the store goes (the LRU's bound)
            for k in [k for k, o in self._opened.items() if o is op]:
                del self._opened[k]
            with op.lock:
                op.close()

    def _drop(self, okey: tuple[Any, ...]) -> None:
        """Forget a store whose files changed: its analyses go, its store closes."""
        with self._lock:
            op = self._opened.pop(okey, None)
            for k in [k for k, e in self._entries.items() if e.opened is op]:
                self._release(self._entries.pop(k))  # the last one closes the store


def _short(content: dict[str, str]) -> dict[str, Any]:
    """One digest over every file's sha256 (16 hex digits: enough to tell versions apart)
    and the file count, so a bundle of many files does not bloat every result."""
    h = hashlib.sha256()
    for f, digest in content.items():
        h.update(f"{f}\0{digest}\n".encode("utf-8", "surrogateescape"))  # non-UTF-8 names
    return {"files": len(content), "content_sha256": h.hexdigest()[:16]}


def _changed(before: dict[str, str], now: dict[str, str]) -> str:
    files = sorted({*before, *now})
    diff = [f for f in files if before.get(f) != now.get(f)]
    parts = []
    for f in diff[:5]:
        if f not in before:
            parts.append(f"{f} is new")
        elif f not in now:
            parts.append(f"{f} is gone")
        else:
            parts.append(f"{f} changed (sha256 {before[f][:12]}… → {now[f][:12]}…)")
    more = f" and {len(diff) - 5} more" if len(diff) > 5 else ""
    return "; ".join(parts) + more + ": read again"


def _sql_str(path: Path) -> str:
    return str(path).replace("'", "''")

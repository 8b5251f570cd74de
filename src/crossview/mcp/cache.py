"""Analyses kept in memory per (paths, filter, gpu): an agent's follow-up calls on the same
scope (hot_traces gpu then cpu, topfunctions, query…) reuse one store instead of re-reading."""

from __future__ import annotations

import copy
import threading
from collections import OrderedDict
from dataclasses import asdict
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from crossview.analysis import Analysis, analyze
from crossview.errors import CrossviewError
from crossview.mcp.safety import Refused, Roots
from crossview.model.filter import Filter


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


class Entry:
    def __init__(self, analysis: Analysis, paths: list[Path], flt: Filter) -> None:
        self.analysis = analysis
        self.paths = paths
        self.filter = flt
        # one DuckDB connection: one call at a time; re-entrant so `diff A A` takes it twice
        self.lock = threading.RLock()
        self.given: list[str] | None = None

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
        }

    def as_given(self, paths: list[str]) -> Entry:
        """This entry, echoing `paths` as this call spelled them (shared analysis and lock)."""
        view = copy.copy(self)
        view.given = list(paths)
        return view


class AnalysisCache:
    def __init__(self, roots: Roots, size: int = 8) -> None:
        self.roots = roots
        self.size = size
        self._entries: OrderedDict[tuple[Any, ...], Entry] = OrderedDict()
        self._lock = threading.Lock()

    def _spelled(self, paths: list[str], real: list[Path]) -> list[Path]:
        out = []
        for p, r in zip(paths, real, strict=True):
            given = Path(p).expanduser()
            if not given.is_absolute():
                given = self.roots.roots[0] / given
            out.append(given if given.resolve(strict=False) == r else r)
        return out

    def get(self, paths: list[str], flt: FilterArg | None, gpu: str | None = None) -> Entry:
        real = self.roots.check_all(paths)
        f = (flt or FilterArg()).to_filter()
        key = (tuple(map(str, real)), f, gpu)
        with self._lock:
            hit = self._entries.get(key)
            if hit is not None:
                self._entries.move_to_end(key)
                return hit.as_given(paths)
        try:
            # read through the path as given (checked above: its real path is under a root),
            # so artifact paths in results match what the caller and the CLI spell
            result = analyze(self._spelled(paths, real), f, gpu=gpu)
        except CrossviewError as e:
            raise Refused(str(e)) from None
        if result.views is None:
            why = "; ".join(f"{r.path}: {'; '.join(r.problems)}" for r in result.rejected)
            raise Refused(why or "no input files found in " + ", ".join(paths))
        entry = Entry(result, real, f)
        with self._lock:
            self._entries[key] = entry
            while len(self._entries) > self.size:
                _, old = self._entries.popitem(last=False)
                with old.lock:
                    old.analysis.views.store.close()  # type: ignore[union-attr]
        return entry.as_given(paths)

"""The most files one run looks at (input_limits.yaml max_input_files, issue 43): past it, the
files nearest the folders the user named are read (a capture beside a dumped dataset is not
lost) and the rest are refused in one report naming where they are — a budget said in one
line within seconds, never minutes of one-line rejections."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from crossview.sources import guard
from crossview.sources.artifact_report import ArtifactReport

T = TypeVar("T")


def files_per_run() -> int:
    return int(guard.limit("max_input_files"))


def cap(items: list[T], budget: int, key: Callable[[T], Path]) -> tuple[list[T], list[T]]:
    """(the first `budget` items by depth — fewest path parts, then the given order — kept in
    the given order; the rest)."""
    if len(items) <= budget:
        return items, []
    order = sorted(range(len(items)), key=lambda i: len(key(items[i]).parts))
    keep = set(order[:budget])
    return ([x for i, x in enumerate(items) if i in keep],
            [x for i, x in enumerate(items) if i not in keep])


def refused(over: list[Path]) -> ArtifactReport:
    """One report for the files past the budget, named by the folder that holds them."""
    where = os.path.commonpath([str(f.parent) for f in over])
    return ArtifactReport(
        guard.show(where), "unknown", "refused",
        [f"{len(over):,} more file(s) here not read: a run reads at most {files_per_run():,} "
         "files (input_limits.yaml max_input_files), nearest the named folders first — pass "
         "the captures themselves, or split the folder"])

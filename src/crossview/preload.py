"""Import the modules an analysis needs next in a background thread while the read runs.

A capture's read spends most of its time in DuckDB and in ISA-L, which release the GIL; the
~130 modules the views, detectors, verdict, replay and renderer need (~0.1 s of imports) are
loaded on the second core meanwhile instead of after the read (decision 0907).

Safe only because the read imports no module that is in an import cycle (the package ↔
submodule cycles of detectors, verdict, replay.levers, …): two threads importing into one
cycle at once can hand each other a partly initialized module. tests/test_preload.py checks
that on a real read. The caller joins the thread before its own code imports anything the
thread may be importing into such a cycle (analysis.analyze: right after the read).
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Sequence


class Preload:
    """One background thread importing `modules` in order; `join` waits for it."""

    def __init__(self, modules: Sequence[str]) -> None:
        self.modules = tuple(modules)
        self.failed: list[str] = []
        self._thread = threading.Thread(target=self._run, name="crossview-preload",
                                        daemon=True)
        self._thread.start()

    def _run(self) -> None:
        for name in self.modules:
            try:
                importlib.import_module(name)
            except Exception:  # noqa: BLE001 (the caller's own import raises it, in its thread)
                self.failed.append(name)

    def join(self) -> None:
        self._thread.join()

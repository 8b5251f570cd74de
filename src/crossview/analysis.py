"""The importable API: read inputs, resolve the filter, build views, run detectors.

CLI and (later) MCP are thin shells over `analyze`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from crossview.detectors import run_all
from crossview.knowledge.thresholds import Thresholds, defaults
from crossview.model.filter import Filter
from crossview.model.finding import Finding
from crossview.sources.ncu.ingest import name_devices
from crossview.sources.registry import read_all
from crossview.sources.report import ArtifactReport
from crossview.store.store import Store
from crossview.views.scope import resolve
from crossview.views.views import Views


@dataclass
class Analysis:
    artifacts: list[ArtifactReport]
    views: Views | None  # None when no input could be read
    findings: list[Finding]

    @property
    def rejected(self) -> list[ArtifactReport]:
        return [a for a in self.artifacts if a.status != "ok"]


def analyze(
    paths: Iterable[Path | str],
    flt: Filter | None = None,
    limits: Thresholds | None = None,
    store: Store | None = None,
    gpu: str | None = None,
) -> Analysis:
    """`gpu` names the GPU of ncu captures that do not (details CSV): its ceilings apply."""
    store = store or Store()
    reports = read_all([Path(p) for p in paths], store)
    if not any(r.status == "ok" for r in reports):
        return Analysis(reports, None, [])
    if gpu:
        name_devices(store, gpu)
    resolved = resolve(store, flt or Filter())
    views = Views(store, resolved, limits or defaults())
    return Analysis(reports, views, run_all(views))

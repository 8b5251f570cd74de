"""speedscope JSON (https://www.speedscope.app/file-format-schema.json): each view (GPU, CPU)
a sampled profile in nanoseconds over one shared frames table. A "sample" is one distinct
stack and its weight the time that ends in it (export/folded.py), so the profile's weights
sum to the view's total; samples are in stack order, so speedscope's time-order view reads
like a flamegraph and left-heavy is the usual one."""

from __future__ import annotations

from dataclasses import dataclass, field
from importlib.metadata import PackageNotFoundError, version
from typing import Any

import msgspec

from crossview.core import inert
from crossview.export import folded
from crossview.views.host.calltree import CallTree

SCHEMA = "https://www.speedscope.app/file-format-schema.json"


@dataclass
class _Frames:
    index: dict[str, int] = field(default_factory=dict)
    rows: list[dict[str, Any]] = field(default_factory=list)

    def of(self, name: str) -> int:
        i = self.index.get(name)
        if i is None:
            i = self.index[name] = len(self.rows)
            self.rows.append({"name": inert.name(name)})  # data in the viewer, never control
        return i


def _profile(name: str, tree: CallTree, frames: _Frames) -> dict[str, Any]:
    items = sorted(folded.stacks(tree).items())
    # a sampled view without a measured sampling period has sample counts, not ns
    unit = "none" if tree.samples and not tree.total_ns else "nanoseconds"
    return {
        "type": "sampled", "name": name, "unit": unit, "startValue": 0,
        "endValue": sum(w for _, w in items),
        "samples": [[frames.of(f) for f in path] for path, _ in items],
        "weights": [w for _, w in items],
    }


def exporter() -> str:
    try:
        return f"crossview {version('crossview')}"
    except PackageNotFoundError:
        return "crossview"


def render(trees: list[tuple[str, CallTree]], title: str) -> bytes:
    frames = _Frames()
    profiles = [_profile(name, tree, frames) for name, tree in trees]
    doc = {
        "$schema": SCHEMA, "shared": {"frames": frames.rows}, "profiles": profiles,
        "name": title, "activeProfileIndex": 0, "exporter": exporter(),
    }
    return msgspec.json.encode(doc)

"""CPU or GPU side for a sampled-stack profile, and the kind of each frame.

Rules and thresholds in knowledge/stack_views.yaml (why each condition is there is written
beside it). A file that states its view (folded header, pprof sample type) is taken at its word.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache

from crossview.kernels import families as kernel_families
from crossview.knowledge import api_roles, frames
from crossview.knowledge.loader import load_yaml
from crossview.sources.stacks.model import Profile


@dataclass(frozen=True)
class _Rules:
    share: float
    marker: str
    host_library: re.Pattern[str]
    device_name: re.Pattern[str]


@cache
def _rules() -> _Rules:
    d = load_yaml("stack_views.yaml")
    return _Rules(float(d["gpu_leaf_share"]), str(d["kernel_marker"]),
                  re.compile("|".join(f"(?:{p})" for p in d["host_library"])),
                  re.compile("|".join(f"(?:{p})" for p in d["device_name"])))


def strip_marker(name: str) -> str:
    m = _rules().marker
    return name[len(m):] if name.startswith(m) else name


def is_kernel_leaf(leaf: str, caller: str | None) -> bool:
    r = _rules()
    if leaf.startswith(r.marker):
        return True
    if (frames.is_python_location(leaf) or r.host_library.search(leaf)
            or kernel_families.classify(leaf) == kernel_families.OTHER):
        return False
    launched = caller is not None and api_roles.role_of(caller) in ("launch", "graph_launch")
    return launched or r.device_name.search(leaf) is not None


def decide_view(p: Profile) -> tuple[str, str]:
    """("cpu" | "gpu", why) for the stacks with no view of their own: stated by the file, or
    by the weight ending in kernel leaves."""
    if p.view in ("cpu", "gpu"):
        return p.view, "stated by the file"
    total = kern = 0
    memo: dict[tuple[str, str | None], bool] = {}
    for s in p.stacks:
        if s.view is not None:
            continue
        w = s.weight_ns or s.count
        total += w
        key = (s.frames[-1], s.frames[-2] if len(s.frames) > 1 else None)
        hit = memo.get(key)
        if hit is None:
            hit = memo[key] = is_kernel_leaf(*key)
        kern += w if hit else 0
    share = kern / total if total else 0.0
    if share >= _rules().share:
        return "gpu", f"{100 * share:.0f}% of the weight ends in GPU kernel leaves"
    return "cpu", "leaves are host frames"


def frame_kind(name: str, known: dict[str, str]) -> str:
    if name in known:
        return known[name]
    return "python" if frames.is_python_location(name) else "native"

"""What every lever shares: its defaults (knowledge/replay.yaml), the refusal it raises, and
the bounds of what it cannot know: a default `X` with `X_low` / `X_high` beside it in
replay.yaml is an unknown of the lever; the prediction's range replays the graph at each
bound (`LeverContext.bound`). A value the user gives (`--lever NAME=VALUE`) fixes it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from crossview.errors import CrossviewError, UsageError
from crossview.knowledge.loader import load_yaml

if TYPE_CHECKING:
    from crossview.views.host.host_stalls import HostStall


class LeverUnavailable(CrossviewError):
    """The capture lacks what this lever needs (the message names it)."""


def defaults(name: str) -> dict[str, Any]:
    return dict(load_yaml("replay.yaml")["levers"][name])


def bounded(name: str, key: str, ctx: LeverContext) -> float:
    """The default `key` of lever `name` at the context's bound: `key_low` / `key_high` when
    replay.yaml declares them (an unknown of the lever), else `key` itself."""
    d = defaults(name)
    return float(d.get(f"{key}_{ctx.bound}", d[key]) if ctx.bound != "mid" else d[key])


def unknown(name: str, key: str) -> tuple[float, float] | None:
    """(low, high) of a lever default declared as an unknown, None when it is not one."""
    d = defaults(name)
    return (float(d[f"{key}_low"]), float(d[f"{key}_high"])) if f"{key}_low" in d else None


def number(name: str, param: str | None, default: float) -> float:
    if param is None:
        return default
    try:
        value = float(param)
    except ValueError:
        raise UsageError(f"--lever {name}={param}: expected a number") from None
    if value < 0:
        raise UsageError(f"--lever {name}={param}: must be ≥ 0")
    return value


@dataclass
class LeverContext:
    """What a lever may read besides the graph: ncu roofline fractions by kernel name, and the
    bound of the prediction being replayed (low | mid | high: replay.yaml `X_low` / `X_high`)."""

    # kernel name → (achieved fraction of the nearer ceiling, "memory" | "compute")
    roofline: dict[str, tuple[float, str]] = field(default_factory=dict)
    bound: str = "mid"
    # the capture's host stalls (views/host/host_stalls.py), for the host-stalls lever; None:
    # not read (the lever then reads nothing it could remove)
    stalls: list[HostStall] | None = None

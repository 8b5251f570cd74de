"""What every lever shares: its defaults (knowledge/replay.yaml) and the refusal it raises."""

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
    """What a lever may read besides the graph: ncu roofline fractions by kernel name."""

    # kernel name → (achieved fraction of the nearer ceiling, "memory" | "compute")
    roofline: dict[str, tuple[float, str]] = field(default_factory=dict)
    # the capture's host stalls (views/host/host_stalls.py), for the host-stalls lever; None:
    # not read (the lever then reads nothing it could remove)
    stalls: list[HostStall] | None = None

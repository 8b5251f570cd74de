"""Engine flags by version (engine_flags.yaml): which flags exist in the detected version."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache

from crossview.knowledge.loader import load_yaml

FLAG = re.compile(r"(?<![\w-])(--[a-z][a-z0-9-]*|-O(?![\w-])|cudagraph_mode)")


def _ver(s: str) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", s))


@dataclass(frozen=True)
class EngineVersion:
    engine: str
    since: str | None  # lowest release the capture proves; None: unknown
    evidence: str  # the frame that proves it


def detect(engine: str | None, frame_names: list[str]) -> EngineVersion | None:
    if engine is None:
        return None
    table = load_yaml("engine_flags.yaml").get(engine)
    if not table:
        return None
    best: tuple[tuple[int, ...], str, str] | None = None
    for m in table.get("markers") or []:
        pat = re.compile(m["frame"])
        hit = next((n for n in frame_names if pat.search(n)), None)
        if hit is not None and (best is None or _ver(m["since"]) > best[0]):
            best = (_ver(m["since"]), m["since"], hit)
    return EngineVersion(engine, best[1], best[2]) if best else EngineVersion(engine, None, "")


@cache
def _flags(engine: str) -> dict[str, tuple[tuple[int, ...], tuple[int, ...] | None]]:
    table = load_yaml("engine_flags.yaml").get(engine) or {}
    return {k: (_ver(v["since"]), _ver(v["until"]) if v.get("until") else None)
            for k, v in (table.get("flags") or {}).items()}


def exists(engine: str, flag: str, since: str | None) -> bool:
    """The flag exists in every release from `since` on (unknown version: in current ones)."""
    got = _flags(engine).get(flag)
    if got is None:
        return False
    first, gone = got
    if since is None:
        return gone is None
    return first <= _ver(since) and gone is None


def flags_in(text: str) -> list[str]:
    return FLAG.findall(text)


def known(engine: str) -> bool:
    return bool(_flags(engine))


def enable_graphs_phrases() -> list[str]:
    return list(load_yaml("engine_flags.yaml")["enable_graphs_phrases"])

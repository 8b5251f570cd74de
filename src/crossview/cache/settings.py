"""Where the capture cache lives and how large it may grow: `crossview --cache-dir DIR`,
`--cache-size 2GB`, `--no-cache` (set as CROSSVIEW_CACHE_DIR / CROSSVIEW_CACHE_SIZE /
CROSSVIEW_NO_CACHE, so worker processes follow), else $XDG_CACHE_HOME/crossview, else
~/.cache/crossview, bounded by knowledge/capture_cache.yaml."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from crossview.errors import UsageError
from crossview.knowledge.loader import load_typed

DIR_ENV = "CROSSVIEW_CACHE_DIR"
SIZE_ENV = "CROSSVIEW_CACHE_SIZE"
OFF_ENV = "CROSSVIEW_NO_CACHE"
_UNITS = {"": 1, "b": 1, "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12,
          "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40}


@dataclass(frozen=True)
class CacheSettings:
    folder: Path
    max_bytes: int  # the folder's bound (least recently used entries go past it)
    max_entry_bytes: int  # a larger entry is not kept
    max_entry_rows: int  # a store of more rows is not written
    max_age_s: float  # entries unused this long are removed by the next write


def parse_size(text: str, origin: str) -> int:
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([kmgt]i?b|b)?\s*", text, re.I)
    if not m:
        raise UsageError(f"{origin} {text!r}: expected a size such as 500MB or 2GB")
    return int(float(m.group(1)) * _UNITS[(m.group(2) or "").lower()])


def default_folder() -> Path:
    """$XDG_CACHE_HOME/crossview (an absolute XDG_CACHE_HOME only, as the spec says), else
    ~/.cache/crossview."""
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    base = Path(xdg) if xdg and os.path.isabs(xdg) else Path.home() / ".cache"
    return base / "crossview"


def from_env() -> CacheSettings | None:
    """The cache the CLI and the MCP server use; None when switched off (--no-cache)."""
    if os.environ.get(OFF_ENV, "") not in ("", "0"):
        return None
    bounds = load_typed("capture_cache.yaml")
    size = os.environ.get(SIZE_ENV)
    bound = parse_size(size, SIZE_ENV) if size else int(bounds.max_bytes)
    folder = os.environ.get(DIR_ENV)
    return CacheSettings(Path(folder).expanduser() if folder else default_folder(), bound,
                         int(bound * float(bounds.max_entry_share)), int(bounds.max_entry_rows),
                         float(bounds.max_age_days) * 86400.0)

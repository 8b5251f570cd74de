"""crossview's version: the installed distribution's, else the source tree's pyproject.toml
(a checkout run without `pip install`)."""

from __future__ import annotations

import tomllib
from functools import cache
from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as installed
from pathlib import Path


@cache
def version() -> str:
    try:
        return installed("crossview")
    except PackageNotFoundError:
        pass

    pyproject = Path(__file__).resolve().parents[2] / "pyproject.toml"
    try:
        return str(tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]["version"])
    except (OSError, KeyError, tomllib.TOMLDecodeError):
        return "0+unknown"  # neither installed nor in its source tree: no version to read

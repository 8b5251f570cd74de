"""Load the knowledge tables shipped as package data."""

from __future__ import annotations

from functools import cache
from importlib import resources
from typing import Any

import yaml


@cache
def load_yaml(name: str) -> Any:
    text = resources.files("crossview.knowledge").joinpath(name).read_text(encoding="utf-8")
    return yaml.safe_load(text)

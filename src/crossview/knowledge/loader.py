"""Load the knowledge tables shipped as package data."""

from __future__ import annotations

from functools import cache
from importlib import resources
from typing import Any

import yaml


@cache
def load_yaml(name: str) -> Any:
    text = resources.files("crossview.knowledge").joinpath(name).read_text(encoding="utf-8")
    # libyaml's loader when the wheel has it (several times faster than pure Python)
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    return yaml.load(text, Loader=loader)  # noqa: S506 (a safe loader)

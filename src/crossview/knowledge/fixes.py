"""Fix texts per pattern and engine (fixes.yaml)."""

from __future__ import annotations

from crossview.knowledge.loader import load_yaml


def fix_for(pattern: str, engine: str | None, where: str = "") -> str:
    table = load_yaml("fixes.yaml")[pattern]
    text = table.get(engine or "default") or table["default"]
    return " ".join(text.format(where=where).split())

"""Fix texts per pattern and engine (fixes.yaml), and their {where} sentence
(fix_where.yaml)."""

from __future__ import annotations

from crossview.knowledge.loader import load_yaml


def fix_for(pattern: str, engine: str | None, where: str = "", **facts: object) -> str:
    """The fix text for a pattern and variant; `facts` fill the variant's other {fields}
    (numbers the capture shows, e.g. the step's token count)."""
    table = load_yaml("fixes.yaml")[pattern]
    text = table.get(engine or "default") or table["default"]
    return " ".join(text.format(where=where, **facts).split())


def variants(pattern: str) -> set[str]:
    """The variant keys fixes.yaml holds for a pattern (engines, GPUs, SM pipes, …)."""
    return set(load_yaml("fixes.yaml")[pattern])


def where_text(site: str, frame: str = "") -> str:
    """The {where} sentence for a code site (Views.code_site: a fix_where.yaml key and the
    user's frame it names, if any)."""
    return load_yaml("fix_where.yaml")[site].format(frame=frame)

"""HTML escaping and small formatting helpers shared by the panels."""

from __future__ import annotations

import html
import json
from typing import Any

from crossview.core import inert
from crossview.identity import shown


def esc(text: object) -> str:
    """Text for the page: markup escaped, and every control, ANSI, bidi or zero-width
    character shown as its escape (core/inert.py), never obeyed."""
    return html.escape(inert.text(str(text)), quote=True)


def code(name: object) -> str:
    """A name as code, isolated: its own direction (a right-to-left name) cannot reorder
    the text around it, and what it holds is escaped; a frame's object address is not shown
    (identity.shown, decision 0911)."""
    return f"<code><bdi>{esc(inert.name(shown(str(name))))}</bdi></code>"


def data_script(elem_id: str, data: Any) -> str:
    """JSON for the page's scripts, safe inside <script> (no `</`, no `<!--`); the names in
    it shown escaped by the page, as in the recap (a script draws them as text)."""
    text = json.dumps(data, separators=(",", ":"), ensure_ascii=False)
    if not text.isprintable() or "\\u00" in text:  # a raw bidi/zero-width, an escaped C0
        text = json.dumps(_inert(data), separators=(",", ":"), ensure_ascii=False)
    text = text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    return f'<script type="application/json" id="{esc(elem_id)}">{text}</script>'


def table(head: list[str], rows: list[list[str]], num: set[int] | None = None,
          cls: str = "") -> str:
    """An HTML table; cells are already-escaped HTML; `num` columns are right-aligned."""
    num = num or set()
    th = "".join(f'<th{" class=num" if i in num else ""}>{h}</th>' for i, h in enumerate(head))
    body = "".join(
        "<tr>" + "".join(f'<td{" class=num" if i in num else ""}>{c}</td>'
                         for i, c in enumerate(r)) + "</tr>" for r in rows)
    return (f'<div class="tablewrap"><table class="{cls}"><thead><tr>{th}</tr></thead>'
            f"<tbody>{body}</tbody></table></div>")


def section(sid: str, title: str, body: str, note: str = "") -> str:
    sub = f'<p class="note">{note}</p>' if note else ""
    return (f'<section id="{esc(sid)}" class="panel"><h2>{esc(title)}</h2>{sub}{body}'
            "</section>")


def _inert(data: Any) -> Any:
    """`data` with every string made inert (names keep no control or bidi character)."""
    if isinstance(data, str):
        return inert.text(data)
    if isinstance(data, dict):
        return {k: _inert(v) for k, v in data.items()}
    if isinstance(data, list | tuple):
        return [_inert(v) for v in data]
    return data

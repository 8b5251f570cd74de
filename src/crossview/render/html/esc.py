"""HTML escaping and small formatting helpers shared by the panels."""

from __future__ import annotations

import html
import json
from typing import Any


def esc(text: object) -> str:
    return html.escape(str(text), quote=True)


def data_script(elem_id: str, data: Any) -> str:
    """JSON for the page's scripts, safe inside <script> (no `</`, no `<!--`)."""
    text = json.dumps(data, separators=(",", ":"), ensure_ascii=False)
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

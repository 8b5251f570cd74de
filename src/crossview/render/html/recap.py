"""The recap: the Markdown renderer's own text, turned into HTML (no recomputation)."""

from __future__ import annotations

from markdown_it import MarkdownIt

from crossview.analysis import Analysis
from crossview.render import markdown

# raw HTML off: kernel names such as `void f<128>` must show as text, never as tags
_MD = MarkdownIt("commonmark", {"html": False, "linkify": False}).enable("table")


# severity as a coloured badge with its word: readable without an emoji font
_BADGES = {"🔴": '<span class="badge red">RED</span>',
           "🟡": '<span class="badge yellow">YELLOW</span>'}


def to_html(md_text: str) -> str:
    """Markdown → HTML; every table in a horizontal scroller (it keeps its columns)."""
    html = _MD.render(md_text)
    return html.replace("<table>", '<div class="tablewrap"><table>').replace(
        "</table>", "</table></div>")


def recap_html(a: Analysis) -> str:
    html = to_html(markdown.render(a))
    for emoji, badge in _BADGES.items():
        html = html.replace(emoji, badge)
    return html

"""The recap: the Markdown renderer's own text, turned into HTML (no recomputation)."""

from __future__ import annotations

from typing import Any

from markdown_it import MarkdownIt
from markdown_it.common.utils import escapeHtml

from crossview.analysis import Analysis
from crossview.core import inert
from crossview.render import markdown

# raw HTML off: kernel names such as `void f<128>` must show as text, never as tags
_MD = MarkdownIt("commonmark", {"html": False, "linkify": False}).enable("table")


def _code_inline(self: Any, tokens: Any, idx: int, options: Any, env: Any) -> str:
    """Inline code (every name in the recap) isolated in <bdi>: a right-to-left name cannot
    reorder the sentence or cell around it (its controls are escaped already: md_text)."""
    return f"<code><bdi>{escapeHtml(tokens[idx].content)}</bdi></code>"


_MD.add_render_rule("code_inline", _code_inline)


# severity as a coloured badge with its word: readable without an emoji font
_BADGES = {"🔴": '<span class="badge red">RED</span>',
           "🟡": '<span class="badge yellow">YELLOW</span>'}


def to_html(md_text: str) -> str:
    """Markdown → HTML; every table in a horizontal scroller (it keeps its columns)."""
    html = _MD.render(inert.text(md_text))  # what a panel passes raw: no control obeyed
    return html.replace("<table>", '<div class="tablewrap"><table>').replace(
        "</table>", "</table></div>")


def recap_html(a: Analysis) -> str:
    html = to_html(markdown.render(a))
    for emoji, badge in _BADGES.items():
        html = html.replace(emoji, badge)
    return html

"""The recap: the Markdown renderer's own text, turned into HTML (no recomputation)."""

from __future__ import annotations

from markdown_it import MarkdownIt

from crossview.analysis import Analysis
from crossview.render import markdown

# raw HTML off: kernel names such as `void f<128>` must show as text, never as tags
_MD = MarkdownIt("commonmark", {"html": False, "linkify": False}).enable("table")


def to_html(md_text: str) -> str:
    return _MD.render(md_text)


def recap_html(a: Analysis) -> str:
    return to_html(markdown.render(a))

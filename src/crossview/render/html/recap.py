"""The recap: the Markdown renderer's own text, turned into HTML (no recomputation).

Every text of the page that holds Markdown (the recap, findings' titles, observations, fixes
and effects, panel notes) goes through `to_html` / `inline_html`, so no literal backtick or
`**` reaches the reader; emoji that carry a meaning become word badges, which read without
an emoji font (issue 40)."""

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


# emoji → a coloured badge with its word: readable where no emoji font is installed
# (variation selectors first: "⚠️" is U+26A0 U+FE0F)
_BADGES = (("🔴", '<span class="badge red">RED</span>'),
           ("🟡", '<span class="badge yellow">YELLOW</span>'),
           ("⚠️", '<span class="badge warn">WARN</span>'),
           ("⚠", '<span class="badge warn">WARN</span>'),
           ("❌", '<span class="badge red">ERROR</span>'),
           ("ℹ️", '<span class="badge">NOTE</span>'))

# parts of the recap the page shows in panels of its own (render/html/page.py), left out of
# its recap section so each table is on the page once; `head` is the page header, `more`
# points to the CLI's `--detail full`
IN_PANELS = frozenset({"head", "issues", "consider", "metrics", "steps", "account", "ncu",
                       "ncu_table", "op_roofline", "more", "detail_head"})


def badges(html: str) -> str:
    for emoji, badge in _BADGES:
        html = html.replace(emoji, badge)
    return html


def to_html(md_text: str) -> str:
    """Markdown → HTML; every table in a horizontal scroller (it keeps its columns)."""
    html = _MD.render(inert.text(md_text))  # what a panel passes raw: no control obeyed
    return badges(html.replace("<table>", '<div class="tablewrap"><table>').replace(
        "</table>", "</table></div>"))


def inline_html(md_text: str) -> str:
    """One line of Markdown (a title, an effect) as inline HTML: no paragraph around it."""
    return badges(_MD.renderInline(inert.text(md_text)))


def recap_html(a: Analysis, also_in_panels: frozenset[str] = frozenset()) -> str:
    """The recap's parts the panels do not show: key findings, the call tree with its sync
    points, the CPU cross-check, ranks, top kernels, summaries and notes. `also_in_panels`:
    parts this page's optional panels hold (the per-rank table of the ranks panel)."""
    if a.views is None:
        return to_html(markdown.render(a))
    out = IN_PANELS | also_in_panels
    keep = [p for p in markdown.parts(a, "full") if p.key not in out]
    return to_html("\n".join(line for p in keep for line in p.lines) + "\n")

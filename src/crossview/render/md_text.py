"""Names and paths entering Markdown (issue 43, decision 0890): escaped as data
(core/inert.py: no newline, control, ANSI or bidi character survives) and set as inline
code, so Markdown syntax in a name (`*`, `[…](…)`, `<…>`, a backtick) stays text. A frame's
object address is not shown (identity.shown, decision 0911)."""

from __future__ import annotations

import re

from crossview.core import inert
from crossview.identity import shown

_TICKS = re.compile(r"`+")


def code(name: object, cell: bool = False) -> str:
    """A name as inline code: fenced by one backtick more than its longest run of them
    (padded by a space then, as CommonMark strips one), `|` escaped inside a table cell."""
    text = inert.name(shown(str(name)))  # as a person reads it (decision 0911)
    run = max((len(m) for m in _TICKS.findall(text)), default=0)
    fence = "`" * (run + 1)
    out = f"{fence} {text} {fence}" if run else f"{fence}{text}{fence}"
    return out.replace("|", "\\|") if cell else out


def cut(name: object, limit: int) -> str:
    """A name escaped, then cut to `limit` characters (its end marked `…`)."""
    text = inert.name(shown(str(name)))  # as a person reads it (decision 0911)
    return text if len(text) <= limit else text[: limit - 1] + "…"

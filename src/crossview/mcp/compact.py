"""Tool results sized for an agent: compact JSON, a `detail` level, a character budget.

- `compact`: drop null / empty fields (an absent field means "not in this input"; where the
  absence itself is the answer a tool says so with `absent: {field: reason}`, never a 0).
- `detail="summary"` (default) keeps what an agent reads first and cuts lists and long names;
  `detail="full"` returns everything the analysis has.
- `fit`: a summary that still exceeds SUMMARY_BUDGET_CHARS is re-rendered at the next,
  shorter level, so a summary never exceeds the budget (docs/mcp.md lists the levels).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Annotated, Any, Literal

from pydantic import Field

from crossview.mcp.jsonout import dumps

# A bound on the server's answer size (what one tool result may cost an agent's context), not
# an analysis threshold: docs/mcp.md documents it; tests/test_mcp_compact.py measures it.
SUMMARY_BUDGET_CHARS = 8_000
NAME_CHARS = 120  # kernel / frame names longer than this are cut at summary

Detail = Annotated[Literal["summary", "full"], Field(
    description="summary (default): the headline numbers and the top rows, within "
    f"{SUMMARY_BUDGET_CHARS:,} characters; full: everything the analysis holds.")]


KEEP = frozenset({"filter"})  # echoed even when empty ({} = everything): pass it back


def compact(x: Any) -> Any:
    """Drop None, empty lists/dicts and empty strings from every dict, recursively."""
    if isinstance(x, dict):
        out = {}
        for k, v in x.items():
            v = compact(v)
            empty = v is None or v == "" or (isinstance(v, list | dict) and not v)
            if empty and not (k in KEEP and v is not None):
                continue
            out[k] = v
        return out
    if isinstance(x, list | tuple):
        return [compact(v) for v in x]
    return x


def clip(text: str, n: int = NAME_CHARS) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


def fit(levels: Sequence[Callable[[], dict[str, Any]]], absent: dict[str, str] | None = None,
        budget: int = SUMMARY_BUDGET_CHARS) -> str:
    """The first level whose compact JSON fits the budget; the last one (marked) otherwise.
    `absent` fields are added as null with their reason after compaction."""
    text = ""
    for i, level in enumerate(levels):
        doc = with_absent(compact(level()), absent or {})
        if i:
            doc["cut"] = f"shortened to level {i + 1} of {len(levels)} to fit {budget:,} chars"
        text = dumps(doc)
        if len(text) <= budget:
            return text
    return text


def with_absent(doc: dict[str, Any], absent: dict[str, str]) -> dict[str, Any]:
    """Null fields that stay visible, each with the reason (compact() would drop them)."""
    if absent:
        doc = {**doc, **dict.fromkeys(absent), "absent": absent}
    return doc

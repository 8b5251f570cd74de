"""Tool results sized for an agent: compact JSON, a `detail` level, a character budget.

- `compact`: drop null / empty fields (an absent field means "not in this input"; where the
  absence itself is the answer a tool says so with `absent: {field: reason}`, never a 0).
- `detail="summary"` (default) keeps what an agent reads first and cuts lists and long names;
  `detail="full"` returns everything the analysis has.
- `fit`: a summary that still exceeds SUMMARY_BUDGET_CHARS is re-rendered at the next,
  shorter level, so a summary never exceeds the budget (docs/mcp.md lists the levels).
"""

from __future__ import annotations

import copy
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
    """The first level whose compact JSON fits the budget; past the last level, that level
    shrunk until it fits (`shrink`): a summary never exceeds the budget (issue 40).
    `absent` fields are added as null with their reason after compaction."""
    doc: dict[str, Any] = {}
    for i, level in enumerate(levels):
        doc = with_absent(compact(level()), absent or {})
        if i:
            doc["cut"] = f"shortened to level {i + 1} of {len(levels)} to fit {budget:,} chars"
        text = dumps(doc)
        if len(text) <= budget:
            return text
    return dumps(shrink(doc, budget))


def within(doc: dict[str, Any], budget: int = SUMMARY_BUDGET_CHARS) -> str:
    """`doc` as JSON, shrunk when over the budget (a tool with one level and no compaction)."""
    text = dumps(doc)
    return text if len(text) <= budget else dumps(shrink(doc, budget))


# room kept for the `cut` note itself when shrinking
_NOTE_ROOM = 400


def shrink(doc: dict[str, Any], budget: int = SUMMARY_BUDGET_CHARS) -> dict[str, Any]:
    """The last resort of a summary: the value that costs most — a list is halved, a long
    text cut at a line (a Markdown recap keeps its verdict: it comes first) — again until
    the document fits; what was cut is said under `cut`, with detail=full for everything.
    The scope echo (`paths`, `filter`, `resolved`) is never cut."""
    doc = copy.deepcopy(doc)
    room = budget - _NOTE_ROOM
    cut: dict[str, str] = {}
    while len(over := dumps(doc)) > room:
        where, value = _costliest(doc)
        if isinstance(value, list):
            total = int(cut[where].split(" of ")[1]) if where in cut else len(value)
            del value[max(1, len(value) // 2):]
            cut[where] = f"{len(value)} of {total}"
        elif isinstance(value, str):
            keep = max(100, len(value) - (len(over) - room) - 80)
            head = value[:keep]
            head = head[: head.rfind("\n")] if "\n" in head[keep // 2:] else head
            _replace(doc, where, head + f"\n… ({len(value) - len(head):,} characters cut)")
            cut[where] = "text cut"
        else:
            break
    doc["cut"] = (f"over {budget:,} chars at the last level: " + "; ".join(
        f"{k}: {v}" for k, v in cut.items()) + " — detail=full for everything")
    return doc


_SCOPE = frozenset({"paths", "filter", "resolved", "cut"})


def _costliest(doc: Any, path: str = "") -> tuple[str, Any]:
    """(path, value) of the list (of 2 or more) or text (of 200 characters or more) whose
    JSON is largest under doc, the scope echo aside; ("", None) when none is left."""
    best: tuple[int, str, Any] = (-1, "", None)
    items = (doc.items() if isinstance(doc, dict) else enumerate(doc)
             if isinstance(doc, list) else [])
    for k, v in items:
        if not path and k in _SCOPE:
            continue
        here = f"{path}.{k}" if path else str(k)
        if (isinstance(v, list) and len(v) > 1) or (isinstance(v, str) and len(v) >= 200):
            size = len(dumps(v))
            if size > best[0]:
                best = (size, here, v)
        if isinstance(v, dict | list):
            sub = _costliest(v, here)
            if sub[1] is not None and (size := len(dumps(sub[1]))) > best[0]:
                best = (size, *sub)
    return best[1], best[2]


def _replace(doc: Any, path: str, value: Any) -> None:
    *up, last = path.split(".")
    for k in up:
        doc = doc[int(k)] if isinstance(doc, list) else doc[k]
    if isinstance(doc, list):
        doc[int(last)] = value
    else:
        doc[last] = value


def with_absent(doc: dict[str, Any], absent: dict[str, str]) -> dict[str, Any]:
    """Null fields that stay visible, each with the reason (compact() would drop them)."""
    if absent:
        doc = {**doc, **dict.fromkeys(absent), "absent": absent}
    return doc

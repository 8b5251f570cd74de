"""Fixes that fit what the capture shows (applied to every finding after detection):

- never "enable CUDA graphs" when most kernels already replay from graphs (the clauses that
  say so are dropped; kernel-launch-bound then names the kernels still outside);
- engine flags only where they exist in the engine version the capture proves
  (knowledge/engine_flags.yaml); clauses naming other engine flags are dropped, and the fix
  says which version it was checked against.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from crossview.core.finding import Finding
from crossview.knowledge import engine_flags
from crossview.views.views import Views

_SENTENCE = re.compile(r"(?<=\.)\s+(?=[A-Z`])")


def _clauses(sentence: str) -> list[tuple[str, str]]:
    """Split at ', ' and '; ' outside backticks and brackets: (clause, separator after)."""
    out: list[tuple[str, str]] = []
    depth, tick, cur, i = 0, False, "", 0
    while i < len(sentence):
        ch = sentence[i]
        if ch == "`":
            tick = not tick
        elif not tick and ch in "([{":
            depth += 1
        elif not tick and ch in ")]}":
            depth = max(depth - 1, 0)
        if not tick and depth == 0 and sentence[i:i + 2] in (", ", "; "):
            out.append((cur, sentence[i:i + 2]))
            cur, i = "", i + 2
            continue
        cur += ch
        i += 1
    out.append((cur, ""))
    return out


def drop_clauses(text: str, bad: Callable[[str], bool]) -> str:
    """The text without the clauses `bad` flags; sentences left empty go entirely."""
    kept_sentences: list[str] = []
    for s in _SENTENCE.split(text):
        parts = _clauses(s)
        keep = [(c, sep) for c, sep in parts if not bad(c)]
        if len(keep) == len(parts):
            kept_sentences.append(s)
            continue
        if not keep:
            continue
        body = "".join(c + sep for c, sep in keep[:-1]) + keep[-1][0]
        body = re.sub(r"^(and|or|then)\s+", "", body.strip())
        body = body[0].upper() + body[1:] if body else body
        if body and not body.endswith((".", "!", "?")):
            body += "."
        if body:
            kept_sentences.append(body)
    return " ".join(kept_sentences)


def apply(v: Views, found: list[Finding]) -> None:
    m, lim = v.metrics, v.limits
    ls = m.launch
    mostly = bool(ls and m.kernel_count and
                  ls.kernels_via_graph / m.kernel_count >= lim.graphs_mostly_share)
    phrases = engine_flags.enable_graphs_phrases()
    names = [n for (n,) in v.store.sql(
        "SELECT DISTINCT name FROM f_host WHERE kind = 'python'").fetchall()]
    ver = engine_flags.detect(v.engine, names)
    for f in found:
        text = f.fix
        if mostly:
            text = drop_clauses(text, lambda c: any(p in c for p in phrases))
        if ver is not None and engine_flags.known(ver.engine):
            def invalid(c: str, e: str = ver.engine, s: str | None = ver.since) -> bool:
                return any(not engine_flags.exists(e, fl, s) for fl in engine_flags.flags_in(c)
                           if _is_engine_flag(fl))
            text = drop_clauses(text, invalid)
            if any(_is_engine_flag(fl) for fl in engine_flags.flags_in(text)):
                text += (f" (Flags checked against {ver.engine} ≥ {ver.since}, the release "
                         f"`{ver.evidence[:80]}` proves.)" if ver.since else
                         f" (Flags of current {ver.engine} releases; the capture does not "
                         "show the version.)")
            f.details = {**f.details, "engine_version": {"engine": ver.engine,
                                                         "since": ver.since}}
        if text != f.fix:
            f.fix = text or ("No change of this kind applies: most kernels already replay "
                             "from graphs." if mostly else f.fix)


def _is_engine_flag(flag: str) -> bool:
    from crossview.knowledge.loader import load_yaml

    table = load_yaml("engine_flags.yaml")
    return any(flag in (t.get("flags") or {}) for t in table.values() if isinstance(t, dict))

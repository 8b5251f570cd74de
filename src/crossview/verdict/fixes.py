"""Fixes that fit what the capture shows (issue 37; formerly detectors/fix_fit.py).

A claim names the fixes.yaml entries its fix is built from (FixPart); each entry's variants
declare what they require (schemas.FixRequires). The first variant whose requirements are all
known and met by the capture context (views/capture_context.py) and the claim's flags is
printed; a variant whose requirement is unknown or unmet never is. When no variant of an entry
fits, the entry's place says what the evidence shows instead (fixes.yaml `no-fit`). Then:

- never "enable CUDA graphs" when most kernels already replay from graphs (the clauses that
  say so are dropped);
- engine flags only where they exist in the engine version the capture proves
  (knowledge/engine_flags.yaml); clauses naming other engine flags are dropped, and the fix
  says which version it was checked against.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from crossview.core.claim import Claim, FixPart
from crossview.knowledge import engine_flags
from crossview.knowledge.fixes import REQUIRE_KEYS, fill, pick, variants, where_text
from crossview.knowledge.loader import load_yaml
from crossview.knowledge.schemas import FixRequires
from crossview.views.capture_context import CaptureContext
from crossview.views.host import python_frames
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


def met(ctx: CaptureContext, flags: tuple[str, ...], known: dict[str, str]
        ) -> Callable[[FixRequires], bool]:
    """A variant's requirements against the capture (and what the claim itself knows)."""
    def ok(r: FixRequires) -> bool:
        if any(f not in flags for f in r.flags):
            return False
        for k in REQUIRE_KEYS:
            want = getattr(r, k)
            if want is None:
                continue
            if k in known:
                if known[k] != want:
                    return False
                continue
            if not ctx.has(k, want):  # False or None: unmet, or unknown
                return False
        return True
    return ok


def unmet(key: str, ctx: CaptureContext, flags: tuple[str, ...]) -> str:
    """Why no variant of `key` fits, in the capture's words (the first variant's missing
    requirement)."""
    for v in variants(key):
        for k in REQUIRE_KEYS:
            want = getattr(v.requires, k)
            if want is not None and not ctx.has(k, want):
                return f"{k} {want}"
    return "the capture"


def _part(p: FixPart, ctx: CaptureContext, site: tuple[str, str]) -> str:
    known = dict(p.known)
    v = pick(p.key, met(ctx, p.flags, known))
    if p.subject:
        where = p.subject
    elif p.site is not None:
        where = where_text(p.site.key, p.site.frame)
    elif p.located:
        where = where_text(*site)
    else:
        where = ""
    if v is None:
        return fill(str(load_yaml("fixes.yaml")["no-fit"][0]["text"]),
                    what=unmet(p.key, ctx, p.flags))
    text = fill(v.text, where, **dict(p.fill))
    return f"({p.number}) {text}" if p.number and text else text


class Fitter:
    """Fix texts for one capture: its context, code site, graphs and engine version."""

    def __init__(self, v: Views) -> None:
        m, lim = v.metrics, v.limits
        ls = m.launch
        self.ctx = v.context
        self.site = v.code_site()
        self.mostly = bool(ls and m.kernel_count and
                           ls.kernels_via_graph / m.kernel_count >= lim.graphs_mostly_share)
        self.phrases = engine_flags.enable_graphs_phrases()
        ver = None
        if v.engine is not None:
            ver = engine_flags.detect(v.engine, python_frames.names(v))
        self.version = ver

    def text(self, c: Claim, more: tuple[FixPart, ...] = (), first: tuple[FixPart, ...] = ()
             ) -> tuple[str, dict[str, object]]:
        """The fix and the details it adds (the engine version its flags were checked
        against); `first` / `more`: parts the verdict puts before / after the claim's own."""
        parts = [t for p in (*first, *c.fix, *more) if (t := _part(p, self.ctx, self.site))]
        text = " ".join(parts)
        raw = text
        if self.mostly:
            text = drop_clauses(text, lambda x: any(p in x for p in self.phrases))
        details: dict[str, object] = {}
        ver = self.version
        if ver is not None and engine_flags.known(ver.engine):
            def invalid(x: str, e: str = ver.engine, s: str | None = ver.since) -> bool:
                return any(not engine_flags.exists(e, fl, s) for fl in engine_flags.flags_in(x)
                           if _is_engine_flag(fl))
            text = drop_clauses(text, invalid)
            if any(_is_engine_flag(fl) for fl in engine_flags.flags_in(text)):
                text += (f" (Flags checked against {ver.engine} ≥ {ver.since}, the release "
                         f"`{ver.evidence[:80]}` proves.)" if ver.since else
                         f" (Flags of current {ver.engine} releases; the capture does not "
                         "show the version.)")
            details["engine_version"] = {"engine": ver.engine, "since": ver.since}
        if text != raw and not text:
            text = ("No change of this kind applies: most kernels already replay from graphs."
                    if self.mostly else raw)
        return text, details


def _is_engine_flag(flag: str) -> bool:
    table = load_yaml("engine_flags.yaml")
    return any(flag in (t.get("flags") or {}) for t in table.values() if isinstance(t, dict))

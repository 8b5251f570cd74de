"""Fix texts (fixes.yaml) and their {where} sentence (fix_where.yaml).

Each fixes.yaml key holds variants in order; each variant declares what it requires of the
capture (schemas.FixRequires: framework, engine, phase, model kind, vendor, dtype, source, the
claim's flags). The first variant whose requirements are all known and met is the fix; a
variant whose requirement is unknown or unmet is never printed (crossview.verdict decides from
the capture context, issue 37)."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from crossview.knowledge.loader import load_typed, load_yaml
from crossview.knowledge.schemas import FixRequires, FixVariant

# the capture facts a variant may require (schemas.FixRequires, besides the claim's flags)
REQUIRE_KEYS = ("framework", "engine", "phase", "model", "vendor", "dtype", "source", "code")


def variants(key: str) -> list[FixVariant]:
    """The variants of a fixes.yaml key, in order."""
    return list(load_typed("fixes.yaml")[key])


def names(key: str) -> set[str]:
    """The variant names fixes.yaml holds for a key (engines, SM pipes, …)."""
    return {v.name for v in variants(key)}


def pick(key: str, met: Callable[[FixRequires], bool]) -> FixVariant | None:
    """The first variant whose requirements `met` accepts; None when none fits."""
    return next((v for v in variants(key) if met(v.requires)), None)


def fill(text: str, where: str = "", **facts: object) -> str:
    """A variant's text with {where} and its other {fields} filled, spaces normalized."""
    return " ".join(text.format(where=where, **facts).split())


def fix_for(key: str, known: Mapping[str, str | None] | None = None, where: str = "",
            **facts: object) -> str:
    """The text of the first variant whose requirements the `known` facts meet (no claim
    flags), for callers outside the verdict (the recap's key-findings sentence); "" when none
    fits."""
    have = {k: v for k, v in (known or {}).items() if v is not None}

    def met(r: FixRequires) -> bool:
        if r.flags:
            return False
        want = {k: getattr(r, k) for k in REQUIRE_KEYS if getattr(r, k) is not None}
        return all(have.get(k) == v for k, v in want.items())

    v = pick(key, met)
    return fill(v.text, where, **facts) if v is not None else ""


def flag_text(key: str, flags: tuple[str, ...],
              has: Callable[[str, str], bool | None]) -> str:
    """The text of the first variant of `key` whose flags are among `flags` and whose other
    requirements `has(key, value)` confirms (a capture context's `has`; unknown = unmet): a
    phrase another fix fills in, chosen by what the capture shows (late-rank-graphs by the
    parallelism and framework)."""
    def met(r: FixRequires) -> bool:
        return all(f in flags for f in r.flags) and all(
            has(k, getattr(r, k)) is True for k in REQUIRE_KEYS if getattr(r, k) is not None)

    v = pick(key, met)
    return v.text if v is not None else ""


def where_text(site: str, frame: str = "") -> str:
    """The {where} sentence for a code site (a fix_where.yaml key and the user's frame it
    names, if any)."""
    return str(load_yaml("fix_where.yaml")[site]).format(frame=frame)


def variant_text(key: str, name: str, where: str = "", **facts: object) -> str:
    """The text of one named variant, filled (tests and docs quote a variant by name)."""
    v = next(x for x in variants(key) if x.name == name)
    return fill(v.text, where, **facts)

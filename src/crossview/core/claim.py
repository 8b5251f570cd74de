"""Claims: what a detector found, as typed data — no prose, no severity.

A detector (crossview.detectors) returns claims; the verdict (crossview.verdict) turns claims,
views and replay results into the final findings, once. A claim says:

- which pattern it is and which `form` of that pattern's finding (the key its phrasing and fix
  choice read);
- what it owns, so overlaps are computable: time-account causes, op groups, kernel names or
  families, or the causes whose time holds it (`within`);
- its share of a basis (the steady step's time, or the kernel time in scope) and the cut-off
  it crossed (`cutoff`, `tier`: the pattern's top-issue cut or its mention cut, or a note);
- conditions that cap it (`caveats`, keys of knowledge/verdict.yaml) and the capture facts it
  relied on (`relies_on`);
- its numbers with units (`facts`: a per-pattern msgspec Struct whose numeric fields carry a
  unit annotation, tests/test_claims.py) and its evidence (`cites`);
- the fixes.yaml keys its fix is built from, with the flags the variants may require.

Prose is written from these fields by the pattern's `phrase` function (its Declaration) when
the verdict builds the finding.
"""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec
from msgspec import Meta, Struct

Tier = Literal["top", "consider", "note"]
Rigor = Literal["L1", "L2", "L3", "L4"]
# time: of the steady step; kernel_time: of GPU kernel time; requests: of the serving engine's
# requests (a serving metric: no step-time saving to rank by)
Basis = Literal["time", "kernel_time", "requests"]


def _u(unit: str) -> Meta:
    return Meta(extra={"unit": unit})


# units of a facts field (the annotation is the unit; tests/test_claims.py checks every numeric
# facts field carries one)
Ns = Annotated[int, _u("ns")]
NsF = Annotated[float, _u("ns")]
Share = Annotated[float, _u("share")]  # a fraction 0..1
Pct = Annotated[float, _u("%")]
Count = Annotated[int, _u("count")]
CountF = Annotated[float, _u("count")]  # a mean count (per step, per call)
Bytes = Annotated[int, _u("B")]
BytesF = Annotated[float, _u("B")]
Bps = Annotated[float, _u("B/s")]
Flops = Annotated[float, _u("FLOP")]
FlopRate = Annotated[float, _u("FLOP/s")]
Ratio = Annotated[float, _u("ratio")]
Seconds = Annotated[float, _u("s")]
Ms = Annotated[float, _u("ms")]
MiB = Annotated[float, _u("MiB")]
Intensity = Annotated[float, _u("FLOP/B")]
Index = Annotated[int, _u("index")]  # a position (a time chunk, a pipe rank), not a quantity
Tokens = Annotated[float, _u("tokens")]
TokensN = Annotated[int | float, _u("tokens")]  # as recorded (a count or a mean)


class Facts(Struct, frozen=True, kw_only=True):
    """Base of a pattern's typed facts (the numbers and names its phrasing reads)."""


class NoFacts(Facts, frozen=True, kw_only=True):
    pass


class Cutoff(Struct, frozen=True):
    """The cut-off a claim crossed: a thresholds.yaml key (or "file.yaml:key"), its value and
    the measured value in the same unit; `mention`: the pattern's mention cut when the one
    crossed is its top-issue cut (a claim left with less than that once another owns part of
    its time is a note)."""

    key: str
    value: float
    measured: float
    mention: float | None = None


class Owns(Struct, frozen=True, kw_only=True):
    """What a claim's share is made of, so the verdict can give each nanosecond one owner."""

    causes: tuple[str, ...] = ()  # time-account causes it charges (views/device/account.py)
    ops: tuple[str, ...] = ()  # op groups (sol/op_roofline.py OpGroup.key)
    kernels: tuple[str, ...] = ()  # kernel names as recorded
    families: tuple[str, ...] = ()  # kernel families (kernel_families.yaml)
    within: tuple[str, ...] = ()  # causes whose time holds this claim's (host time inside them)


class Site(Struct, frozen=True):
    """Where a fix's change goes: a fix_where.yaml key and the user's frame it names."""

    key: str
    frame: str = ""


class FixPart(Struct, frozen=True, kw_only=True):
    """One fixes.yaml entry a claim's fix is built from, in order. `flags`: what the capture
    shows that variants may require (`requires: {flags: [...]}`); `fill`: values the text
    quotes ({tokens}, {size}, …), already formatted; {where} is `subject` (the kernel, op or
    module the text names) when given, else `site` (where the change goes), else the capture's
    code site when `located`, else empty."""

    key: str
    flags: tuple[str, ...] = ()
    fill: tuple[tuple[str, str], ...] = ()
    subject: str = ""
    site: Site | None = None
    located: bool = False  # {where}: the capture's code site (the user's hottest own frame)
    number: int = 0  # > 0: the part is item (number) of a numbered list
    # context facts the claim itself established for this part (a benchmark arm's engine):
    # they stand in for the capture context's when variants are matched
    known: tuple[tuple[str, str], ...] = ()


class Cite(Struct, frozen=True, kw_only=True):
    """Evidence: an artifact and what was read from it (a knowledge/evidence.yaml key; `fill`:
    its {fields}, recorded names and counts), and the artifact's reader kind when its source
    tables are cited (evidence_tables.yaml)."""

    artifact: str
    read: str
    fill: tuple[tuple[str, str], ...] = ()
    kind: str | None = None


class Claim(Struct, frozen=True, kw_only=True):
    pattern: str
    form: str = ""
    share: float  # of `basis` (0 for a note that holds no time)
    basis: Basis = "time"
    tier: Tier
    owns: Owns = Owns()
    cutoff: Cutoff | None = None
    caveats: tuple[str, ...] = ()  # knowledge/verdict.yaml caveats: what caps its severity
    relies_on: tuple[str, ...] = ()  # capture-context facts the claim used
    fix: tuple[FixPart, ...] = ()
    cites: tuple[Cite, ...] = ()
    rigor: Rigor = "L2"
    partial: bool = False  # its evidence is incomplete (ranks missing): a partial DRAFT
    actionable: bool = True
    # the replay lever this claim's fix fits, when not its pattern's (Declaration.levers)
    lever: str | None = None
    facts: Facts = NoFacts()


def facts_as_builtins(f: Facts) -> dict[str, object]:
    out = msgspec.to_builtins(f)
    return out if isinstance(out, dict) else {}


class Phrasing(Struct, kw_only=True):
    """A claim's sentences, written by its pattern's `phrase` from the claim's typed fields
    (Declaration.phrase): the finding's title, its observation, its own bound (the expected
    effect where no replay predicts one) and the JSON `details` consumers read.

    `ab`: an A/B sentence that holds only while the GPU kernels are the step, and the one said
    instead when the replay's critical path shows the step waits on other work."""

    title: str
    observation: str
    effect: str = ""
    ab: tuple[str, str] | None = None
    details: dict[str, object] = msgspec.field(default_factory=dict)

"""One owner per nanosecond across all findings (conventions §1, issue 37).

Time basis (shares of the steady step): each time-account cause has one owner (declarations;
tests/test_findings_account.py). A claim that only restates causes others own
(Declaration.summarizes) is a note; of two claims charging one cause the larger keeps it;
a claim whose time lies inside causes another claim owns (Owns.within: the first calls'
setup, the per-parameter optimizer work, the per-op host cost — all host time inside the wait
between launches) is a part of that claim, not a second saving. When the capture holds no
steady-state step, claims on steady-state causes are capped to notes (caveat startup-only).

Kernel-time basis: claims name what they own (op groups, kernel families, kernel names); the
verdict resolves them to the kernels they hold (gpu_ops ids; kernel names for a capture of
profiled kernels only) and gives each kernel to one claim — the patterns a claim yields to
(About.yields_to: a mechanism before a symptom, unfused attention before "far below the
roofline") first, then the larger. A claim keeps the share of the rest; one left under its
own mention cut is a note naming the owner.
"""

from __future__ import annotations

from collections.abc import Iterable

from crossview.detectors.kernel_common import KernelFacts
from crossview.detectors.kernel_inefficiency import group_key
from crossview.knowledge import causes
from crossview.sol.op_roofline import OpGroup
from crossview.store.store import Store
from crossview.verdict.cases import Case
from crossview.views.views import Views


def _eligible(c: Case) -> bool:
    return c.claim.tier != "note" and c.held_by is None and "summary" not in c.caveats


def resolve(v: Views, cases: list[Case]) -> None:
    acc = v.account
    if acc is not None:
        for c in cases:
            if c.decl.summarizes and c.claim.tier != "note":
                c.caveats.append("summary")
    _causes(cases)
    if acc is not None and acc.steady_fallback:
        startup = set(causes.rules().startup_causes)
        for c in cases:
            own = set(c.claim.owns.causes)
            if _eligible(c) and own and not own <= startup:
                c.caveats.append("startup-only")  # measured in start-up: says nothing of the
                # steady state
    _within(cases)
    _kernels(v, cases)


def _causes(cases: list[Case]) -> None:
    """No two claims charge the same cause: the larger keeps it."""
    taken: dict[str, Case] = {}
    for c in sorted(cases, key=lambda c: -c.claim.share):
        if not _eligible(c) or not c.claim.owns.causes:
            continue
        clash = next((taken[x] for x in c.claim.owns.causes if x in taken), None)
        if clash is not None:
            c.held_by, c.how_held = clash, "cause"
            continue
        for x in c.claim.owns.causes:
            taken[x] = c


def _within(cases: list[Case]) -> None:
    """A claim whose time lies inside causes another claim owns is a part of that claim."""
    owner = {x: c for c in cases if _eligible(c) for x in c.claim.owns.causes}
    for c in cases:
        if not _eligible(c) or not c.claim.owns.within:
            continue
        outer = next((owner[x] for x in c.claim.owns.within if x in owner), None)
        if outer is not None and outer is not c:
            c.held_by, c.how_held = outer, "within"
            outer.parts.append(c)


_FAMILIES = "SELECT gpu_op_id, dur_ns FROM f_kernels WHERE family IN (SELECT unnest($f))"
_NAMES = "SELECT gpu_op_id, dur_ns FROM f_kernels WHERE name IN (SELECT unnest($n))"


def _units(v: Views, c: Case, groups: dict[str, tuple[int, ...]],
           weights: dict[int | str, float]) -> set[int | str]:
    """The kernels a claim holds: gpu_ops ids on a timeline, else kernel names."""
    o = c.claim.owns
    out: set[int | str] = set()
    store: Store = v.store
    if v.metrics.kernel_time_ns:
        for key in o.ops:
            ids = groups.get(key, ())
            out.update(ids)
        rows: Iterable[tuple[int, int]] = []
        if o.families:
            rows = store.sql(_FAMILIES, {"f": list(o.families)}).fetchall()
            out.update(int(i) for i, _ in rows)
        if o.kernels:
            got = store.sql(_NAMES, {"n": list(o.kernels)}).fetchall()
            out.update(int(i) for i, _ in got)
        return out
    out.update(o.kernels)  # profiled kernels only: by name
    return out


def _kernels(v: Views, cases: list[Case]) -> None:
    """Kernel-time claims: each kernel one owner, yielded-to patterns first, then larger."""
    todo = [c for c in cases if _eligible(c) and c.claim.basis == "kernel_time" and (
        c.claim.owns.ops or c.claim.owns.kernels or c.claim.owns.families)]
    if len(todo) < 2:
        return
    timeline = bool(v.metrics.kernel_time_ns)
    groups = {_group_key(g): g.gpu_op_ids for g in v.op_roofline.groups} \
        if timeline and any(c.claim.owns.ops for c in todo) else {}
    weights: dict[int | str, float] = {}
    total = float(v.metrics.kernel_time_ns) if timeline else 1.0
    if timeline:
        ids = sorted({i for g in groups.values() for i in g})
        if ids or any(c.claim.owns.families or c.claim.owns.kernels for c in todo):
            weights.update((int(i), float(d)) for i, d in v.store.sql(
                "SELECT gpu_op_id, dur_ns FROM f_kernels").fetchall())
    units = {id(c): _units(v, c, groups, weights) for c in todo}
    if not timeline:
        weights.update(_profiled_weights(todo))
    order = _order(todo)
    taken: dict[int | str, Case] = {}
    for c in order:
        mine = units[id(c)]
        if not mine:
            continue
        clash = [u for u in mine if u in taken]
        if clash:
            owners: dict[str, float] = {}
            for u in clash:
                owners[taken[u].pattern] = owners.get(taken[u].pattern, 0.0) + weights.get(u, 0.0)
            top = max(owners.items(), key=lambda kv: kv[1])
            held = top[1] / total
            kept = sum(weights.get(u, 0.0) for u in mine if u not in taken) / total
            first = next(taken[u] for u in clash if taken[u].pattern == top[0])
            cut = (0.0 if c.claim.cutoff is None else c.claim.cutoff.mention
                   if c.claim.cutoff.mention is not None else c.claim.cutoff.value)
            # a claim's share may be on another basis than its kernels (op_fp32_math ranks on
            # the step): scale what it keeps by the same fraction
            whole = sum(weights.get(u, 0.0) for u in mine) / total
            frac = kept / whole if whole else 0.0
            if kept <= 0 or kept < cut:
                c.held_by, c.how_held = first, "overlap"
                continue
            c.share = c.claim.share * frac
            c.overlap = (top[0], held)
            if c.tier == "top" and c.claim.cutoff is not None \
                    and c.claim.cutoff.mention is not None \
                    and kept < c.claim.cutoff.value:
                c.tier = "consider"  # what it keeps is under its top-issue cut
        for u in mine:
            taken.setdefault(u, c)


def _profiled_weights(todo: list[Case]) -> dict[int | str, float]:
    out: dict[int | str, float] = {}
    for c in todo:
        f = c.claim.facts
        kf = getattr(f, "kernels", f)
        if isinstance(kf, KernelFacts):
            for w in kf.kernels:
                out[w.kernel.name] = max(out.get(w.kernel.name, 0.0), w.weight)
    return out


def _order(todo: list[Case]) -> list[Case]:
    """Claims that others yield to first (a mechanism before the symptom it explains), then
    the larger share."""
    def yields(a: Case, b: Case) -> bool:
        keys = (b.pattern, f"{b.pattern}/{b.claim.form}")
        return any(k in a.about.yields_to for k in keys)

    out: list[Case] = []
    rest = sorted(todo, key=lambda c: -c.claim.share)
    while rest:
        free = [c for c in rest if not any(yields(c, o) for o in rest if o is not c)]
        nxt = free[0] if free else rest[0]  # a cycle: the larger first
        out.append(nxt)
        rest.remove(nxt)
    return out


def _group_key(g: object) -> str:
    assert isinstance(g, OpGroup)
    return group_key(g)

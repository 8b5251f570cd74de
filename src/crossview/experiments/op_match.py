"""Host ops matched across two captures (issue 39 item 1, decision 0850): an op is the same op
when its normalized stack (the frames above it), its normalized name and its recorded input
shapes agree (identity.op_key); ops left unmatched that way are matched by name. Per steady
step: calls and time (the op's own duration, children included) on each side."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from crossview.identity import frame_key
from crossview.views.host.calltree import frames_of

if TYPE_CHECKING:
    from crossview.analysis import Analysis

_OPS = ("WITH w(s, e) AS (VALUES {spans}) SELECT h.node_id, h.name, h.input_dims, count(*),"
        " sum(h.dur_ns) FROM f_ops_with_shapes h JOIN w ON h.start_ns >= w.s"
        " AND h.start_ns < w.e GROUP BY ALL")


@dataclass
class OpDelta:
    op: str  # normalized name
    stack: str  # normalized stack ("" when matched by name)
    shapes: str
    matched_by: str  # stack | name | only_a | only_b
    a_calls: float  # per steady step
    a_ns: int
    b_calls: float
    b_ns: int

    @property
    def delta_ns(self) -> int:
        return self.b_ns - self.a_ns

    def to_dict(self) -> dict[str, object]:
        return {"op": self.op, "stack": self.stack, "shapes": self.shapes,
                "matched_by": self.matched_by, "a_calls_per_step": self.a_calls,
                "a_ns_per_step": self.a_ns, "b_calls_per_step": self.b_calls,
                "b_ns_per_step": self.b_ns, "delta_ns": self.delta_ns}


@dataclass
class OpMatch:
    rows: list[OpDelta]  # every op key, largest |Δ| first
    keys_a: int
    keys_b: int

    def count(self, how: str) -> int:
        return sum(1 for r in self.rows if r.matched_by == how)

    def summary(self) -> str:
        return (f"{self.count('stack')} op keys matched by (stack, name, shapes), "
                f"{self.count('name')} more by name; {self.count('only_a')} only in A, "
                f"{self.count('only_b')} only in B")

    def to_dict(self, top: int) -> dict[str, Any]:
        return {"matching": "ops matched by (normalized stack, normalized name, input shapes),"
                " then by name", "summary": {k: self.count(k) for k in
                                             ("stack", "name", "only_a", "only_b")},
                "rows": [r.to_dict() for r in self.rows[:top]]}


def _paths(r: Analysis) -> dict[int, str]:
    """node_id → the normalized stack above it (its ancestors, outermost first)."""
    assert r.views is not None
    frames = {n: (p, str(name)) for n, (p, name, _kind) in frames_of(r.views.store).info.items()}
    full: dict[int, str] = {}  # node → its path, itself included

    def path(node: int) -> str:
        chain = []
        cur: int | None = node
        while cur is not None and cur in frames and cur not in full:
            chain.append(cur)
            cur = frames[cur][0]
        base = full.get(cur, "") if cur is not None else ""
        for n in reversed(chain):
            here = frame_key(frames[n][1])
            base = full[n] = f"{base} › {here}" if base else here
        return full.get(node, "")

    return {n: path(p) if p is not None else "" for n, (p, _) in frames.items()}


def _side(r: Analysis) -> tuple[dict[tuple[str, str, str], list[float]], int]:
    """Per op key (stack, name, shapes): [calls, ns] per steady step; and the step count."""
    assert r.views is not None
    steps = r.views.steps.steady
    if not steps:
        return {}, 0
    spans = ", ".join(f"({s.start_ns}, {s.end_ns})" for s in steps)
    paths = _paths(r)
    out: dict[tuple[str, str, str], list[float]] = {}
    for node, name, dims, n, t in r.views.store.sql(_OPS.format(spans=spans)).fetchall():
        key = (paths.get(int(node), "") if node is not None else "", frame_key(str(name)),
               str(dims or ""))
        x = out.setdefault(key, [0.0, 0.0])
        x[0] += int(n) / len(steps)
        x[1] += int(t) / len(steps)
    return out, len(steps)


def match(a: Analysis, b: Analysis) -> OpMatch:
    sa, _ = _side(a)
    sb, _ = _side(b)
    rows: list[OpDelta] = []
    for k in sa.keys() & sb.keys():
        rows.append(OpDelta(k[1], k[0], k[2], "stack", sa[k][0], int(sa[k][1]),
                            sb[k][0], int(sb[k][1])))
    left: dict[str, list[list[float]]] = {}
    for side, own, other in ((0, sa, sb), (1, sb, sa)):
        for k, v in own.items():
            if k not in other:
                x = left.setdefault(k[1], [[0.0, 0.0], [0.0, 0.0]])
                x[side][0] += v[0]
                x[side][1] += v[1]
    for name, (va, vb) in left.items():
        how = "name" if va[0] and vb[0] else "only_a" if va[0] else "only_b"
        rows.append(OpDelta(name, "", "", how, va[0], int(va[1]), vb[0], int(vb[1])))
    rows.sort(key=lambda r: (-abs(r.delta_ns), r.op, r.stack, r.shapes, r.matched_by))
    return OpMatch(rows, len(sa), len(sb))

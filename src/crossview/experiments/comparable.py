"""Are the two captures comparable, and did anything change at all (issue 39 item 3, decision
0852)? Each check compares one thing both captures record — the GPU model, the driver's CUDA
version, the kernel set, the kernels' launch configurations, the input shapes of host ops, the
step structure — and says same / differs / unknown (not recorded on a side). The runs are not
comparable when their GPUs differ or their kernels share too little time (knowledge/diff.yaml
`comparable`); other differences are listed as caveats."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from crossview.identity import frame_key
from crossview.knowledge.loader import load_yaml
from crossview.views import run_identity

if TYPE_CHECKING:
    from crossview.analysis import Analysis
    from crossview.experiments.drift import Key

SAME, DIFFERS, UNKNOWN = "same", "differs", "unknown"
_DRIVER = "SELECT DISTINCT driver_cuda FROM input_files WHERE driver_cuda IS NOT NULL"


@dataclass(frozen=True)
class Check:
    what: str
    status: str  # same | differs | unknown
    a: str
    b: str
    detail: str = ""

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


@dataclass
class Comparability:
    checks: list[Check]
    comparable: bool
    why: str
    shared_kernel_share: tuple[float, float]  # A's and B's kernel time in kernel keys of both
    nothing_changed: bool = False
    nothing_changed_why: str = ""
    same_work: bool = False  # same kernel keys, counts, launch configs and op shapes
    notes: list[str] = field(default_factory=list)

    def check(self, what: str) -> Check | None:
        return next((c for c in self.checks if c.what == what), None)

    def to_dict(self) -> dict[str, Any]:
        return {"comparable": self.comparable, "why": self.why,
                "shared_kernel_share": list(self.shared_kernel_share),
                "checks": [c.to_dict() for c in self.checks],
                "same_work": self.same_work, "nothing_changed": self.nothing_changed,
                "nothing_changed_why": self.nothing_changed_why or None}


def rules() -> dict[str, Any]:
    return dict(load_yaml("diff.yaml")["comparable"])


def gpu_names(r: Analysis) -> set[str]:
    """The names of the GPUs that ran the capture's kernels."""
    assert r.views is not None
    return run_identity.gpu_names(r.views.store)


def drivers(r: Analysis) -> set[str]:
    """The CUDA versions the capture's drivers support (1000 × major + 10 × minor)."""
    assert r.views is not None
    return {str(v) for v, in r.views.store.sql(_DRIVER).fetchall()}


def _set_check(what: str, a: set[str], b: set[str], fmt: Any = str) -> Check:
    if not a or not b:
        return Check(what, UNKNOWN, ", ".join(sorted(map(fmt, a))) or "not recorded",
                     ", ".join(sorted(map(fmt, b))) or "not recorded")
    return Check(what, SAME if a == b else DIFFERS, ", ".join(sorted(map(fmt, a))),
                 ", ".join(sorted(map(fmt, b))))


def _cuda(v: str) -> str:
    n = int(v)
    return f"{n // 1000}.{n % 1000 // 10}"


def _shapes(r: Analysis) -> set[tuple[str, str]]:
    assert r.views is not None
    return {(frame_key(n), d) for n, d in run_identity.recorded_shapes(r.views.store)}


def _step_check(a: Analysis, b: Analysis, ka: dict[Key, tuple[int, int]],
                kb: dict[Key, tuple[int, int]]) -> Check:
    assert a.views is not None and b.views is not None
    sa, sb = a.views.steps, b.views.steps
    if not sa.steps or not sb.steps:
        return Check("step structure", UNKNOWN, f"{len(sa.steps)} steps", f"{len(sb.steps)} steps")
    per = [sum(c for c, _ in k.values()) / max(1, len(s.steps)) for k, s in ((ka, sa), (kb, sb))]
    txt = [f"{len(s.steps)} step{'s' * (len(s.steps) != 1)} ({s.source}), {len(s.steady)} "
           f"steady, {p:,.0f} kernels per step" for s, p in zip((sa, sb), per, strict=True)]
    same = sa.source == sb.source and abs(per[0] - per[1]) <= 0.01 * max(per)
    return Check("step structure", SAME if same else DIFFERS, txt[0], txt[1],
                 "" if same else "another step boundary or another amount of work per step")


def assess(a: Analysis, b: Analysis, ka: dict[Key, tuple[int, int]],
           kb: dict[Key, tuple[int, int]]) -> Comparability:
    """The checks; `ka`/`kb`: (count, time) per kernel identity (drift.kernels_by_identity)."""
    cfg = rules()
    checks = [_set_check("GPU model", gpu_names(a), gpu_names(b)),
              _set_check("driver (CUDA version it supports)", drivers(a), drivers(b), _cuda),
              Check("CUDA runtime / framework versions", UNKNOWN, "not recorded",
                    "not recorded", "the store keeps no runtime or framework version: compare "
                    "the environments by hand")]
    names_a, names_b = {k[0] for k in ka}, {k[0] for k in kb}
    ta, tb = sum(t for _, t in ka.values()) or 1, sum(t for _, t in kb.values()) or 1
    both = names_a & names_b
    share = (sum(t for k, (_, t) in ka.items() if k[0] in both) / ta,
             sum(t for k, (_, t) in kb.items() if k[0] in both) / tb)
    checks.append(Check("kernel set", SAME if names_a == names_b else DIFFERS,
                        f"{len(names_a)} kernels", f"{len(names_b)} kernels",
                        f"{len(both)} in both ({share[0]:.0%} of A's kernel time, "
                        f"{share[1]:.0%} of B's); {len(names_a - names_b)} only in A, "
                        f"{len(names_b - names_a)} only in B"))
    cfg_a = {k for k in ka if k[0] in both}
    cfg_b = {k for k in kb if k[0] in both}
    recorded = any(k[1] or k[2] for k in cfg_a | cfg_b)
    moved = {k[0] for k in cfg_a ^ cfg_b}
    checks.append(Check("launch configurations (grid, block)",
                        UNKNOWN if not recorded else SAME if not moved else DIFFERS,
                        "recorded" if recorded else "not recorded",
                        "recorded" if recorded else "not recorded",
                        f"{len(moved)} shared kernels launched with other grid/block" if moved
                        else ""))
    sh_a, sh_b = _shapes(a), _shapes(b)
    checks.append(Check("input shapes (host ops)",
                        UNKNOWN if not sh_a or not sh_b else SAME if sh_a == sh_b else DIFFERS,
                        f"{len(sh_a)} (op, shapes)" if sh_a else "not recorded",
                        f"{len(sh_b)} (op, shapes)" if sh_b else "not recorded",
                        f"{len(sh_a - sh_b)} only in A, {len(sh_b - sh_a)} only in B"
                        if sh_a and sh_b and sh_a != sh_b else ""))
    checks.append(_step_check(a, b, ka, kb))
    c = Comparability(checks, True, "", share)
    hard = [x for x in checks if x.what == "GPU model" and x.status == DIFFERS]
    low = min(share) < cfg["min_shared_kernel_share"]
    if hard or low:
        c.comparable = False
        c.why = "; ".join(
            [f"other GPUs ({hard[0].a} vs {hard[0].b})"] if hard else []) + (
            ("; " if hard and low else "") + (
                f"the kernels both ran hold {share[0]:.0%} / {share[1]:.0%} of each side's "
                f"kernel time (< {cfg['min_shared_kernel_share']:.0%}): different workloads"
                if low else ""))
    else:
        caveats = [x.what for x in checks if x.status == DIFFERS]
        gpu = checks[0]
        c.why = ((f"the same GPU model ({gpu.a})" if gpu.status == SAME else
                  "the GPU model is not recorded on a side") +
                 f"; the kernels both ran hold {share[0]:.0%} of A's kernel time and "
                 f"{share[1]:.0%} of B's" + (f"; differs in: {', '.join(caveats)}"
                                             if caveats else ""))
    c.same_work = (names_a == names_b and all(ka[k][0] == kb.get(k, (0, 0))[0] for k in ka)
                   and set(ka) == set(kb) and sh_a == sh_b)
    return c

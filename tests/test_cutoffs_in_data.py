"""Every cut-off lives in knowledge data, never in detector or synthesis code (issue 21 item 3).

Walks the code's syntax tree (ast) and fails on:
- a numeric literal in a comparison other than 0 / 1 (`share < 0.5`, `len(seqs) >= 3`),
  except slice positions (`argv[:3]`) and a unit factor (`100 * a / b`, `x / 1e9`);
- a module-level constant bound to a number (`MAX_RED = 3`);
- a finding's `share=` given as a number other than 0.
What is left is an explicit allow-list, each entry with why it is not a judgment.
And: every threshold key code reads exists in thresholds.yaml and every key there is read;
every fix key code names exists in fixes.yaml and every key there is named."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import msgspec

from crossview.detectors import declarations
from crossview.knowledge.loader import load_yaml
from crossview.knowledge.thresholds_schema import Thresholds

SRC = Path(__file__).resolve().parents[1] / "src" / "crossview"
SCANNED = sorted([*(SRC / "detectors").glob("*.py"), *(SRC / "synthesis").glob("*.py"),
                  SRC / "sol" / "workload.py"])
TRIVIAL = {0, 1}
UNIT_FACTORS = {100, 1e3, 1e6, 1e9}
# (file relative to src/crossview, constant name or literal value) → why it is not a cut-off
ALLOWED: dict[tuple[str, object], str] = {
    ("detectors/gpu_gap.py", "SHOWN"): "presentation: how many gaps one observation names",
    ("detectors/kernel_common.py", "MAX_NAMED"): "presentation: kernels named per finding",
    ("detectors/low_gpu_util.py", "SHOWN_RUNS"): "presentation: runs of low chunks named",
    ("detectors/kernel_inefficiency.py", 2): "structure: a Q·Kᵀ shape needs its last two dims",
    ("synthesis/ledger_update.py", 100): "domain: a share in % below 100 (1 / (1 − s) is finite)",
}


def _number(n: ast.AST) -> bool:
    return (isinstance(n, ast.Constant) and isinstance(n.value, int | float)
            and not isinstance(n.value, bool))


def _exempt_nodes(tree: ast.AST) -> set[int]:
    """ids of literals that are slice positions or unit factors (not judgments)."""
    out: set[int] = set()
    for n in ast.walk(tree):
        if isinstance(n, ast.Subscript):
            out |= {id(c) for c in ast.walk(n.slice) if _number(c)}
        if isinstance(n, ast.BinOp) and isinstance(n.op, ast.Mult | ast.Div):
            out |= {id(c) for c in (n.left, n.right)
                    if _number(c) and c.value in UNIT_FACTORS}  # type: ignore[attr-defined]
    return out


def cutoffs(text: str, rel: str) -> list[str]:
    """The numeric cut-offs written in code, one `file:line: what` each."""
    tree = ast.parse(text)
    exempt = _exempt_nodes(tree)
    out = []
    for n in ast.walk(tree):
        if isinstance(n, ast.Compare):
            for c in ast.walk(n):
                if (_number(c) and id(c) not in exempt and c.value not in TRIVIAL  # type: ignore[attr-defined]
                        and (rel, c.value) not in ALLOWED):  # type: ignore[attr-defined]
                    out.append(f"{rel}:{n.lineno}: {ast.unparse(n)}")
        if isinstance(n, ast.keyword) and n.arg == "share" and _number(n.value) \
                and n.value.value != 0:  # type: ignore[attr-defined]
            out.append(f"{rel}:{n.value.lineno}: share={ast.unparse(n.value)}")
    for s in tree.body:
        if isinstance(s, ast.Assign | ast.AnnAssign) and s.value is not None and _number(s.value) \
                and s.value.value not in TRIVIAL:  # type: ignore[attr-defined]
            targets = s.targets if isinstance(s, ast.Assign) else [s.target]
            for t in targets:
                if isinstance(t, ast.Name) and (rel, t.id) not in ALLOWED:
                    out.append(f"{rel}:{s.lineno}: {ast.unparse(s)}")
    return out


def test_the_walker_finds_cutoffs_in_a_sample() -> None:
    sample = ("MAX_RED = 3\n"
              "def f(v, seqs, share, x):\n"
              "    if share < 0.5 and len(seqs) >= 3 and v.argv[:3] == x:\n"
              "        return g(share=0.05, other=100 * x / 1e9 >= v.limits.cut)\n")
    got = cutoffs(sample, "detectors/sample.py")
    assert got == ["detectors/sample.py:3: share < 0.5", "detectors/sample.py:3: len(seqs) >= 3",
                   "detectors/sample.py:4: share=0.05", "detectors/sample.py:1: MAX_RED = 3"], got


def test_no_numeric_cutoff_in_detector_or_synthesis_code() -> None:
    found = [c for p in SCANNED for c in cutoffs(p.read_text(encoding="utf-8"),
                                                   p.relative_to(SRC).as_posix())]
    assert not found, "cut-offs belong in knowledge/*.yaml:\n" + "\n".join(found)
    # the allow-list holds nothing stale
    for (rel, what), why in ALLOWED.items():
        text = (SRC / rel).read_text(encoding="utf-8")
        assert (f"{what} = " in text if isinstance(what, str) else f" {what}" in text), (rel, why)


def _reads_limits(n: ast.Attribute) -> bool:
    v = n.value
    return ((isinstance(v, ast.Name) and v.id in ("lim", "limits"))
            or (isinstance(v, ast.Attribute) and v.attr == "limits")
            or (isinstance(v, ast.Call) and isinstance(v.func, ast.Attribute)
                and v.func.attr == "defaults" and isinstance(v.func.value, ast.Name)
                and v.func.value.id == "thresholds"))


def _trees() -> dict[Path, ast.AST]:
    return {p: ast.parse(p.read_text(encoding="utf-8")) for p in SRC.rglob("*.py")}


def test_every_threshold_key_read_exists_and_every_key_is_read() -> None:
    keys = {f.name for f in msgspec.structs.fields(Thresholds)}
    assert keys == set(load_yaml("thresholds.yaml")), "thresholds.yaml ≠ its schema"
    read: dict[str, set[str]] = {}
    attrs: set[str] = set()
    for p, tree in _trees().items():
        for n in ast.walk(tree):
            if isinstance(n, ast.Attribute):
                attrs.add(n.attr)
                # `lim.max` of a power-limit gauge (render/metrics_md.py) is not a threshold
                if _reads_limits(n) and not (p.name == "metrics_md.py" and n.attr == "max"):
                    read.setdefault(n.attr, set()).add(p.relative_to(SRC).as_posix())
    missing = {k: sorted(w) for k, w in read.items() if k not in keys}
    assert not missing, f"read in code, not in thresholds.yaml: {missing}"
    unused = sorted(k for k in keys if k not in attrs)
    assert not unused, f"in thresholds.yaml, read nowhere: {unused}"


def test_each_detector_declares_the_thresholds_its_module_reads() -> None:
    for d in declarations():
        mod = sys.modules[d.detect.__module__]
        tree = ast.parse(Path(str(mod.__file__)).read_text(encoding="utf-8"))
        used = {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)
                and _reads_limits(n)}
        assert used <= set(d.thresholds), (mod.__name__, sorted(used - set(d.thresholds)))


def test_every_fix_key_named_exists_and_every_fix_key_is_named() -> None:
    fixes = load_yaml("fixes.yaml")
    declared = {k for d in declarations() for k in d.fix_keys}
    strings: set[str] = set()
    for _p, tree in _trees().items():
        consts = {t.id: s.value.value for s in tree.body if isinstance(s, ast.Assign)  # type: ignore[attr-defined]
                  and isinstance(s.value, ast.Constant) and isinstance(s.value.value, str)
                  for t in s.targets if isinstance(t, ast.Name)}
        for n in ast.walk(tree):
            if isinstance(n, ast.Constant) and isinstance(n.value, str):
                strings.add(n.value)
            # fix_for("key", …) and a claim's FixPart(key="key", …) (core/claim.py)
            name = getattr(n.func, "id", getattr(n.func, "attr", None)) \
                if isinstance(n, ast.Call) else None
            if name in ("fix_for", "FixPart"):
                assert isinstance(n, ast.Call)
                a = n.args[0] if n.args else next(
                    (k.value for k in n.keywords if k.arg == "key"), None)
                key = a.value if isinstance(a, ast.Constant) else (
                    consts.get(a.id) if isinstance(a, ast.Name) else None)
                if key is not None:  # a computed key must be in its detector's declaration
                    assert key in fixes, f"{name}({key!r}) in {_p.name}: not in fixes.yaml"
    assert declared <= set(fixes), sorted(declared - set(fixes))
    unnamed = sorted(k for k in fixes if k not in strings and k not in declared)
    assert not unnamed, f"fixes.yaml keys no code names: {unnamed}"

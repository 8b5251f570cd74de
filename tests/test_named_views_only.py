"""Code reads the store through names (issue 41, decision 0905): outside `store/` (the tables
and their standard library of named views), `views/` (the views' own package), `scope/` (the
filter: it defines the slices the filtered forms read) and `sources/` (the readers, which write
the tables), no module's SQL text reads a raw table or the filter's
slices (`f_gpu`, `f_host`, `f_samples`) — it reads a named view (`kernels`, `f_kernels`, …)
or asks a `views/` function; and a detector never opens the store (no `crossview.store`
import, no `.store` attribute, no SQL of its own).

SQL text is every string literal of a module (f-strings by their literal parts); a relation
is read where `FROM`, `JOIN`, `INTO`, `UPDATE` or `TABLE` precedes its name."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from crossview.store.schema import TABLES

SRC = Path(__file__).resolve().parents[1] / "src" / "crossview"
EXEMPT = ("store", "views", "sources", "scope")
SLICES = ("f_gpu", "f_host", "f_samples")
_READS = re.compile(r"\b(?:FROM|JOIN|INTO|UPDATE|TABLE)\s+(\w+)", re.I)



def _strings(tree: ast.AST) -> list[str]:
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            out.append(node.value)
    return out


def raw_reads(path: Path) -> list[str]:
    tree = ast.parse(path.read_text("utf-8"))
    names = set(TABLES) | set(SLICES)
    return [m for s in _strings(tree) for m in _READS.findall(s) if m in names]


def _modules() -> list[Path]:
    return [p for p in sorted(SRC.rglob("*.py"))
            if p.relative_to(SRC).parts[0] not in EXEMPT]


def test_no_sql_over_raw_tables_outside_store_and_views() -> None:
    found = {str(p.relative_to(SRC)): r for p in _modules() if (r := raw_reads(p))}
    assert not found, f"SQL over raw tables or slices outside store/ and views/: {found}"


def test_detectors_never_open_the_store() -> None:
    bad = []
    for p in sorted((SRC / "detectors").rglob("*.py")):
        tree = ast.parse(p.read_text("utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(
                    "crossview.store"):
                bad.append(f"{p.name}:{node.lineno} imports {node.module}")
            elif isinstance(node, ast.Import) and any(
                    a.name.startswith("crossview.store") for a in node.names):
                bad.append(f"{p.name}:{node.lineno} imports crossview.store")
            elif isinstance(node, ast.Attribute) and node.attr in ("store", "sql", "execute"):
                bad.append(f"{p.name}:{node.lineno} .{node.attr}")
    assert not bad, "a detector reads views' typed results, never the store: " + "; ".join(bad)


def test_the_check_sees_a_raw_read(tmp_path: Path) -> None:
    f = tmp_path / "m.py"
    f.write_text('Q = f"SELECT count(*) FROM gpu_ops g JOIN f_host h ON {x}"\n'
                 'OK = "SELECT * FROM f_kernels"\n', "utf-8")
    assert raw_reads(f) == ["gpu_ops", "f_host"]

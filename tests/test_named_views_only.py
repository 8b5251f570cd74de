"""Code reads the store through names (issue 41, decision 0905): outside `store/` (the tables
and their standard library of named views), `views/` (the views' own package), `scope/` (the
filter: it defines the slices the filtered forms read) and `sources/` (the readers, which write
the tables), no module's SQL text reads a raw table or the filter's
slices (`f_gpu`, `f_host`, `f_samples`) — it reads a named view (`kernels`, `f_kernels`, …)
or asks a `views/` function; and a detector never opens the store (no `crossview.store`
import, no `.store` attribute, no SQL of its own).

SQL text is every string literal of a module (f-strings by their literal parts); a relation
is read where `FROM`, `JOIN`, `INTO`, `UPDATE` or `TABLE` precedes its name. Modules still
being moved are listed in PENDING with their count, so the list can only shrink: a listed
module that is clean, or one that reads more than listed, fails."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from crossview.store.schema import TABLES

SRC = Path(__file__).resolve().parents[1] / "src" / "crossview"
EXEMPT = ("store", "views", "sources", "scope")
SLICES = ("f_gpu", "f_host", "f_samples")
_READS = re.compile(r"\b(?:FROM|JOIN|INTO|UPDATE|TABLE)\s+(\w+)", re.I)

# module (relative to src/crossview) -> raw reads it still makes; shrink to {} (issue 41)
PENDING: dict[str, int] = {
    "detectors/common.py": 2,
    "detectors/host_python.py": 5,
    "detectors/kernel_common.py": 3,
    "detectors/launch_bound.py": 2,
    "detectors/launch_config.py": 2,
    "detectors/layout_conversions.py": 2,
    "detectors/pageable_memcpy.py": 2,
    "experiments/ab.py": 4,
    "experiments/account_diff.py": 1,
    "experiments/comparable.py": 5,
    "experiments/diff.py": 1,
    "experiments/drift.py": 3,
    "experiments/op_match.py": 3,
    "knowledge/frames.py": 1,
    "replay/graph.py": 2,
    "replay/graph_gpu.py": 1,
    "replay/graph_host.py": 1,
    "replay/rank_whatif.py": 1,
    "replay/steps.py": 1,
    "replay/whatif.py": 8,
    "synthesis/bundle_context.py": 10,
    "synthesis/contradictions.py": 1,
    "synthesis/inventory.py": 10,
    "synthesis/reconcile.py": 5,
    "synthesis/trace_window.py": 2,
    "verdict/fixes.py": 1,
    "verdict/owners.py": 3,
    "verdict/replayed.py": 2,
}

# detector files that still open the store; shrink to {} (issue 41)
PENDING_DETECTORS: set[str] = {
    "carry_in.py",
    "common.py",
    "dataloader.py",
    "gpu_gap.py",
    "graph_unrecorded.py",
    "host_op_cost.py",
    "host_python.py",
    "kernel_common.py",
    "launch_bound.py",
    "launch_config.py",
    "launch_lag.py",
    "layout_conversions.py",
    "low_gpu_util.py",
    "pageable_memcpy.py",
    "sync_bound.py",
    "sync_copy.py",
    "sync_memcpy.py",
    "sync_memset.py",
}


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
    found = {str(p.relative_to(SRC)): len(r) for p in _modules() if (r := raw_reads(p))}
    new = {m: n for m, n in found.items() if n > PENDING.get(m, 0)}
    assert not new, f"SQL over raw tables or f_gpu/f_host outside store/ and views/: {new}"
    done = sorted(m for m in PENDING if m not in found)
    assert not done, f"clean now: take them off PENDING: {done}"


def test_detectors_never_open_the_store() -> None:
    bad = []
    clean = []
    for p in sorted((SRC / "detectors").rglob("*.py")):
        before = len(bad)
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
        if p.name in PENDING_DETECTORS:
            if len(bad) == before:
                clean.append(p.name)
            del bad[before:]
    assert not clean, f"clean now: take them off PENDING_DETECTORS: {clean}"
    assert not bad, "a detector reads views' typed results, never the store: " + "; ".join(bad)


def test_the_check_sees_a_raw_read(tmp_path: Path) -> None:
    f = tmp_path / "m.py"
    f.write_text('Q = f"SELECT count(*) FROM gpu_ops g JOIN f_host h ON {x}"\n'
                 'OK = "SELECT * FROM f_kernels"\n', "utf-8")
    assert raw_reads(f) == ["gpu_ops", "f_host"]
